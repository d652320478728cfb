// tensor/tensor.cpp: construction of tensors and the checks of Note [Tensor invariants].
#include "slimtensor/tensor/tensor.h"

#include <atomic>
#include <string>

#include "slimtensor/base/checked_math.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/events.h"

#include "runtime/counters.h"
#include "tensor/device_alignment.h"

namespace slimtensor {
namespace {

std::atomic<uint64_t> g_next_tensor_id{1};

void trace_tensor(EventKind kind, const Tensor& t, uint64_t id, const char* op) noexcept {
  events::emit(kind, [&](Event& e) {
    e.id = id;
    e.storage_id = t.storage_impl()->id();
    e.bytes = t.nbytes();
    e.device = t.device();
    e.dtype = static_cast<int8_t>(t.dtype());
    e.op = op;
    e.sizes.assign(t.sizes(), t.sizes() + t.ndim());
    e.strides.assign(t.strides(), t.strides() + t.ndim());
    e.offset = t.storage_offset();
  });
}

}  // namespace

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* function) {
  const int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
  ST_CHECK(dim >= lo && dim <= hi, Index, function, ": dimension out of range (expected to be in range of [", lo, ", ",
           hi, "], but got ", dim, ")");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

void contiguous_strides(const int64_t* sizes, int ndim, int64_t* out) {
  int64_t running = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    out[d] = running;
    // Wraps instead of overflowing (undefined behaviour); the layout check that follows rejects such sizes.
    running = static_cast<int64_t>(static_cast<uint64_t>(running) * static_cast<uint64_t>(sizes[d] > 1 ? sizes[d] : 1));
  }
}

int64_t checked_numel(IntList sizes, const char* function) {
  int64_t numel = 1;
  bool overflow = false;
  for (int64_t d = 0; d < sizes.size; ++d) {
    ST_CHECK(sizes[d] >= 0, Value, function, ": sizes must be >= 0 but size[", d, "] is ", sizes[d]);
    overflow |= mul_overflows(numel, sizes[d], &numel);
  }
  ST_CHECK(!overflow, Value, function, ": the number of elements of sizes overflows int64");
  return numel;
}

int64_t storage_bytes_needed(IntList sizes, IntList strides, int64_t offset, int64_t itemsize, const char* function) {
  ST_CHECK(sizes.size == strides.size, Value, function, ": sizes have ", sizes.size, " dims but strides have ",
           strides.size, "; give one stride per dim");
  int64_t last = offset;  // index of the last element reached
  bool overflow = false;
  for (int64_t d = 0; d < sizes.size; ++d) {
    ST_CHECK(sizes[d] >= 0, Value, function, ": sizes must be >= 0 but size[", d, "] is ", sizes[d]);
  }
  for (int64_t d = 0; d < sizes.size; ++d) {
    if (sizes[d] == 0) return 0;
    int64_t step = 0;
    overflow |= mul_overflows(strides[d], sizes[d] - 1, &step);
    overflow |= add_overflows(last, step, &last);
  }
  int64_t bytes = 0;
  overflow |= add_overflows(last, 1, &last);
  overflow |= mul_overflows(last, itemsize, &bytes);
  ST_CHECK(!overflow, Value, function,
           ": the byte extent of the view overflows int64 (sizes, strides or offset "
           "too large)");
  return bytes;
}

Tensor Tensor::make(Storage storage, IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* op) {
  Tensor t;
  t.set_layout(sizes, strides, offset, dtype, op);
  t.storage_ = std::move(storage);
  t.finish(op);
  return t;
}

Tensor Tensor::make(Storage storage, Dims dims, int64_t offset, ScalarType dtype, const char* op) {
  Tensor t;
  t.storage_ = std::move(storage);
  t.dims_ = std::move(dims);
  t.offset_ = offset;
  t.dtype_ = dtype;
  t.finish(op);
  return t;
}

void Tensor::set_layout(IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* op) {
  ST_CHECK(sizes.size == strides.size, Value, call_name(op), ": sizes have ", sizes.size, " dims but strides have ",
           strides.size, "; give one stride per dim");
  ST_CHECK(sizes.size <= 64, Value, call_name(op), ": at most 64 dims are supported but got ", sizes.size);
  dims_.resize(static_cast<int>(sizes.size));
  int64_t* sz = dims_.sizes();
  int64_t* st = dims_.strides();
  for (int64_t d = 0; d < sizes.size; ++d) {
    sz[d] = sizes[d];
    st[d] = strides[d];
  }
  offset_ = offset;
  dtype_ = dtype;
}

