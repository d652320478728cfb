// slimtensor/tensor/dims.h: sizes and strides of a tensor, inline up to kInlineDims dimensions.
//
// Note [Inline dims]
// Most tensors have at most 6 dimensions; their sizes and strides live inside the Tensor so that making
// a view allocates nothing. Higher ranks spill to one heap block [sizes..., strides...].
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace slimtensor {

// The most dimensions a tensor may have (more than any model uses): bounds the stack arrays that parse
// shapes at the API boundaries (Python, the AOTI shims, DLPack).
constexpr int kMaxDims = 64;

class Dims {
 public:
  static constexpr int kInlineDims = 6;

  Dims() = default;
  explicit Dims(int ndim) { resize(ndim); }
  Dims(const Dims& other) { assign(other); }
  Dims(Dims&& other) noexcept { steal(other); }
  Dims& operator=(const Dims& other) {
    if (this != &other) assign(other);
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  ~Dims() { release(); }

  int ndim() const noexcept { return ndim_; }
  int64_t* sizes() noexcept { return heap_ ? heap_ : inline_; }
  int64_t* strides() noexcept { return heap_ ? heap_ + ndim_ : inline_ + kInlineDims; }
  const int64_t* sizes() const noexcept { return heap_ ? heap_ : inline_; }
  const int64_t* strides() const noexcept { return heap_ ? heap_ + ndim_ : inline_ + kInlineDims; }

  // Changes the rank; contents are unspecified afterwards.
  void resize(int ndim) {
    if (ndim == ndim_) return;
    release();
    if (ndim > kInlineDims) {
      heap_ = static_cast<int64_t*>(std::malloc(sizeof(int64_t) * 2 * static_cast<size_t>(ndim)));
      if (!heap_) throw std::bad_alloc();
    }
    ndim_ = ndim;
  }

 private:
  void assign(const Dims& other) {
    resize(other.ndim_);
    std::memcpy(sizes(), other.sizes(), sizeof(int64_t) * ndim_);
    std::memcpy(strides(), other.strides(), sizeof(int64_t) * ndim_);
  }
  void steal(Dims& other) noexcept {
    ndim_ = other.ndim_;
    heap_ = other.heap_;
    if (!heap_) std::memcpy(inline_, other.inline_, sizeof(inline_));
    other.heap_ = nullptr;
    other.ndim_ = 0;
  }
  void release() noexcept {
    if (heap_) {
      std::free(heap_);
      heap_ = nullptr;
    }
    ndim_ = 0;
  }

  int64_t inline_[2 * kInlineDims];
  int64_t* heap_ = nullptr;
  int ndim_ = 0;
};

}  // namespace slimtensor
