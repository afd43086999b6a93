# hearth front door. `make run` and `make test` do everything on a fresh Debian 12.
JOBS ?= 2
BUILD ?= build
BUILD_TYPE ?= Release
CMAKE_FLAGS ?=
# HEARTH_CUDA=1: install NVIDIA's toolkit (scripts/install-deps.sh) and build the CUDA
# backend too (docs/gpu.md); its tests skip where no GPU is present.
HEARTH_CUDA ?=
ifeq ($(HEARTH_CUDA),1)
CMAKE_FLAGS += -DHEARTH_CUDA=ON
export HEARTH_CUDA
# A build tree configured earlier without CUDA is switched to it (the cache keeps it on).
CUDA_RECONFIGURE = grep -q '^HEARTH_CUDA:BOOL=ON' $(BUILD)/CMakeCache.txt || \
	cmake -S . -B $(BUILD) -DHEARTH_CUDA=ON
endif

.PHONY: all deps build run test asan tsan bench format clean crash-test fuzz screenshots

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	$(CUDA_RECONFIGURE)
	cmake --build $(BUILD) -j$(JOBS)

# `make run` builds only what it runs (the hearth binary, not the tests), quietly: the
# configure and compiler output go to $(BUILD)/make-run.log, shown only on a failure.
RUN_LOG = $(BUILD)/make-run.log
run: deps
	@mkdir -p $(BUILD)
	@echo "make run: building hearth (log: $(RUN_LOG))"
	@{ test -f $(BUILD)/CMakeCache.txt || \
	   cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS); } > $(RUN_LOG) 2>&1 && \
	 { $(or $(CUDA_RECONFIGURE),true); } >> $(RUN_LOG) 2>&1 && \
	 cmake --build $(BUILD) -j$(JOBS) --target hearth >> $(RUN_LOG) 2>&1 || \
	 { tail -n 40 $(RUN_LOG); echo "make run: the build failed (full log: $(RUN_LOG))"; exit 1; }
	@HEARTH_BIN=$(BUILD)/hearth bash scripts/run-default.sh

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) --timeout 900

# The web UI's screenshots in docs/img/, taken by its browser test (chromium).
screenshots: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target hearth test_server
	cd $(BUILD)/tests && HEARTH_SCREENSHOT_DIR=$(CURDIR)/docs/img ./test_server \
	  --gtest_filter='WebUiBrowser.*'

# AddressSanitizer + UBSan over every test. Debug keeps the asserts; -O1 (as the
# sanitizers' docs advise) keeps the engine's kernel-heavy tests practical on two cores.
asan: deps
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHEARTH_SANITIZE=ON \
	  -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" -DCMAKE_C_FLAGS_DEBUG="-g -O1" $(CMAKE_FLAGS)
	cmake --build build-asan -j$(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  HEARTH_ASAN=1 ctest --output-on-failure -j$(JOBS) --timeout 1800

bench: deps build
	bash scripts/bench.sh

crash-test: deps build
	HEARTH_CRASH_KILLS=5000 $(BUILD)/tests/test_cache --gtest_filter='*CrashTest*'
	HEARTH_SERVE_KILLS=500 $(BUILD)/tests/test_server --gtest_filter='ServeCrash.*'

# libFuzzer on every parser of outside input (GGUF files, KVC rows, HTTP request
# bodies, the TOML config, raw bytes on a connection to the live server), FUZZ_SECONDS each (default 60), on seeded corpora;
# crashes are written to build-fuzz/crashes/<target>/ and fail the run.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = gguf_fuzz kvc_fuzz request_fuzz config_fuzz http_fuzz jinja_fuzz grammar_fuzz
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DHEARTH_BUILD_FUZZ=ON -DHEARTH_BUILD_TESTS=OFF $(CMAKE_FLAGS)
	cmake --build build-fuzz -j$(JOBS) --target $(FUZZ_TARGETS)
	bash scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

# ThreadSanitizer over the concurrent subsystems: the cache, runtime and server tests
# (the engine's kernels are data-parallel loops over disjoint rows; their long suite
# would take hours under TSan on two cores).
tsan: deps
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHEARTH_TSAN=ON $(CMAKE_FLAGS)
	cmake --build build-tsan -j$(JOBS) --target test_cache test_runtime test_server hearth
	cd build-tsan && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
	  HEARTH_SKIP_NODE_TESTS=1 HEARTH_TSAN=1 ctest --output-on-failure -j$(JOBS) \
	  -L "cache|runtime|server" --timeout 1800

format:
	find include src tests bench fuzz -name '*.h' -o -name '*.cpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
