# ctest install_embed: installs this build into a fresh prefix, checks that none of the
# project's private build flags leaked into the package, then configures and builds
# examples/embed against it with find_package(hearth) and runs it on a model (it exits
# 0 only when the second identical request hit the cache).
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DMODEL=... -P install_embed.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR MODEL)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_embed.cmake: -D${var}= is required")
  endif()
endforeach()
if(NOT EXISTS "${MODEL}")
  message(FATAL_ERROR "install_embed.cmake: model ${MODEL} is absent")
endif()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")

# Private to the project: warnings-as-errors, -march=native, sanitizers, src/ headers.
file(GLOB exported "${prefix}/lib*/cmake/hearth/*.cmake" "${prefix}/lib*/pkgconfig/hearth.pc")
if(NOT exported)
  message(FATAL_ERROR "no hearthConfig.cmake / hearth.pc under ${prefix}")
endif()
foreach(f IN LISTS exported)
  file(READ "${f}" text)
  foreach(private "-Werror" "-march=" "-fsanitize" "${SOURCE_DIR}/src" "hearth_flags")
    string(FIND "${text}" "${private}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${f} exports the private '${private}'")
    endif()
  endforeach()
endforeach()
# The public headers, grouped by subsystem; the cache's file formats stay private.
foreach(header cache/cache.h runtime/runtime.h runtime/backend.h engine/engine.h gguf/gguf.h
        server/server.h status.h)
  if(NOT EXISTS "${prefix}/include/hearth/${header}")
    message(FATAL_ERROR "public header hearth/${header} not installed under ${prefix}/include")
  endif()
endforeach()
file(GLOB_RECURSE installed RELATIVE "${prefix}/include" "${prefix}/include/*")
foreach(header IN LISTS installed)
  if(header MATCHES "kvc|crc32c")
    message(FATAL_ERROR "the private format header ${header} was installed")
  endif()
endforeach()

# A sanitizer build (`make asan` / `make tsan`) installs instrumented archives: like any
# consumer of those, the example then links the sanitizer's runtime (CONSUMER_LINK_FLAGS);
# the package itself still exports no -fsanitize (checked above).
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/examples/embed" -B "${WORK_DIR}/build"
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=${prefix}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/embed" "${MODEL}")

# pkg-config finds the package from the relocated prefix too.
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  file(GLOB pcdir "${prefix}/lib*/pkgconfig")
  set(ENV{PKG_CONFIG_PATH} "${pcdir}")
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs hearth RESULT_VARIABLE rc
                  OUTPUT_VARIABLE flags ERROR_VARIABLE flags)
  string(FIND "${flags}" "-lhearth_runtime" at)
  if(NOT rc EQUAL 0 OR at EQUAL -1)
    message(FATAL_ERROR "pkg-config hearth: ${flags}")
  endif()
endif()
