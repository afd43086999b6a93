# Shared build conventions. Each subsystem is one static library whose sources
# are globbed from src/<name>/ (recursively), so adding a file needs no edit here.

function(hearth_find_dependencies)
  find_package(Threads REQUIRED)
  find_package(OpenSSL REQUIRED)           # SHA-256 (libcrypto)
  find_package(nlohmann_json 3.10 REQUIRED) # JSON for CLI output and the HTTP API
  find_package(CLI11 REQUIRED)              # command-line parsing
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET GLOBAL tomlplusplus)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
  if(HEARTH_BUILD_TESTS)
    find_package(GTest REQUIRED)
    find_package(rapidcheck REQUIRED)
    # libsentencepiece is the tokenizer cross-check's oracle: required, so the check can
    # never silently drop out (scripts/install-deps.sh installs it).
    pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET GLOBAL sentencepiece)
  endif()
  find_package(benchmark QUIET)  # targets are global: bench/ tests for benchmark::benchmark
endfunction()

# Flags every hearth target gets.
add_library(hearth_flags INTERFACE)
target_compile_options(hearth_flags INTERFACE -Wall -Wextra -Werror
                       $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow>)
target_include_directories(hearth_flags INTERFACE ${CMAKE_SOURCE_DIR}/include
                                                  ${CMAKE_SOURCE_DIR}/src)
if(HEARTH_NATIVE)
  target_compile_options(hearth_flags INTERFACE -march=native)
endif()
if(HEARTH_SANITIZE)
  target_compile_options(hearth_flags INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(hearth_flags INTERFACE -fsanitize=address,undefined)
endif()
if(HEARTH_TSAN)
  # GCC 12's -Wmaybe-uninitialized misfires on the AVX2 panel kernels under TSan's
  # instrumentation (arrays filled by intrinsics in a loop); the release build keeps it.
  target_compile_options(hearth_flags INTERFACE -fsanitize=thread -fno-omit-frame-pointer
                         $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
  target_link_options(hearth_flags INTERFACE -fsanitize=thread)
endif()
target_link_libraries(hearth_flags INTERFACE Threads::Threads)

# hearth_add_library(<name> [DEPS ...]) builds src/<name>/**/*.cpp as hearth_<name>.
function(hearth_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp
       ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.c)
  if(NOT srcs)
    # Not written yet: an empty interface library keeps the dependency graph valid.
    add_library(hearth_${name} INTERFACE)
    target_link_libraries(hearth_${name} INTERFACE hearth_flags ${ARG_DEPS})
    return()
  endif()
  add_library(hearth_${name} STATIC ${srcs})
  target_link_libraries(hearth_${name} PUBLIC hearth_flags ${ARG_DEPS})
endfunction()

# hearth_add_test_dir(<name> [DEPS ...]) builds tests/<name>/**/*_test.cpp into one
# GoogleTest binary test_<name>, registered test-by-test with ctest.
function(hearth_add_test_dir name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*_test.cpp)
  if(NOT srcs)
    return()
  endif()
  file(GLOB_RECURSE support CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/support/*.cpp)
  add_executable(test_${name} ${srcs} ${support})
  target_link_libraries(test_${name} PRIVATE hearth_flags ${ARG_DEPS} GTest::gtest
                        GTest::gtest_main GTest::gmock rapidcheck)
  target_include_directories(test_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(test_${name} PRIVATE
    HEARTH_SHARED_DIR="${HEARTH_SHARED_DIR}"
    HEARTH_CLI_PATH="$<TARGET_FILE:hearth>")
  # PRE_TEST: tests are listed when ctest runs, so a case file dropped into
  # ../shared/reference (globbed at run time) is picked up without a rebuild.
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS ${name} TIMEOUT 900)
endfunction()
