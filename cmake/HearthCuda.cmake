# The CUDA backend's host compiler. nvcc checks the host compiler's version: CUDA 11.x
# takes GCC up to 11, and Debian 12's g++ is 12. Debian's own nvcc 11.8
# (nvidia-cuda-toolkit, non-free) finds g++-11 through its g++ wrapper in
# /usr/lib/nvidia-cuda-toolkit/bin; passing it as -ccbin explicitly makes the choice
# visible and works for any nvcc 11 (e.g. NVIDIA's installer in /usr/local/cuda).
# scripts/install-deps.sh installs g++-11 beside such an nvcc when HEARTH_CUDA=1.
# Called before enable_language(CUDA); leaves a CMAKE_CUDA_HOST_COMPILER given by the user.
function(hearth_cuda_host_compiler)
  if(CMAKE_CUDA_HOST_COMPILER)
    return()
  endif()
  set(nvcc "${CMAKE_CUDA_COMPILER}")
  if(NOT nvcc AND DEFINED ENV{CUDACXX})
    set(nvcc "$ENV{CUDACXX}")
  endif()
  if(NOT nvcc)
    find_program(HEARTH_NVCC nvcc)
    set(nvcc "${HEARTH_NVCC}")
  endif()
  if(NOT nvcc)
    return()  # enable_language(CUDA) says that no CUDA compiler was found
  endif()
  execute_process(COMMAND "${nvcc}" --version OUTPUT_VARIABLE out ERROR_QUIET)
  if(NOT out MATCHES "release ([0-9]+)\\.([0-9]+)")
    return()
  endif()
  set(cuda_version "${CMAKE_MATCH_1}.${CMAKE_MATCH_2}")
  if(CMAKE_MATCH_1 GREATER_EQUAL 12 OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU"
     OR CMAKE_CXX_COMPILER_VERSION VERSION_LESS 12)
    return()
  endif()
  find_program(HEARTH_GXX11 NAMES g++-11)
  if(NOT HEARTH_GXX11)
    message(FATAL_ERROR
      "nvcc ${cuda_version} (${nvcc}) takes GCC <= 11 as its host compiler and g++ is "
      "${CMAKE_CXX_COMPILER_VERSION}: install g++-11 (HEARTH_CUDA=1 scripts/install-deps.sh "
      "does) or pass -DCMAKE_CUDA_HOST_COMPILER=<a compiler nvcc ${cuda_version} accepts>")
  endif()
  set(CMAKE_CUDA_HOST_COMPILER "${HEARTH_GXX11}" CACHE FILEPATH
      "Host compiler of nvcc (-ccbin): g++-11 for an nvcc before CUDA 12" FORCE)
  message(STATUS "hearth: nvcc ${cuda_version} takes GCC <= 11: host compiler ${HEARTH_GXX11}")
endfunction()
