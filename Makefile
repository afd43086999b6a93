# hearth front door. `make run` and `make test` do everything on a fresh Debian 12.
JOBS ?= 2
BUILD ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=

.PHONY: all deps build run test asan bench format clean crash-test fuzz

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

run: deps build
	bash scripts/run-default.sh

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  HEARTH_ASAN=1 ctest --output-on-failure -j$(JOBS) --timeout 1800

bench: deps build
	bash scripts/bench.sh

crash-test: deps build
	HEARTH_CRASH_KILLS=5000 $(BUILD)/tests/test_cache --gtest_filter='*CrashTest*'

# libFuzzer on the GGUF reader for FUZZ_SECONDS (default 60), seeded with the small
# shared .gguf files; crashes are written to build-fuzz/crashes/.
FUZZ_SECONDS ?= 60
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DHEARTH_BUILD_FUZZ=ON -DHEARTH_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target gguf_fuzz
	bash scripts/fuzz-gguf.sh build-fuzz/fuzz/gguf_fuzz $(FUZZ_SECONDS)

format:
	find include src tests bench fuzz -name '*.h' -o -name '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan build-fuzz