void Tensor::finish(const char* op) {
  try {
    ST_CHECK(storage_, Runtime, call_name(op), ": the tensor has no storage");
    const int64_t extent = check_layout(op);
    const int64_t held = storage_->nbytes();
    if (extent > held) {
      const int64_t isz = itemsize();
      if (held % isz == 0) {
        fail(ErrorKind::Value, call_name(op), ": view needs storage elements [", offset_, ", ", extent / isz,
             ") but storage holds ", held / isz, "; check sizes, strides and storage_offset");
      }
      fail(ErrorKind::Value, call_name(op), ": view needs storage bytes [", offset_ * isz, ", ", extent,
           ") but storage holds ", held, "; check sizes, strides and storage_offset");
    }
    const StorageImpl* s = storage_.get();
    if (!s->device().is_cpu() && extent > 0) {  // a view that changes the dtype may misalign its elements
      const uint64_t base = s->is_addressable() ? reinterpret_cast<uintptr_t>(s->data()) : 0;
      check_device_alignment(s->device(), base + s->handle_offset() + static_cast<uint64_t>(offset_ * itemsize()),
                             dtype_, op);
    }
  } catch (...) {
    storage_ = Storage();  // never counted as a live tensor, so its destructor must not uncount it
    throw;
  }
  count(op);
}

// Note [Device element alignment]
void check_device_alignment(Device device, uint64_t element0, ScalarType dtype, const char* function) {
  const uint64_t size = static_cast<uint64_t>(slimtensor::itemsize(dtype));
  const uint64_t align = size == 0 ? 1 : (size & (~size + 1)) < 16 ? (size & (~size + 1)) : 16;
  ST_CHECK(element0 % align == 0, Value, call_name(function), ": element 0 of this ", name(dtype), " view of ",
           device_string(device), " memory is at ", reinterpret_cast<const void*>(static_cast<uintptr_t>(element0)),
           ", which is not a multiple of ", align,
           " bytes; device kernels need aligned elements (a misaligned one "
           "faults and loses the device context): pass an aligned pointer or offset, or copy the bytes as uint8");
}

void Tensor::count(const char* op) noexcept {
  counters::tensor_created(storage_->device().type);
  if (events::tracing_active()) {
    id_ = g_next_tensor_id.fetch_add(1, std::memory_order_relaxed);
    trace_tensor(EventKind::TensorCreate, *this, id_, op);
  }
}

// One pass from the innermost dim: numel, the last element reached, contiguity (PyTorch's
// compute_contiguous: size-1 dims are skipped, an empty tensor is contiguous; the expected stride of a
// dim is the product of the sizes inside it) and the checks of Note [Tensor invariants]. Only when a size,
// stride or offset is negative, or there are more than 64 dims, does report_bad_layout() look again to
// say what is wrong.
//
// The product of the non-zero sizes must fit in int64, whatever their order: code elsewhere multiplies
// sizes in any order (reshape, from the outside in), and a zero size must not hide an overflow from it.
int64_t Tensor::check_layout(const char* op) {
  const int n = dims_.ndim();
  const int64_t* sz = dims_.sizes();
  const int64_t* st = dims_.strides();
  int64_t nonzero = 1, last = offset_;  // nonzero: the product of the non-zero sizes seen so far
  bool negative = offset_ < 0, overflow = false, empty = false, contiguous = true;
  for (int d = n - 1; d >= 0; --d) {
    const int64_t size = sz[d], stride = st[d];
    negative |= (size | stride) < 0;
    if (size < 0) continue;                          // reported below; size - 1 could overflow (INT64_MIN)
    if (size != 1) contiguous &= stride == nonzero;  // only read when no size is 0
    if (size == 0) {
      empty = true;
      continue;  // no element: no step, and the extent is 0
    }
    int64_t step = 0;
    overflow |= mul_overflows(stride, size - 1, &step);
    overflow |= add_overflows(last, step, &last);
    overflow |= mul_overflows(nonzero, size, &nonzero);
  }
  const int64_t numel = empty ? 0 : nonzero;
  if (__builtin_expect(negative || n > 64, 0)) report_bad_layout(op);
  int64_t extent = 0, view_bytes = 0;
  overflow |= add_overflows(last, 1, &last);
  overflow |= mul_overflows(last, itemsize(), &extent);
  overflow |= mul_overflows(nonzero, itemsize(), &view_bytes);  // a broadcast view's nbytes() can exceed its extent
  if (__builtin_expect(overflow, 0)) report_overflow(op);
  numel_ = numel;
  contiguous_ = empty || contiguous;
  return empty ? 0 : extent;
}

