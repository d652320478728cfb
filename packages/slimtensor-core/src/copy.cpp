// copy.cpp: copy_ planning (broadcast, overlap, dim ordering and merging, devices), fill_, item, clone, to.
#include "slimtensor/copy.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "copy_kernels.h"
#include "layout.h"
#include "parallel.h"
#include "slimtensor/device_registry.h"
#include "slimtensor/error.h"
#include "slimtensor/events.h"
#include "slimtensor/factories.h"

namespace slimtensor {
namespace {

constexpr int64_t kDirectCopyBytes = 1 << 16;  // dense same-dtype copies up to this size skip the planner

std::string shape_of(const int64_t* sizes, int n) {
  std::ostringstream out;
  out << "(";
  for (int i = 0; i < n; ++i) out << (i ? ", " : "") << sizes[i];
  out << (n == 1 ? ",)" : ")");
  return out.str();
}

// src's strides broadcast to dst's shape (0 where src repeats); throws when the shapes do not broadcast.
std::vector<int64_t> broadcast_strides(const Tensor& dst, const Tensor& src) {
  const int n = dst.ndim(), m = src.ndim();
  ST_CHECK(m <= n, Runtime, "copy_(): the source of shape ", shape_of(src.sizes(), m),
           " cannot be broadcast to the destination shape ", shape_of(dst.sizes(), n),
           " (the source has more dims)");
  std::vector<int64_t> out(static_cast<size_t>(n), 0);
  for (int i = 0; i < m; ++i) {
    const int d = n - m + i;
    const int64_t s = src.sizes()[i];
    if (s == dst.sizes()[d]) {
      out[d] = src.strides()[i];
    } else {
      ST_CHECK(s == 1, Runtime, "copy_(): the source of shape ", shape_of(src.sizes(), m),
               " cannot be broadcast to the destination shape ", shape_of(dst.sizes(), n), " (dim ", d, ": ", s,
               " vs ", dst.sizes()[d], ")");
    }
  }
  return out;
}

int64_t extent_bytes(const int64_t* sizes, const int64_t* strides, int n, int64_t itemsize) {
  int64_t last = 0;
  for (int d = 0; d < n; ++d) {
    if (sizes[d] == 0) return 0;
    last += strides[d] * (sizes[d] - 1);  // fits: bounded by the storage (Note [Tensor invariants])
  }
  return (last + 1) * itemsize;
}

CpuCopyPlan plan_cpu_copy(const Tensor& dst, const int64_t* src_strides, const Tensor& src) {
  struct D {
    int64_t size, ds, ss;
  };
  const int64_t dsz = dst.itemsize(), ssz = src.itemsize();
  std::vector<D> dims;
  for (int d = 0; d < dst.ndim(); ++d) {
    if (dst.sizes()[d] == 1) continue;
    dims.push_back({dst.sizes()[d], dst.strides()[d] * dsz, src_strides[d] * ssz});
  }
  // Outermost first by the destination's strides, so writes walk memory forward.
  std::stable_sort(dims.begin(), dims.end(), [](const D& a, const D& b) {
    return a.ds != b.ds ? a.ds > b.ds : a.ss > b.ss;
  });
  CpuCopyPlan p;
  for (const D& d : dims) {
    if (p.ndim > 0) {
      const int i = p.ndim - 1;  // merge into the previous (outer) dim when both sides allow it
      if (p.dst_strides[i] == d.ds * d.size && p.src_strides[i] == d.ss * d.size) {
        p.sizes[i] *= d.size;
        p.dst_strides[i] = d.ds;
        p.src_strides[i] = d.ss;
        continue;
      }
    }
    p.sizes[p.ndim] = d.size;
    p.dst_strides[p.ndim] = d.ds;
    p.src_strides[p.ndim] = d.ss;
    ++p.ndim;
  }
  p.dst = static_cast<char*>(dst.data_ptr());
  p.src = static_cast<const char*>(src.data_ptr());
  p.dst_type = dst.dtype();
  p.src_type = src.dtype();
  return p;
}

void trace_copy(const Tensor& dst, const Tensor& src) noexcept {
  events::emit(EventKind::Copy, [&](Event& e) {
    e.storage_id = dst.storage_impl()->id();
    e.src_storage_id = src.storage_impl()->id();
    e.bytes = dst.nbytes();
    e.device = dst.device();
    e.src_device = src.device();
    e.dtype = static_cast<int8_t>(dst.dtype());
    e.src_dtype = static_cast<int8_t>(src.dtype());
    e.op = "copy_";
  });
}

const st_device_table& table_of(Device d) { return *usable_device(d, "copy_()").table; }

void check_plugin(int rc, Device d, const char* what) {
  if (rc == 0) return;
  const st_device_table& t = table_of(d);
  fail(ErrorKind::Runtime, "copy_(): ", what, " on ", device_string(d), " failed: ", t.last_error(t.ctx));
}

// A CPU tensor with t's values and layout: t itself on the CPU, else a download of the bytes it spans.
Tensor host_copy_of_span(const Tensor& t) {
  if (t.device().is_cpu()) return t;
  const int64_t span = extent_bytes(t.sizes(), t.strides(), t.ndim(), t.itemsize());
  Tensor host = Tensor::make(Storage::adopt(StorageImpl::allocate(kCPUDevice, span)), IntList(t.sizes(), t.ndim()),
                             IntList(t.strides(), t.ndim()), 0, t.dtype(), "copy_");
  if (span > 0) {
    const st_device_table& tb = table_of(t.device());
    check_plugin(tb.copy_device_to_host(tb.ctx, t.device().index, host.data_ptr(), t.data_ptr(), span), t.device(),
                 "download");
  }
  return host;
}

void copy_cpu(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides) {
  run_cpu_copy(plan_cpu_copy(dst, src_strides.data(), src));
}

// dst or src (or both) live on a plugin device.
void copy_device(const Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides) {
  const Device dd = dst.device(), sd = src.device();
  const bool same_layout_dense = dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous() &&
                                 src.numel() == dst.numel();
  const int64_t bytes = dst.nbytes();
  if (same_layout_dense) {
    if (sd.is_cpu()) {
      const st_device_table& t = table_of(dd);
      check_plugin(t.copy_host_to_device(t.ctx, dd.index, dst.data_ptr(), src.data_ptr(), bytes), dd, "upload");
      return;
    }
    if (dd.is_cpu()) {
      const st_device_table& t = table_of(sd);
      check_plugin(t.copy_device_to_host(t.ctx, sd.index, dst.data_ptr(), src.data_ptr(), bytes), sd, "download");
      return;
    }
    if (dd.type == sd.type) {
      const st_device_table& t = table_of(dd);
      check_plugin(t.copy_device_to_device(t.ctx, dd.index, dst.data_ptr(), sd.index, src.data_ptr(), bytes), dd,
                   "device copy");
      return;
    }
  }
  if (dd == sd && !dd.is_cpu()) {
    const st_device_table& t = table_of(dd);
    if (t.copy_strided) {
      st_strided_copy_desc desc{dst.ndim(), dst.sizes(), dst.data_ptr(), dst.strides(), static_cast<int32_t>(dst.dtype()),
                                src.data_ptr(), src_strides.data(), static_cast<int32_t>(src.dtype())};
      check_plugin(t.copy_strided(t.ctx, dd.index, &desc), dd, "strided copy");
      return;
    }
  }
  // General case: stage through the host. Download the bytes each side spans, copy on the CPU, upload dst.
  const Tensor host_src = host_copy_of_span(src);
  const bool dst_dense = dst.is_contiguous();
  Tensor host_dst = dd.is_cpu() ? dst
                    : dst_dense ? Tensor::make(Storage::adopt(StorageImpl::allocate(kCPUDevice, bytes)),
                                               IntList(dst.sizes(), dst.ndim()), IntList(dst.strides(), dst.ndim()),
                                               0, dst.dtype(), "copy_")
                                : host_copy_of_span(dst);
  copy_cpu(host_dst, host_src, src_strides);
  if (!dd.is_cpu()) {
    const int64_t span = extent_bytes(dst.sizes(), dst.strides(), dst.ndim(), dst.itemsize());
    const st_device_table& t = table_of(dd);
    check_plugin(t.copy_host_to_device(t.ctx, dd.index, dst.data_ptr(), host_dst.data_ptr(), span), dd, "upload");
  }
}

bool is_zero(const Scalar& v) {
  return (v.kind != Scalar::Kind::Complex || v.imag == 0) && v.d == 0 && v.i == 0 && !std::signbit(v.d);
}

// PyTorch's checked_convert for fill values: a value the dtype cannot hold is refused, never wrapped.
void check_fill_value(ScalarType type, const Scalar& v) {
  const ScalarTypeInfo& i = info(type);
  ST_CHECK(i.convertible || is_zero(v), Runtime, "fill_(): ", i.name, " tensors can only be filled with 0 (no "
           "conversion to ", i.name, "); fill a uint8 view of the bytes instead");
  if (type == ScalarType::Bool) return;
  const bool uint64_value = v.kind == Scalar::Kind::Int && v.i < 0 && v.d > 0;  // Python ints >= 2**63
  auto refuse = [&](const char* range) {
    std::ostringstream value;
    if (v.kind == Scalar::Kind::Int) {
      if (uint64_value) value << static_cast<uint64_t>(v.i); else value << v.i;
    } else {
      value << v.d;
      if (v.kind == Scalar::Kind::Complex) value << (v.imag < 0 ? "" : "+") << v.imag << "j";
    }
    fail(ErrorKind::Runtime, "fill_(): value ", value.str(), " cannot be converted to ", i.name,
         " without overflow (", i.name, " holds ", range, ")");
  };
  if (!i.is_floating && !i.is_complex) {  // integers
    if (v.kind == Scalar::Kind::Complex && v.imag != 0) refuse("no imaginary part");
    // The checks below follow c10's overflows<To, From>.
    struct Range {
      long double lo, hi;
      const char* text;
    };
    Range r;
    switch (type) {
      case ScalarType::UInt8: r = {0, 255, "[0, 255]"}; break;
      case ScalarType::Int8: r = {-128, 127, "[-128, 127]"}; break;
      case ScalarType::Int16: r = {-32768, 32767, "[-32768, 32767]"}; break;
      case ScalarType::UInt16: r = {0, 65535, "[0, 65535]"}; break;
      case ScalarType::Int32: r = {-2147483648.0L, 2147483647.0L, "[-2**31, 2**31 - 1]"}; break;
      case ScalarType::UInt32: r = {0, 4294967295.0L, "[0, 2**32 - 1]"}; break;
      case ScalarType::Int64: r = {-9223372036854775808.0L, 9223372036854775807.0L, "[-2**63, 2**63 - 1]"}; break;
      default: r = {0, 18446744073709551615.0L, "[0, 2**64 - 1]"}; break;  // uint64
    }
    long double x;
    if (v.kind == Scalar::Kind::Int) {
      x = uint64_value ? static_cast<long double>(static_cast<uint64_t>(v.i)) : static_cast<long double>(v.i);
    } else {
      if (std::isnan(v.d)) refuse(r.text);
      x = v.d;
    }
    // Unsigned types accept negatives down to -max, which wrap (two's complement), as in PyTorch.
    if (x > r.hi || (r.lo == 0 ? -x > r.hi : x < r.lo)) refuse(r.text);
    return;
  }
  if (i.is_complex) return;  // PyTorch does not range-check complex fills (65520 -> complex32 is inf)
  double max = 0;
  switch (type) {
    case ScalarType::Float16: max = 65504.0; break;
    case ScalarType::BFloat16: max = 3.3895313892515355e38; break;
    case ScalarType::Float32: max = 3.4028234663852886e38; break;
    default: return;  // float64 holds every double
  }
  if (std::isfinite(v.d) && std::fabs(v.d) > max) refuse(max == 65504.0 ? "|x| <= 65504" : "its finite range");
  if (v.kind == Scalar::Kind::Complex && v.imag != 0) refuse("no imaginary part");
}

bool ranges_intersect(const Tensor& a, const Tensor& b, const int64_t* b_strides) {
  if (a.storage_impl() != b.storage_impl()) return false;
  const char* a0 = static_cast<const char*>(a.data_ptr());
  const char* b0 = static_cast<const char*>(b.data_ptr());
  const char* a1 = a0 + extent_bytes(a.sizes(), a.strides(), a.ndim(), a.itemsize());
  const char* b1 = b0 + extent_bytes(a.sizes(), b_strides, a.ndim(), b.itemsize());
  return a0 < b1 && b0 < a1;
}

}  // namespace

bool has_internal_overlap(const Tensor& t) {
  return internal_overlap(t.sizes(), t.strides(), t.ndim()) == Overlap::Yes;
}

void copy_(const Tensor& dst, const Tensor& src) {
  ST_CHECK(dst.defined() && src.defined(), Runtime, "copy_(): both tensors must be defined");
  ST_CHECK(!dst.is_read_only(), Runtime, "copy_(): the destination is read-only (it borrows memory its owner "
           "marked read-only, e.g. a read-only numpy array); write into a copy instead: t = t.clone()");
  ST_CHECK(dst.dtype() == src.dtype() || (info(dst.dtype()).convertible && info(src.dtype()).convertible), Runtime,
           "copy_(): conversion from ",
           name(src.dtype()), " to ", name(dst.dtype()), " is not supported (float8/float4 types can only be "
           "moved between tensors of the same dtype); view them as uint8 to move their bytes");
  // Small dense copies between distinct CPU storages (the common case of tiny tensors): one memcpy, no
  // planning. Large ones take the planned path, which splits across threads and streams past the cache.
  const int64_t bytes = dst.nbytes();
  if (bytes <= kDirectCopyBytes && dst.dtype() == src.dtype() && dst.dtype() != ScalarType::Bool &&
      dst.is_contiguous() && src.is_contiguous() && dst.storage_impl() != src.storage_impl() &&
      dst.device().is_cpu() && src.device().is_cpu() && dst.ndim() == src.ndim() &&
      std::equal(dst.sizes(), dst.sizes() + dst.ndim(), src.sizes())) {
    if (events::tracing_active()) trace_copy(dst, src);
    if (bytes > 0) std::memcpy(dst.data_ptr(), src.data_ptr(), static_cast<size_t>(bytes));
    return;
  }
  std::vector<int64_t> src_strides = broadcast_strides(dst, src);
  if (dst.numel() == 0) return;
  ST_CHECK(internal_overlap(dst.sizes(), dst.strides(), dst.ndim()) != Overlap::Yes, Runtime,
           "copy_(): more than one element of the destination refers to a single memory location (as after "
           "expand()); call .clone() on the destination first");
  Tensor source = src;
  if (ranges_intersect(dst, src, src_strides.data())) {
    const bool same_elements = dst.data_ptr() == src.data_ptr() && dst.itemsize() == src.itemsize() &&
                               std::equal(src_strides.begin(), src_strides.end(), dst.strides());
    if (same_elements && dst.dtype() == src.dtype()) return;  // copying a tensor onto itself
    // Same elements, another dtype of the same size (a.copy_(a.view(int32))): each element is read
    // before it is written, in place, so the conversion is exact.
    if (same_elements) {
      if (events::tracing_active()) trace_copy(dst, src);
      if (dst.device().is_cpu()) {
        copy_cpu(dst, src, src_strides);
      } else {
        copy_device(dst, src, src_strides);
      }
      return;
    }
    const bool both_dense = is_non_overlapping_and_dense(dst.sizes(), dst.strides(), dst.ndim()) &&
                            is_non_overlapping_and_dense(src.sizes(), src.strides(), src.ndim());
    ST_CHECK(!both_dense, Runtime, "copy_(): the source and the destination partially overlap in memory; "
             "copy from a clone: dst.copy_(src.clone())");
    // Interleaved views of one storage (t[::2] and t[1::2]) may share a byte range without sharing an
    // element; going through a temporary keeps the result exact either way.
    source = clone(src, MemoryFormat::Contiguous);
    src_strides = broadcast_strides(dst, source);
  }
  if (events::tracing_active()) trace_copy(dst, source);
  if (dst.device().is_cpu() && source.device().is_cpu()) {
    copy_cpu(dst, source, src_strides);
  } else {
    copy_device(dst, source, src_strides);
  }
}

void fill_(const Tensor& dst, const Scalar& value) {
  ST_CHECK(dst.defined(), Runtime, "fill_(): the tensor is undefined");
  ST_CHECK(!dst.is_read_only(), Runtime, "fill_(): the tensor is read-only (it borrows memory its owner marked "
           "read-only, e.g. a read-only numpy array); fill a copy instead: t = t.clone()");
  check_fill_value(dst.dtype(), value);
  // One element holding the value, converted by the same rules as copies, then broadcast.
  alignas(16) unsigned char buffer[16];
  ScalarType type;
  switch (value.kind) {
    case Scalar::Kind::Bool: { bool b = value.i != 0; std::memcpy(buffer, &b, 1); type = ScalarType::Bool; break; }
    case Scalar::Kind::Int: std::memcpy(buffer, &value.i, 8); type = ScalarType::Int64; break;
    case Scalar::Kind::Float: std::memcpy(buffer, &value.d, 8); type = ScalarType::Float64; break;
    default: {
      const double c[2] = {value.d, value.imag};
      std::memcpy(buffer, c, 16);
      type = ScalarType::Complex128;
    }
  }
  const Tensor scalar = Tensor::make(Storage::adopt(StorageImpl::borrow(kCPUDevice, buffer, itemsize(type), nullptr,
                                                                         nullptr, true, "scalar")),
                                     IntList(), IntList(), 0, type, "fill_");
  const bool zero = is_zero(value);
  if (zero && !info(dst.dtype()).convertible) {
    // Types without conversions (float8, float4) take the all-zero bit pattern, through a same-dtype copy.
    std::memset(buffer, 0, sizeof buffer);
    type = dst.dtype();
  }
  if (zero && dst.device().is_cpu() && dst.is_contiguous() && !dst.is_read_only()) {
    char* p = static_cast<char*>(dst.data_ptr());
    parallel_for(dst.nbytes(), 1 << 20, [p](int64_t b, int64_t e) { std::memset(p + b, 0, e - b); });
    return;
  }
  copy_(dst, scalar);
}

Scalar item(const Tensor& self) {
  ST_CHECK(self.defined(), Runtime, "item(): the tensor is undefined");
  ST_CHECK(self.numel() == 1, Runtime, "item(): a tensor with ", self.numel(),
           " elements cannot be converted to a Python number; index it first or use .tolist()");
  alignas(16) unsigned char raw[16];
  const void* src = self.data_ptr();
  if (!self.device().is_cpu()) {
    const st_device_table& t = *usable_device(self.device(), "item()").table;
    ST_CHECK(t.copy_device_to_host(t.ctx, self.device().index, raw, src, self.itemsize()) == 0, Runtime,
             "item(): download from ", device_string(self.device()), " failed: ", t.last_error(t.ctx));
    src = raw;
  }
  const ScalarTypeInfo& i = info(self.dtype());
  ST_CHECK(i.convertible, Runtime, "item(): ", i.name, " values cannot be converted to Python numbers; "
           "view the tensor as uint8 to read its bytes");
  Scalar out;
  if (self.dtype() == ScalarType::Bool) {
    bool b;
    convert_element(src, self.dtype(), &b, ScalarType::Bool);
    return Scalar::from_bool(b);
  }
  if (i.is_complex) {
    double c[2];
    convert_element(src, self.dtype(), c, ScalarType::Complex128);
    return Scalar::from_complex(c[0], c[1]);
  }
  if (i.is_floating) {
    double d;
    convert_element(src, self.dtype(), &d, ScalarType::Float64);
    return Scalar::from_double(d);
  }
  if (self.dtype() == ScalarType::UInt64) {
    uint64_t u;
    std::memcpy(&u, src, 8);
    out = Scalar::from_int(static_cast<int64_t>(u));
    out.d = static_cast<double>(u);  // the binding reads d's sign to recover values >= 2^63
    return out;
  }
  int64_t v;
  convert_element(src, self.dtype(), &v, ScalarType::Int64);
  return Scalar::from_int(v);
}

Tensor clone(const Tensor& self, MemoryFormat format) {
  ST_CHECK(self.defined(), Runtime, "clone(): the tensor is undefined");
  const int n = self.ndim();
  std::vector<int64_t> strides(static_cast<size_t>(n));
  if (format == MemoryFormat::Preserve && is_non_overlapping_and_dense(self.sizes(), self.strides(), n)) {
    strides.assign(self.strides(), self.strides() + n);
  } else if (format == MemoryFormat::Preserve) {
    infer_dense_strides(self.sizes(), self.strides(), n, strides.data());
  } else {
    ST_CHECK(memory_format_strides(self.sizes(), n, format, strides.data()), Runtime, "clone(): memory format ",
             format == MemoryFormat::ChannelsLast ? "channels_last needs a 4-d" : "channels_last_3d needs a 5-d",
             " tensor but got ", n, " dims");
  }
  Tensor out = empty_strided(IntList(self.sizes(), n), strides, self.dtype(), self.device());
  copy_(out, self);
  return out;
}

Tensor contiguous(const Tensor& self, MemoryFormat format) {
  ST_CHECK(format != MemoryFormat::Preserve, Value, "contiguous(): memory_format=preserve_format is not allowed; "
           "use contiguous_format, channels_last or channels_last_3d");
  if (self.is_contiguous(format)) return self;
  return clone(self, format);
}

Tensor to(const Tensor& self, Device device, ScalarType dtype, bool copy) {
  if (!copy && self.device() == device && self.dtype() == dtype) return self;
  Tensor out = empty_like(self, dtype, device);
  copy_(out, self);
  return out;
}

}  // namespace slimtensor
