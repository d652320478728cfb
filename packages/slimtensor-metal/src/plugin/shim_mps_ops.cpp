// shim_mps_ops.cpp: the c_shim_mps.h op fallbacks small models need (mm, addmm, bmm) through
// MPSMatrixMultiplication, with operands bound in place whenever their layout allows it.
//
// Note [MPS matmul operands]
// An operand binds in place when it is row-major (inner stride 1) or its transpose is (outer stride 1):
// MPSMatrixMultiplication then reads it at its (buffer, offset) with the transpose flag. Any other layout
// (a non-dense view) is first copied to a contiguous temporary by the strided-copy kernel; that
// temporary is freed stream-ordered after the multiplication. The result goes straight into `out` when
// `out` is row-major, else into a temporary copied back into out's layout, so out's aliasing is kept.
// addmm broadcasts `self` into the result first (beta = 0 ignores self and zero-fills, as torch does).
#include <cinttypes>
#include <cstring>

#include "checked.h"
#include "dtypes.h"
#include "errors.h"
#include "layout.h"
#include "plugin.h"
#include "shim_mps.h"
#include "strided_copy.h"

using namespace slimtensor_metal;

namespace {

struct Operand {
  mtlb_matrix m{};
  bool transpose = false;
  void* temp = nullptr;  // a contiguous copy we own, released after the multiplication
};

// Copies `t` (batch x rows x cols view, batch may be 1 with bstride 0) into a new contiguous buffer.
int to_contiguous(MetalContext* c, Stream* s, const TensorInfo& t, int64_t b, int64_t r, int64_t k, int64_t bs,
                  int64_t rs, int64_t cs, void** temp) {
  uint64_t n, bytes;
  if (!mul_u64(static_cast<uint64_t>(b), static_cast<uint64_t>(r), &n) || !mul_u64(n, static_cast<uint64_t>(k), &n) ||
      !mul_u64(n, static_cast<uint64_t>(t.itemsize), &bytes))
    return fail("matmul: the operand's byte count overflows");
  if (c->allocate_locked(bytes, s, temp)) return 1;
  const int64_t sizes[3] = {b, r, k};
  const int64_t src_strides[3] = {bs, rs, cs};
  const int64_t dst_strides[3] = {r * k, k, 1};
  st_strided_copy_v2 d{};
  d.struct_size = sizeof d;
  d.ndim = 3;
  d.sizes = sizes;
  d.src = {t.buffer, t.offset, 0, 0};
  d.src_strides = src_strides;
  d.src_dtype = t.dtype;
  d.dst = {*temp, 0, 0, 0};
  d.dst_strides = dst_strides;
  d.dst_dtype = t.dtype;
  int64_t unused = 0;
  return strided_copy_locked(c, s, d, &unused);
}

// Describes a [batch, rows, cols] view (strides bs, rs, cs in elements) as an MPS matrix.
int operand(MetalContext* c, Stream* s, const TensorInfo& t, int64_t b, int64_t rows, int64_t cols, int64_t bs,
            int64_t rs, int64_t cs, Operand* out) {
  const uint64_t it = static_cast<uint64_t>(t.itemsize);
  const bool row_major = cols == 1 || cs == 1;
  const bool col_major = !row_major && (rows == 1 || rs == 1);
  out->m.rows = static_cast<uint64_t>(rows);
  out->m.cols = static_cast<uint64_t>(cols);
  if (row_major && rs >= cols && (b == 1 || bs >= rows * rs)) {
    out->m.buffer = t.buffer;
    out->m.offset = t.offset;
    out->m.row_bytes = static_cast<uint64_t>(rows == 1 ? cols : rs) * it;
    out->m.matrix_bytes = static_cast<uint64_t>(b == 1 ? rows * (rows == 1 ? cols : rs) : bs) * it;
    return 0;
  }
  if (col_major && cs >= rows && (b == 1 || bs >= cols * cs)) {  // the transpose is row-major: cols x rows
    out->transpose = true;
    out->m.rows = static_cast<uint64_t>(cols);
    out->m.cols = static_cast<uint64_t>(rows);
    out->m.buffer = t.buffer;
    out->m.offset = t.offset;
    out->m.row_bytes = static_cast<uint64_t>(cols == 1 ? rows : cs) * it;
    out->m.matrix_bytes = static_cast<uint64_t>(b == 1 ? cols * (cols == 1 ? rows : cs) : bs) * it;
    return 0;
  }
  if (to_contiguous(c, s, t, b, rows, cols, bs, rs, cs, &out->temp)) return 1;
  out->m.buffer = out->temp;
  out->m.offset = 0;
  out->m.row_bytes = static_cast<uint64_t>(cols) * it;
  out->m.matrix_bytes = static_cast<uint64_t>(rows * cols) * it;
  return 0;
}

// Every operand's whole extent is checked against its buffer before anything is encoded: an unknown handle or
// a view past the buffer's end is refused here, never handed to MPS (in-place operands skip the strided copy
// that would otherwise check them).
int check_extent(MetalContext* c, const std::string& what, const TensorInfo& t) {
  uint64_t extent;
  if (!extent_bytes(what.c_str(), static_cast<int32_t>(t.ndim), t.sizes, t.strides, t.itemsize, &extent)) return 1;
  if (extent == 0) return 0;
  Resolved r;
  return c->resolve_handle_locked(what.c_str(), t.buffer, t.offset, extent, &r);
}

int check_dtype(const char* fn, const TensorInfo& a, const TensorInfo& b, const TensorInfo& o) {
  if (a.dtype != b.dtype || a.dtype != o.dtype)
    return fail("%s: needs one dtype for all operands but got codes %d, %d and out %d", fn, a.dtype, b.dtype, o.dtype);
  if (a.dtype != kFloat32 && a.dtype != kFloat16)
    return fail("%s: MPSMatrixMultiplication takes float32 or float16 but got dtype code %d; convert with .to()", fn,
                a.dtype);
  return 0;
}

// out[b] = alpha * A[b] @ B[b] + beta * out[b]; the operands are [batch, m, k], [batch, k, n], [batch, m, n].
int matmul(const char* fn, AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1, AtenTensorHandle mat2,
           double beta, double alpha, bool batched) {
  MetalContext* c = mps_context();
  if (!c) return fail("%s: the MPS plugin is not initialised", fn);
  std::lock_guard<std::mutex> g(c->mutex());
  if (c->ensure_available_locked(fn)) return 1;
  TensorInfo a, b, o, bias;
  const std::string fa = std::string(fn) + ": mat1", fb = std::string(fn) + ": mat2", fo = std::string(fn) + ": out";
  if (read_tensor_locked(c, fa.c_str(), mat1, &a) || read_tensor_locked(c, fb.c_str(), mat2, &b) ||
      read_tensor_locked(c, fo.c_str(), out, &o) || check_dtype(fn, a, b, o) || check_extent(c, fa, a) ||
      check_extent(c, fb, b) || check_extent(c, fo, o))
    return 1;
  const int64_t nd = batched ? 3 : 2;
  if (a.ndim != nd || b.ndim != nd || o.ndim != nd)
    return fail("%s: needs %" PRId64 "-d operands but got %" PRId64 "-d, %" PRId64 "-d and out %" PRId64 "-d", fn, nd,
                a.ndim, b.ndim, o.ndim);
  const int64_t off = batched ? 1 : 0;
  const int64_t B = batched ? a.sizes[0] : 1, M = a.sizes[off], K = a.sizes[off + 1], N = b.sizes[off + 1];
  if (b.sizes[off] != K || o.sizes[off] != M || o.sizes[off + 1] != N ||
      (batched && (b.sizes[0] != B || o.sizes[0] != B)))
    return fail("%s: shapes do not multiply: mat1 [%" PRId64 "x%" PRId64 "], mat2 [%" PRId64 "x%" PRId64
                "], out [%" PRId64 "x%" PRId64 "] (batch %" PRId64 ")",
                fn, M, K, b.sizes[off], N, o.sizes[off], o.sizes[off + 1], B);
  Stream* s = c->current_stream_locked();
  if (B == 0 || M == 0 || N == 0) return 0;
  auto st = [&](const TensorInfo& t, int i) { return batched ? t.strides[i] : 0; };
  // out: in place when row-major, else a temporary copied back.
  Operand oa, ob, oo;
  int rc = 0;
  const bool out_in_place = (N == 1 || o.strides[off + 1] == 1) && o.strides[off] >= N;
  TensorInfo target = o;
  void* out_temp = nullptr;
  if (!out_in_place) {
    uint64_t bytes;
    if (!mul_u64(static_cast<uint64_t>(B * M * N), static_cast<uint64_t>(o.itemsize), &bytes))
      return fail("%s: the result's byte count overflows", fn);
    if (c->allocate_locked(bytes, s, &out_temp)) return 1;
    target.buffer = out_temp;
    target.offset = 0;
  }
  const int64_t tbs = out_in_place ? st(o, 0) : M * N, trs = out_in_place ? o.strides[off] : N;
  Resolved rt;
  // beta * self into the result first (addmm), or zeros when beta is 0 and K is 0 or self is ignored.
  if (self) {
    const std::string fs = std::string(fn) + ": self";
    if (read_tensor_locked(c, fs.c_str(), self, &bias) || check_extent(c, fs, bias)) rc = 1;
    if (!rc && bias.dtype != o.dtype) rc = fail("%s: self has dtype code %d but out has %d", fn, bias.dtype, o.dtype);
    if (!rc && (bias.ndim < 1 || bias.ndim > 2 || (bias.sizes[bias.ndim - 1] != N && bias.sizes[bias.ndim - 1] != 1) ||
                (bias.ndim == 2 && bias.sizes[0] != M && bias.sizes[0] != 1)))
      rc = fail("%s: self must broadcast to [%" PRId64 "x%" PRId64 "]", fn, M, N);
    if (!rc && beta != 0.0) {
      const int64_t sizes[2] = {M, N};
      const int64_t sstr[2] = {bias.ndim == 2 && bias.sizes[0] != 1 ? bias.strides[0] : 0,
                               bias.sizes[bias.ndim - 1] != 1 ? bias.strides[bias.ndim - 1] : 0};
      const int64_t dstr[2] = {trs, 1};
      st_strided_copy_v2 d{};
      d.struct_size = sizeof d;
      d.ndim = 2;
      d.sizes = sizes;
      d.src = {bias.buffer, bias.offset, 0, 0};
      d.src_strides = sstr;
      d.src_dtype = bias.dtype;
      d.dst = {target.buffer, target.offset, 0, 0};
      d.dst_strides = dstr;
      d.dst_dtype = o.dtype;
      int64_t unused = 0;
      rc = strided_copy_locked(c, s, d, &unused);
    }
  }
  if (!rc && (!self || beta == 0.0)) {  // torch ignores the old contents when beta is 0 (NaN-safe)
    beta = 0.0;
    uint64_t bytes = static_cast<uint64_t>(B - 1) * static_cast<uint64_t>(tbs) + static_cast<uint64_t>(M - 1) * trs + N;
    rc = c->resolve_handle_locked(fn, target.buffer, target.offset, bytes * o.itemsize, &rt);
    if (!rc) {
      void* cb;
      rc = s->command_buffer(&cb);
      const uint8_t zero = 0;
      if (!rc) rc = encode_fill_locked(c, s, rt, bytes * o.itemsize, &zero, 1);
    }
  }
  if (!rc) rc = operand(c, s, a, B, M, K, st(a, 0), a.strides[off], a.strides[off + 1], &oa);
  if (!rc) rc = operand(c, s, b, B, K, N, st(b, 0), b.strides[off], b.strides[off + 1], &ob);
  if (!rc) {
    mtlb_matmul_desc d{};
    d.dtype = o.dtype;
    d.transpose_a = oa.transpose;
    d.transpose_b = ob.transpose;
    d.m = M;
    d.n = N;
    d.k = K;
    d.batch = B;
    d.alpha = alpha;
    d.beta = beta;
    d.a = oa.m;
    d.b = ob.m;
    d.c = {target.buffer,
           target.offset,
           static_cast<uint64_t>(M),
           static_cast<uint64_t>(N),
           static_cast<uint64_t>(trs) * o.itemsize,
           static_cast<uint64_t>(B == 1 ? M * trs : tbs) * o.itemsize};
    void* cb;
    char err[1024] = {0};
    rc = s->command_buffer(&cb);
    if (!rc && c->api()->matmul(c->device(), cb, &d, err, sizeof err))
      rc = fail_bridge(std::string(fn) + ": MPSMatrixMultiplication failed", err);
  }
  if (!rc && out_temp) {  // back into out's own layout
    const int64_t sizes[3] = {B, M, N};
    const int64_t sstr[3] = {M * N, N, 1};
    const int64_t dstr[3] = {st(o, 0), o.strides[off], o.strides[off + 1]};
    st_strided_copy_v2 d{};
    d.struct_size = sizeof d;
    d.ndim = 3;
    d.sizes = sizes;
    d.src = {out_temp, 0, 0, 0};
    d.src_strides = sstr;
    d.src_dtype = o.dtype;
    d.dst = {o.buffer, o.offset, 0, 0};
    d.dst_strides = dstr;
    d.dst_dtype = o.dtype;
    int64_t unused = 0;
    rc = strided_copy_locked(c, s, d, &unused);
  }
  // Temporaries go back stream-ordered: the queued work keeps them until it has run (Note [Buffer cache]).
  for (void* t : {oa.temp, ob.temp, out_temp})
    if (t) (void)c->release_locked(t, s);
  return rc;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_mps_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* fn = "aoti_torch_mps_mm_out()";
  return guarded(fn, [&] { return matmul(fn, out, nullptr, self, mat2, 0.0, 1.0, false); });
}

AOTITorchError aoti_torch_mps_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                        AtenTensorHandle mat2, double beta, double alpha) {
  const char* fn = "aoti_torch_mps_addmm_out()";
  return guarded(fn, [&] {
    if (!self) return fail("%s: needs self (the addend) but got NULL", fn);
    return matmul(fn, out, self, mat1, mat2, beta, alpha, false);
  });
}

AOTITorchError aoti_torch_mps_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* fn = "aoti_torch_mps_bmm_out()";
  return guarded(fn, [&] { return matmul(fn, out, nullptr, self, mat2, 0.0, 1.0, true); });
}

}  // extern "C"
