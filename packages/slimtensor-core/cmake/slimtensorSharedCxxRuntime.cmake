# slimtensor_require_shared_cxx_runtime(<package>): stop the configure step when the C++ compiler would link
# its C++ runtime statically into every shared object.
#
# Note [One C++ runtime per process]
# libslimtensor, the Python modules and the plugins are separate shared objects that share C++ objects across
# their boundaries (exceptions thrown in the core and caught in _C, iostreams, locales). That is sound only when
# all of them use the one shared libstdc++ of the process. A GCC built without a shared libstdc++ (seen on the
# GPU machine: /opt/gcc/bin/g++ as $CXX) silently links a private static copy into each object instead; the
# first exception or ostringstream that meets two copies then crashes the process (SIGSEGV), far from the cause.
# `-print-file-name=libstdc++.so` answers with a full path only when the compiler has the shared runtime.
# Included by the core's CMakeLists and, through slimtensorConfig.cmake, by every plugin that finds the core.
function(slimtensor_require_shared_cxx_runtime package)
  if (APPLE OR WIN32 OR NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    return()  # libc++ and MSVC runtimes are not at issue here; clang with libstdc++ links it as g++ does
  endif()
  set(_st_compilers "${CMAKE_CXX_COMPILER}")
  if (CMAKE_CUDA_HOST_COMPILER)
    list(APPEND _st_compilers "${CMAKE_CUDA_HOST_COMPILER}")  # nvcc links the CUDA targets with it
  endif()
  foreach (_st_cxx IN LISTS _st_compilers)
    execute_process(COMMAND "${_st_cxx}" -print-file-name=libstdc++.so
      OUTPUT_VARIABLE _st_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if (NOT IS_ABSOLUTE "${_st_libstdcxx}")
      message(FATAL_ERROR
        "${package}: the C++ compiler ${_st_cxx} has no shared libstdc++ (it answers "
        "'-print-file-name=libstdc++.so' with '${_st_libstdcxx}'), so it would link a private static copy of the "
        "C++ runtime into each of slimtensor's libraries, and exceptions crossing them would crash the process "
        "(Note [One C++ runtime per process]). Build with a compiler that has it, e.g. "
        "CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++ pip install ...")
    endif()
  endforeach()
endfunction()
