// tensor.cpp: construction of tensors and the checks of Note [Tensor invariants].
#include "slimtensor/tensor.h"

#include <atomic>

#include "slimtensor/checked_math.h"
#include "slimtensor/error.h"
#include "slimtensor/events.h"

namespace slimtensor {
namespace {

std::atomic<uint64_t> g_next_tensor_id{1};

void trace_tensor(EventKind kind, const Tensor& t, uint64_t id, const char* op) {
  Event e;
  e.kind = kind;
  e.time_ns = events::now_ns();
  e.id = id;
  e.storage_id = t.storage_impl()->id();
  e.bytes = t.nbytes();
  e.device = t.device();
  e.dtype = static_cast<int8_t>(t.dtype());
  e.op = op;
  e.sizes.assign(t.sizes(), t.sizes() + t.ndim());
  e.strides.assign(t.strides(), t.strides() + t.ndim());
  e.offset = t.storage_offset();
  events::record(std::move(e));
}

// PyTorch's compute_contiguous: an empty tensor is contiguous; size-1 dims are skipped.
bool compute_contiguous(const int64_t* sizes, const int64_t* strides, int ndim, int64_t numel) {
  if (numel == 0) return true;
  int64_t expected = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

}  // namespace

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* function) {
  const int64_t lo = ndim > 0 ? -ndim : -1, hi = ndim > 0 ? ndim - 1 : 0;
  ST_CHECK(dim >= lo && dim <= hi, Index, function, ": dimension out of range (expected to be in range of [", lo,
           ", ", hi, "], but got ", dim, ")");
  return dim < 0 ? dim + (ndim > 0 ? ndim : 1) : dim;
}

void contiguous_strides(const int64_t* sizes, int ndim, int64_t* out) {
  int64_t running = 1;
  for (int d = ndim - 1; d >= 0; --d) {
    out[d] = running;
    running *= sizes[d] > 1 ? sizes[d] : 1;
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
    if (sizes[d] == 0) return 0;
    int64_t step = 0;
    overflow |= mul_overflows(strides[d], sizes[d] - 1, &step);
    overflow |= add_overflows(last, step, &last);
  }
  int64_t bytes = 0;
  overflow |= add_overflows(last, 1, &last);
  overflow |= mul_overflows(last, itemsize, &bytes);
  ST_CHECK(!overflow, Value, function, ": the byte extent of the view overflows int64 (sizes, strides or offset "
           "too large)");
  return bytes;
}

Tensor Tensor::make(Storage storage, IntList sizes, IntList strides, int64_t offset, ScalarType dtype, const char* op) {
  ST_CHECK(sizes.size == strides.size, Value, op, "(): sizes have ", sizes.size, " dims but strides have ",
           strides.size, "; give one stride per dim");
  ST_CHECK(sizes.size <= 64, Value, op, "(): at most 64 dims are supported but got ", sizes.size);
  Dims dims(static_cast<int>(sizes.size));
  for (int64_t d = 0; d < sizes.size; ++d) {
    dims.sizes()[d] = sizes[d];
    dims.strides()[d] = strides[d];
  }
  return make(std::move(storage), std::move(dims), offset, dtype, op);
}

Tensor Tensor::make(Storage storage, Dims dims, int64_t offset, ScalarType dtype, const char* op) {
  Tensor t;
  t.storage_ = std::move(storage);
  t.dims_ = std::move(dims);
  t.offset_ = offset;
  t.dtype_ = dtype;
  try {
    t.finish(op);
  } catch (...) {
    t.storage_ = Storage();  // never counted as a live tensor, so its destructor must not uncount it
    throw;
  }
  return t;
}

void Tensor::finish(const char* op) {
  ST_CHECK(storage_, Runtime, op, "(): the tensor has no storage");
  const int n = dims_.ndim();
  ST_CHECK(n <= 64, Value, op, "(): at most 64 dims are supported but the result would have ", n);
  const int64_t* sz = dims_.sizes();
  const int64_t* st = dims_.strides();
  const int64_t isz = itemsize();
  ST_CHECK(offset_ >= 0, Value, op, "(): storage offset must be >= 0 but got ", offset_);
  int64_t numel = 1, last = offset_;
  bool overflow = false, empty = false;
  for (int d = 0; d < n; ++d) {
    ST_CHECK(sz[d] >= 0, Value, op, "(): sizes must be >= 0 but size[", d, "] is ", sz[d]);
    ST_CHECK(st[d] >= 0, Value, op, "(): negative strides are not supported (stride[", d, "] is ", st[d],
             "); slimtensor rejects them where PyTorch also does for views: make the layout with flip-free "
             "strides");
    overflow |= mul_overflows(numel, sz[d], &numel);
    if (sz[d] == 0) empty = true;
    int64_t step = 0;
    overflow |= mul_overflows(st[d], sz[d] > 0 ? sz[d] - 1 : 0, &step);
    overflow |= add_overflows(last, step, &last);
  }
  int64_t end_bytes = 0, view_bytes = 0;
  overflow |= add_overflows(last, 1, &last);
  overflow |= mul_overflows(last, isz, &end_bytes);
  overflow |= mul_overflows(numel, isz, &view_bytes);  // nbytes() of a broadcast view can exceed its extent
  ST_CHECK(!overflow, Value, op, "(): sizes, strides and offset overflow int64 (numel, bytes or byte extent too "
           "large)");
  numel_ = empty ? 0 : numel;
  if (numel_ > 0 && end_bytes > storage_->nbytes()) {
    const int64_t held = storage_->nbytes();
    if (held % isz == 0) {
      fail(ErrorKind::Value, op, "(): view needs storage elements [", offset_, ", ", last, ") but storage holds ",
           held / isz, "; check sizes, strides and storage_offset");
    }
    fail(ErrorKind::Value, op, "(): view needs storage bytes [", offset_ * isz, ", ", end_bytes,
         ") but storage holds ", held, "; check sizes, strides and storage_offset");
  }
  contiguous_ = compute_contiguous(sz, st, n, numel_);
  stats::tensor_created(storage_->device().type);
  if (events::tracing_active()) {
    id_ = g_next_tensor_id.fetch_add(1, std::memory_order_relaxed);
    trace_tensor(EventKind::TensorCreate, *this, id_, op);
  }
}

Tensor::Tensor(const Tensor& other)
    : storage_(other.storage_),
      dims_(other.dims_),
      offset_(other.offset_),
      numel_(other.numel_),
      dtype_(other.dtype_),
      contiguous_(other.contiguous_) {
  if (!storage_) return;
  stats::tensor_created(storage_->device().type);
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
  stats::tensor_destroyed(storage_->device().type);
  if (id_ != 0 && events::tracing_active()) {
    try {
      trace_tensor(EventKind::TensorDestroy, *this, id_, "destroy");
    } catch (...) {
      // Never let tracing turn a destructor into a crash; the event is lost.
    }
  }
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
