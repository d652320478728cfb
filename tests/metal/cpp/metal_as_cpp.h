// metal_as_cpp.h: lets the Linux tests compile metal_kernels.metal as C++ (a test double of the GPU compiler).
#pragma once

#include <cstdint>
#include <cstring>

typedef unsigned char uchar;
typedef unsigned short ushort;
typedef unsigned int uint;
typedef unsigned long ulong;
static_assert(sizeof(long) == 8, "the kernels assume Metal's 64-bit long");

#define ST_KERNEL
#define ST_DEVICE
#define ST_CONSTANT
#define ST_BUFFER(i)
#define ST_GID
#define ST_GRID
#define ST_CLZ64(x) ((x) == 0 ? 64 : __builtin_clzl((unsigned long)(x)))
#define ST_CLZ32(x) ((x) == 0 ? 32 : __builtin_clz((unsigned)(x)))
