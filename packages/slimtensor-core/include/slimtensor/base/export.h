// slimtensor/base/export.h: the visibility macro for the public C++ API of libslimtensor.
#pragma once

#if defined(_WIN32)
#  if defined(SLIMTENSOR_BUILDING_LIBRARY)
#    define SLIMTENSOR_API __declspec(dllexport)
#  else
#    define SLIMTENSOR_API __declspec(dllimport)
#  endif
#else
#  define SLIMTENSOR_API __attribute__((visibility("default")))
#endif