void Tensor::report_overflow(const char* op) const {
  const std::string name = call_name(op);
  int64_t product = 1;
  for (int d = 0; d < ndim(); ++d) {
    ST_CHECK(sizes()[d] == 0 || !mul_overflows(product, sizes()[d], &product), Value, name,
             ": the number of elements overflows int64 (the product of the non-zero sizes is too large)");
  }
  ST_CHECK(!mul_overflows(product, itemsize(), &product), Value, name,
           ": the size in bytes overflows int64 (numel * itemsize is too large)");
  fail(ErrorKind::Value, name,
       ": the byte extent of the view overflows int64 (storage_offset + sum of "
       "stride * (size - 1), times the itemsize, is too large)");
}

void Tensor::report_bad_layout(const char* op) const {
  const std::string name = call_name(op);
  ST_CHECK(ndim() <= 64, Value, name, ": at most 64 dims are supported but the result would have ", ndim());
  ST_CHECK(offset_ >= 0, Value, name, ": storage_offset must be >= 0 but got ", offset_);
  for (int d = 0; d < ndim(); ++d) {
    ST_CHECK(sizes()[d] >= 0, Value, name, ": sizes must be >= 0 but size[", d, "] is ", sizes()[d]);
    ST_CHECK(strides()[d] >= 0, Value, name, ": negative strides are not supported (stride[", d, "] is ", strides()[d],
             "); slimtensor rejects them where PyTorch also does for views: make the layout with "
             "flip-free strides");
  }
  fail(ErrorKind::Runtime, name, ": invalid layout");  // not reached: the caller saw one of the above
}

Tensor::Tensor(const Tensor& other)
    : storage_(other.storage_),
      dims_(other.dims_),
      offset_(other.offset_),
      numel_(other.numel_),
      dtype_(other.dtype_),
      contiguous_(other.contiguous_) {
  if (!storage_) return;
  counters::tensor_created(storage_->device().type);
  if (events::tracing_active()) {
    id_ = g_next_tensor_id.fetch_add(1, std::memory_order_relaxed);
    trace_tensor(EventKind::TensorCreate, *this, id_, "share");
  }
}

Tensor::Tensor(Tensor&& other) noexcept
    : storage_(std::move(other.storage_)),
      dims_(std::move(other.dims_)),
      offset_(other.offset_),
      numel_(other.numel_),
      dtype_(other.dtype_),
      contiguous_(other.contiguous_),
      id_(other.id_) {}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  this->~Tensor();
  new (this) Tensor(std::move(other));
  return *this;
}

Tensor::~Tensor() {
  if (!storage_) return;
  counters::tensor_destroyed(storage_->device().type);
  if (id_ != 0 && events::tracing_active()) trace_tensor(EventKind::TensorDestroy, *this, id_, "destroy");
}

bool Tensor::is_contiguous(MemoryFormat format) const noexcept {
  const int n = ndim();
  if (format == MemoryFormat::Contiguous || format == MemoryFormat::Preserve) return contiguous_;
  const int want = format == MemoryFormat::ChannelsLast ? 4 : 5;
  if (n != want) return false;
  // Channels-last order, innermost first: C, then W, H, (D), then N.
  const int order4[] = {1, 3, 2, 0};
  const int order5[] = {1, 4, 3, 2, 0};
  const int* order = n == 4 ? order4 : order5;
  const int64_t* sz = sizes();
  const int64_t* st = strides();
  int64_t expected = 1;  // PyTorch's compute_channels_last_contiguous_{2d,3d}, exactly
  for (int i = 0; i < n; ++i) {
    const int d = order[i];
    if (sz[d] == 1) continue;
    if (st[d] != expected) return false;
    expected *= sz[d];
  }
  return true;
}

int64_t Tensor::size(int64_t d) const { return sizes()[wrap_dim(d, ndim(), "size()")]; }
int64_t Tensor::stride(int64_t d) const { return strides()[wrap_dim(d, ndim(), "stride()")]; }

}  // namespace slimtensor
