// element_ops.cuh: element storage types, vectors and the element operations of the copy kernels.
#pragma once

#include <stdint.h>

#include "kernels/convert.cuh"

namespace slimtensor_cuda {
namespace kernels {

struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};
template <int N>
struct StorageOf;
template <>
struct StorageOf<1> {
  using type = uint8_t;
};
template <>
struct StorageOf<2> {
  using type = uint16_t;
};
template <>
struct StorageOf<4> {
  using type = uint32_t;
};
template <>
struct StorageOf<8> {
  using type = uint64_t;
};
template <>
struct StorageOf<16> {
  using type = Bytes16;
};

// N elements of T moved as one (or, past 16 bytes, several) 16-byte-or-narrower access(es).
template <class T, int N>
struct alignas(sizeof(T) * N < 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// An element operation: read(src, element offset) -> Elem, write(dst, element offset, Elem).
template <class T>
struct MoveOp {
  using Src = T;
  using Elem = T;
  __device__ __forceinline__ static Elem convert(const Src& s) { return s; }
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return reinterpret_cast<const T*>(src)[off];
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, const Elem& e) const {
    reinterpret_cast<T*>(dst)[off] = e;
  }
};

// A conversion with both dtypes known at compile time: convert_element folds to the pair's few instructions.
template <int32_t S, int32_t D>
struct PairOp {
  using Src = typename StorageOf<itemsize(S)>::type;
  using Elem = typename StorageOf<itemsize(D)>::type;
  __device__ __forceinline__ static Elem convert(const Src& s) {
    Elem e;
    convert_element(D, &e, S, &s);
    return e;
  }
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    return convert(reinterpret_cast<const Src*>(src)[off]);
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, const Elem& e) const {
    reinterpret_cast<Elem*>(dst)[off] = e;
  }
};

// Any convertible pair, decided per element by the (uniform) dtype codes; Elem is the destination's storage.
template <class D>
struct GenericOp {
  using Elem = D;
  int32_t src_dtype, dst_dtype, src_size;
  __device__ __forceinline__ Elem read(const char* src, int64_t off) const {
    Elem e{};
    convert_element(dst_dtype, &e, src_dtype, src + off * src_size);
    return e;
  }
  __device__ __forceinline__ void write(char* dst, int64_t off, const Elem& e) const {
    reinterpret_cast<Elem*>(dst)[off] = e;
  }
};

inline bool aligned(const void* p, size_t a) { return reinterpret_cast<uintptr_t>(p) % a == 0; }

}  // namespace kernels
}  // namespace slimtensor_cuda
