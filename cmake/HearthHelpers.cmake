# Shared build conventions. Each subsystem is one static library whose sources
# are globbed from src/<name>/ (recursively), so adding a file needs no edit here.

include(GNUInstallDirs)

function(hearth_find_dependencies)
  find_package(Threads REQUIRED)
  find_package(OpenSSL REQUIRED)           # SHA-256 (libcrypto)
  find_package(nlohmann_json 3.10 REQUIRED) # JSON for CLI output and the HTTP API
  find_package(CLI11 REQUIRED)              # command-line parsing
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(TOMLPP REQUIRED IMPORTED_TARGET GLOBAL tomlplusplus)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET GLOBAL cpp-httplib)
  pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET GLOBAL hiredis)
  if(HEARTH_BUILD_TESTS)
    find_package(GTest REQUIRED)
    find_package(rapidcheck REQUIRED)
    # libsentencepiece is the tokenizer cross-check's oracle: required, so the check can
    # never silently drop out (scripts/install-deps.sh installs it).
    pkg_check_modules(SENTENCEPIECE REQUIRED IMPORTED_TARGET GLOBAL sentencepiece)
  endif()
  find_package(benchmark QUIET)  # targets are global: bench/ tests for benchmark::benchmark
endfunction()

# Flags for hearth's own targets only: linked PRIVATE (and only in the build tree), so
# neither -Werror, -march=native, the sanitizers nor the private src/ include path
# reach a program built against the installed package.
add_library(hearth_flags INTERFACE)
target_compile_options(hearth_flags INTERFACE -Wall -Wextra -Werror
                       $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow>)
target_include_directories(hearth_flags INTERFACE ${PROJECT_SOURCE_DIR}/include
                                                  ${PROJECT_SOURCE_DIR}/src)
if(HEARTH_NATIVE)
  target_compile_options(hearth_flags INTERFACE -march=native)
endif()
# The sanitizer a build links (empty: none): hearth's own targets, and a program built
# against a sanitizer build's installed archives (tests/install_embed.cmake).
set(HEARTH_SANITIZER_LINK_FLAGS "")
if(HEARTH_SANITIZE)
  list(APPEND HEARTH_SANITIZER_LINK_FLAGS -fsanitize=address,undefined)
  target_compile_options(hearth_flags INTERFACE -fsanitize=address,undefined
                         -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
endif()
if(HEARTH_TSAN)
  list(APPEND HEARTH_SANITIZER_LINK_FLAGS -fsanitize=thread)
  # GCC 12's -Wmaybe-uninitialized misfires on the AVX2 panel kernels under TSan's
  # instrumentation (arrays filled by intrinsics in a loop); the release build keeps it.
  target_compile_options(hearth_flags INTERFACE -fsanitize=thread -fno-omit-frame-pointer
                         $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)
endif()
target_link_options(hearth_flags INTERFACE ${HEARTH_SANITIZER_LINK_FLAGS})
target_link_libraries(hearth_flags INTERFACE Threads::Threads)

# hearth_add_library(<name> [DEPS ...]) builds src/<name>/**/*.cpp as hearth_<name>,
# exported and installed as hearth::<name>.
function(hearth_add_library name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.cpp
       ${CMAKE_CURRENT_SOURCE_DIR}/${name}/*.c)
  if(NOT srcs)
    # Not written yet: an empty interface library keeps the dependency graph valid.
    add_library(hearth_${name} INTERFACE)
    target_link_libraries(hearth_${name} INTERFACE ${ARG_DEPS})
  else()
    add_library(hearth_${name} STATIC ${srcs})
    target_link_libraries(hearth_${name} PUBLIC ${ARG_DEPS} Threads::Threads
                          PRIVATE $<BUILD_INTERFACE:hearth_flags>)
  endif()
  add_library(hearth::${name} ALIAS hearth_${name})
  set_target_properties(hearth_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(hearth_${name} INTERFACE
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS hearth_${name} EXPORT hearthTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endfunction()

# hearth_install_package() installs the public headers, the exported targets with
# hearthConfig.cmake (find_package(hearth)) and hearth.pc (pkg-config).
function(hearth_install_package)
  include(CMakePackageConfigHelpers)
  set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hearth)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hearth
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT hearthTargets NAMESPACE hearth:: DESTINATION ${cmake_dir})
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hearthConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/hearthConfig.cmake
                                INSTALL_DESTINATION ${cmake_dir})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/hearthConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/hearthConfig.cmake
                ${PROJECT_BINARY_DIR}/hearthConfigVersion.cmake
          DESTINATION ${cmake_dir})
  file(RELATIVE_PATH HEARTH_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
       ${CMAKE_INSTALL_PREFIX})
  # A CUDA build's engine needs the kernels' library and the static CUDA runtime.
  set(HEARTH_PC_CUDA_LIBS "")
  if(HEARTH_CUDA)
    set(HEARTH_PC_CUDA_LIBS "-lhearth_cuda -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt ")
  endif()
  configure_file(${PROJECT_SOURCE_DIR}/cmake/hearth.pc.in ${PROJECT_BINARY_DIR}/hearth.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/hearth.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endfunction()

# Test code is glue around the libraries, which keep their -O3: compiled at -O1 in
# optimized builds, the test files build in about 0.6-0.75x the time (a test file is
# gtest, nlohmann/json or CLI11 templates, instantiated and optimized per file), which
# is half of a clean build on two cores (docs/architecture.md, "Build time").
function(hearth_test_opt target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:-O1>)
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
  hearth_test_opt(test_${name})
  target_compile_definitions(test_${name} PRIVATE
    HEARTH_SHARED_DIR="${HEARTH_SHARED_DIR}"
    HEARTH_CLI_PATH="$<TARGET_FILE:hearth>")
  # PRE_TEST: tests are listed when ctest runs, so a case file dropped into
  # ../shared/reference (globbed at run time) is picked up without a rebuild.
  gtest_discover_tests(test_${name} DISCOVERY_TIMEOUT 60 DISCOVERY_MODE PRE_TEST
                       PROPERTIES LABELS ${name} TIMEOUT 900)
endfunction()
