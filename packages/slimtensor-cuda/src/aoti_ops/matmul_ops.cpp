// matmul_ops.cpp: aoti_torch_cuda_{mm,addmm,bmm,baddbmm}_out on cuBLASLt.
//
// Note [Row-major matmul on cuBLASLt]
// cuBLASLt is column-major. A row-major C (M x N) = A (M x K) . B (K x N) is the column-major problem
// C^T (N x M) = B^T (N x K) . A^T (K x M): a row-major operand is its own transpose in column-major terms
// (opN with ld = its row stride), a column-major operand (stride 1 along rows: a transposed view, as AOTI
// passes weights) is opT with ld = its column stride. So transposed operands cost nothing; any other layout
// (neither dimension of stride 1, or overlapping rows) is first copied contiguous through the plugin's copy
// kernels. An output that is column-major is handled by transposing the whole problem (C^T = B^T . A^T); any
// other output layout is computed into a contiguous temporary and copied back.
//
// Note [Matmul precision]
// float32 runs with CUBLAS_COMPUTE_32F: full float32, no TF32, as torch's default
// (torch.backends.cuda.matmul.allow_tf32 is False). bfloat16 and float16 accumulate in float32 (scale type
// float32), as torch does; cuBLASLt may reduce split-K partials in the output type, which torch also allows by
// default (allow_bf16/fp16_reduced_precision_reduction).
//
// Note [Matmul epilogue and plans]
// addmm with a bias vector (self of shape (N,) or (1, N) broadcast over rows) and beta == 1 uses
// CUBLASLT_EPILOGUE_BIAS (the bias added in the GEMM's epilogue, no extra pass over C); other addmm/baddbmm
// selves are copied into out first (broadcast) and the GEMM runs with beta. The algorithm cuBLASLt's
// heuristic picks is cached per problem (shape, layouts, dtype, alignments, epilogue, device), so a model run
// pays the heuristic once per distinct matmul; the workspace (what the algorithm needs, at most 32 MiB, as
// torch gives cuBLAS on Hopper) comes from the plugin's caching allocator per call.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "aoti_ops/cublaslt_api.h"
#include "aoti_ops/op_support.h"
#include "slimtensor/c/shim_cuda_ops.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

constexpr uint64_t kMaxWorkspace = 32ull << 20;

// One operand of the column-major problem.
struct LtOperand {
  const void* data;
  int32_t op;     // lt::kOpN / kOpT
  uint64_t rows;  // of the stored (pre-op) column-major matrix
  uint64_t cols;
  int64_t ld;
  int64_t batch_stride;
};

int cuda_type(int32_t dtype) { return dtype == kFloat32 ? lt::kR32F : dtype == kBFloat16 ? lt::kR16BF : lt::kR16F; }

// Largest power of two <= 256 dividing the address (cuBLASLt's alignment preference).
uint32_t alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 1 && (a % al) != 0) al /= 2;
  return al;
}

uint32_t log2_of(uint32_t v) {
  uint32_t l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

// A matrix view: rows x cols with row stride rs and column stride cs (elements), the last two dims of t.
struct Mat {
  const void* data;
  int64_t rows, cols, rs, cs, batch, batch_stride;
};

Mat mat_of(const TensorInfo& t) {
  const int64_t n = t.ndim;
  Mat m{t.data, t.sizes[n - 2], t.sizes[n - 1], t.strides[n - 2], t.strides[n - 1], 1, 0};
  if (n == 3) {
    m.batch = t.sizes[0];
    m.batch_stride = t.strides[0];
  }
  return m;
}

// Row-major (cs == 1) or column-major (rs == 1) with a valid leading dimension; size-1 dims accept any stride.
bool row_major(const Mat& m) { return (m.cols == 1 || m.cs == 1) && (m.rows == 1 || m.rs >= m.cols) && m.rs >= 0; }
bool col_major(const Mat& m) { return (m.rows == 1 || m.rs == 1) && (m.cols == 1 || m.cs >= m.rows) && m.cs >= 0; }

// Note [Row-major matmul on cuBLASLt]: the column-major operand for X^T where X is a row- or column-major Mat.
LtOperand transposed_operand(const Mat& x) {
  if (row_major(x))  // stored column-major as (cols x rows), which is X^T: opN
    return {
        x.data,        lt::kOpN, uint64_t(x.cols), uint64_t(x.rows), std::max<int64_t>(x.rows == 1 ? x.cols : x.rs, 1),
        x.batch_stride};
  // column-major X (rows x cols, ld cs): X^T is opT of it
  return {
      x.data,        lt::kOpT, uint64_t(x.rows), uint64_t(x.cols), std::max<int64_t>(x.cols == 1 ? x.rows : x.cs, 1),
      x.batch_stride};
}

using PlanKey = std::tuple<int, int32_t, int32_t, int32_t, uint64_t, uint64_t, uint64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, uint32_t, uint32_t>;
std::mutex g_plan_mutex;
std::map<PlanKey, lt::HeuristicResult>* g_plans = new std::map<PlanKey, lt::HeuristicResult>;  // process lifetime

struct Descriptors {
  const lt::Api* a;
  lt::MatmulDesc desc = nullptr;
  lt::MatrixLayout la = nullptr, lb = nullptr, lc = nullptr;
  lt::Preference pref = nullptr;
  ~Descriptors() {
    if (pref) a->MatmulPreferenceDestroy(pref);
    if (lc) a->MatrixLayoutDestroy(lc);
    if (lb) a->MatrixLayoutDestroy(lb);
    if (la) a->MatrixLayoutDestroy(la);
    if (desc) a->MatmulDescDestroy(desc);
  }
};

#define LT_TRY(what, call)                                                               \
  do {                                                                                   \
    const lt::Status st_ = (call);                                                       \
    if (st_ != 0) return fail("%s(): %s failed: %s", op, what, a->GetStatusString(st_)); \
  } while (0)

int set_batch(const char* op, const lt::Api* a, lt::MatrixLayout l, int32_t batch, int64_t stride) {
  if (batch <= 1) return 0;
  LT_TRY("cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)",
         a->MatrixLayoutSetAttribute(l, lt::kLayoutBatchCount, &batch, sizeof batch));
  LT_TRY("cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)",
         a->MatrixLayoutSetAttribute(l, lt::kLayoutBatchStride, &stride, sizeof stride));
  return 0;
}

// D (column-major rows x cols, ld, batch stride) = alpha * opX(X) . opY(Y) + beta * D (+ bias per D row).
int run_gemm(const char* op, int device, int32_t dtype, const LtOperand& x, const LtOperand& y, void* d,
             uint64_t d_rows, uint64_t d_cols, int64_t ldd, int64_t d_batch_stride, int32_t batch, float alpha,
             float beta, const void* bias) {
  const lt::Api* a = lt::api(op);
  if (a == nullptr) return 1;
  lt::Handle h = nullptr;
  if (lt::handle(op, device, &h)) return 1;
  const uint64_t k = x.op == lt::kOpN ? x.cols : x.rows;
  const int type = cuda_type(dtype);
  Descriptors ds{a};
  LT_TRY("cublasLtMatmulDescCreate", a->MatmulDescCreate(&ds.desc, lt::kCompute32F, lt::kR32F));
  LT_TRY("cublasLtMatmulDescSetAttribute(TRANSA)",
         a->MatmulDescSetAttribute(ds.desc, lt::kDescTransA, &x.op, sizeof x.op));
  LT_TRY("cublasLtMatmulDescSetAttribute(TRANSB)",
         a->MatmulDescSetAttribute(ds.desc, lt::kDescTransB, &y.op, sizeof y.op));
  const uint32_t epilogue = bias ? lt::kEpilogueBias : lt::kEpilogueDefault;
  LT_TRY("cublasLtMatmulDescSetAttribute(EPILOGUE)",
         a->MatmulDescSetAttribute(ds.desc, lt::kDescEpilogue, &epilogue, sizeof epilogue));
  if (bias)
    LT_TRY("cublasLtMatmulDescSetAttribute(BIAS_POINTER)",
           a->MatmulDescSetAttribute(ds.desc, lt::kDescBiasPointer, &bias, sizeof bias));
  LT_TRY("cublasLtMatrixLayoutCreate(A)", a->MatrixLayoutCreate(&ds.la, type, x.rows, x.cols, x.ld));
  LT_TRY("cublasLtMatrixLayoutCreate(B)", a->MatrixLayoutCreate(&ds.lb, type, y.rows, y.cols, y.ld));
  LT_TRY("cublasLtMatrixLayoutCreate(D)", a->MatrixLayoutCreate(&ds.lc, type, d_rows, d_cols, ldd));
  if (set_batch(op, a, ds.la, batch, x.batch_stride) || set_batch(op, a, ds.lb, batch, y.batch_stride) ||
      set_batch(op, a, ds.lc, batch, d_batch_stride))
    return 1;

  const uint32_t al_a = alignment_of(x.data), al_b = alignment_of(y.data), al_d = alignment_of(d);
  const uint32_t al_bias = bias ? alignment_of(bias) : 256;
  const uint32_t alignments = log2_of(al_a) | log2_of(al_b) << 4 | log2_of(al_d) << 8 | log2_of(al_bias) << 12;
  const PlanKey key{device, dtype, x.op,  y.op,           d_rows,         d_cols,         k,        x.ld,
                    y.ld,   ldd,   batch, x.batch_stride, y.batch_stride, d_batch_stride, epilogue, alignments};
  lt::HeuristicResult plan{};
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    auto it = g_plans->find(key);
    if (it != g_plans->end()) {
      plan = it->second;
      cached = true;
    }
  }
  if (!cached) {
    LT_TRY("cublasLtMatmulPreferenceCreate", a->MatmulPreferenceCreate(&ds.pref));
    const uint64_t ws = kMaxWorkspace;
    LT_TRY("cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)",
           a->MatmulPreferenceSetAttribute(ds.pref, lt::kPrefMaxWorkspace, &ws, sizeof ws));
    const uint32_t als[4] = {al_a, al_b, al_d, al_d};
    for (int i = 0; i < 4; ++i)
      LT_TRY("cublasLtMatmulPreferenceSetAttribute(MIN_ALIGNMENT)",
             a->MatmulPreferenceSetAttribute(ds.pref, lt::kPrefMinAlignmentA + i, &als[i], sizeof als[i]));
    int returned = 0;
    const lt::Status st =
        a->MatmulAlgoGetHeuristic(h, ds.desc, ds.la, ds.lb, ds.lc, ds.lc, ds.pref, 1, &plan, &returned);
    if (st != 0 || returned == 0)
      return fail("%s(): cuBLASLt has no algorithm for this %s matmul (m=%llu, n=%llu, k=%llu, batch %d%s): %s", op,
                  dtype_name(dtype), static_cast<unsigned long long>(d_cols), static_cast<unsigned long long>(d_rows),
                  static_cast<unsigned long long>(k), batch, bias ? ", bias epilogue" : "",
                  st != 0 ? a->GetStatusString(st) : "no heuristic result");
    std::lock_guard<std::mutex> lock(g_plan_mutex);
    g_plans->emplace(key, plan);
  }
  OwnedHandle workspace;
  void* ws_ptr = nullptr;
  if (plan.workspace_size > 0) {
    const int64_t n = static_cast<int64_t>(plan.workspace_size);
    if (new_tensor(op, 1, &n, nullptr, /*uint8*/ 0, device, workspace.out())) return 1;
    aoti_torch_get_data_ptr(workspace.get(), &ws_ptr);
  }
  LT_TRY("cublasLtMatmul", a->Matmul(h, ds.desc, &alpha, x.data, ds.la, y.data, ds.lb, &beta, d, ds.lc, d, ds.lc,
                                     &plan.algo, ws_ptr, plan.workspace_size, op_stream(device)));
  return 0;
}

// out (M x N or B x M x N) = alpha * mat1 . mat2 + beta * out (+ bias over columns); Note [Row-major matmul].
int matmul_into(const char* op, const TensorInfo& out_in, const TensorInfo& m1_in, const TensorInfo& m2_in, float alpha,
                float beta, const void* bias) {
  TensorInfo m1 = m1_in, m2 = m2_in;
  OwnedHandle c1, c2, tmp;
  if (!row_major(mat_of(m1)) && !col_major(mat_of(m1)) && contiguous_copy(op, m1_in, &m1, c1.out())) return 1;
  if (!row_major(mat_of(m2)) && !col_major(mat_of(m2)) && contiguous_copy(op, m2_in, &m2, c2.out())) return 1;
  Mat a = mat_of(m1), b = mat_of(m2), c = mat_of(out_in);
  const int32_t batch = static_cast<int32_t>(c.batch);
  if (a.batch == 1) a.batch_stride = 0;
  if (b.batch == 1) b.batch_stride = 0;
  // Output: row-major as is; column-major by transposing the problem (no bias epilogue then); else a temporary.
  TensorInfo out = out_in;
  bool via_tmp = false;
  const bool out_batch_ok = batch <= 1 || c.batch_stride >= c.rows * c.cols;
  if (!(row_major(c) && out_batch_ok) && !(col_major(c) && out_batch_ok && bias == nullptr)) {
    if (new_tensor(op, out_in.ndim, out_in.sizes, nullptr, out_in.dtype, out_in.device, tmp.out()) ||
        read_tensor(op, "a temporary", tmp.get(), &out))
      return 1;
    if (beta != 0.0f && copy_into(op, tmp.get(), out_in.handle)) return 1;
    c = mat_of(out);
    via_tmp = true;
  }
  if (c.batch == 1) c.batch_stride = 0;
  int rc;
  if (row_major(c)) {  // C^T (N x M) = B^T . A^T
    rc = run_gemm(op, out.device, out.dtype, transposed_operand(b), transposed_operand(a), const_cast<void*>(c.data),
                  uint64_t(c.cols), uint64_t(c.rows), std::max<int64_t>(c.rows == 1 ? c.cols : c.rs, 1), c.batch_stride,
                  batch, alpha, beta, bias);
  } else {  // column-major C: C (M x N) = A . B, i.e. (A^T)^T . (B^T)^T
    Mat at{a.data, a.cols, a.rows, a.cs, a.rs, a.batch, a.batch_stride};
    Mat bt{b.data, b.cols, b.rows, b.cs, b.rs, b.batch, b.batch_stride};
    rc = run_gemm(op, out.device, out.dtype, transposed_operand(at), transposed_operand(bt), const_cast<void*>(c.data),
                  uint64_t(c.rows), uint64_t(c.cols), std::max<int64_t>(c.cols == 1 ? c.rows : c.cs, 1), c.batch_stride,
                  batch, alpha, beta, nullptr);
  }
  if (rc) return 1;
  return via_tmp ? copy_into(op, out_in.handle, tmp.get()) : 0;
}

int check_dtypes(const char* op, const TensorInfo& out, const TensorInfo& a, const TensorInfo& b) {
  if (!is_matmul_dtype(out.dtype))
    return fail("%s(): out is %s; supported dtypes are float32, bfloat16 and float16", op, dtype_name(out.dtype));
  if (a.dtype != out.dtype || b.dtype != out.dtype)
    return fail("%s(): operands must share out's dtype %s, got %s and %s", op, dtype_name(out.dtype),
                dtype_name(a.dtype), dtype_name(b.dtype));
  if (a.device != out.device || b.device != out.device)
    return fail("%s(): operands are on cuda:%d and cuda:%d but out is on cuda:%d; move them to one GPU", op, a.device,
                b.device, out.device);
  return 0;
}

// The shape rules of mm/bmm: (M,K) x (K,N) -> (M,N), with a leading batch dim when batched.
int check_shapes(const char* op, const TensorInfo& out, const TensorInfo& a, const TensorInfo& b, bool batched) {
  const int64_t nd = batched ? 3 : 2;
  if (a.ndim != nd || b.ndim != nd || out.ndim != nd)
    return fail("%s(): expects %lld-D operands and out, got %s, %s and out %s", op, static_cast<long long>(nd),
                shape_text(a).c_str(), shape_text(b).c_str(), shape_text(out).c_str());
  const int64_t o = batched ? 1 : 0;
  const bool ok = a.sizes[o + 1] == b.sizes[o] && out.sizes[o] == a.sizes[o] && out.sizes[o + 1] == b.sizes[o + 1] &&
                  (!batched || (a.sizes[0] == b.sizes[0] && out.sizes[0] == a.sizes[0]));
  if (!ok)
    return fail("%s(): shapes do not multiply: %s x %s into out %s", op, shape_text(a).c_str(), shape_text(b).c_str(),
                shape_text(out).c_str());
  for (int64_t i = 0; i < nd; ++i)
    if (out.sizes[i] > INT32_MAX || a.sizes[i] > INT32_MAX || b.sizes[i] > INT32_MAX)
      return fail("%s(): a dimension exceeds 2^31-1, which cuBLASLt does not take", op);
  return 0;
}

// Shared body of the four ops. self_handle: addmm/baddbmm's self (null for mm/bmm).
int matmul_op(const char* op, AtenTensorHandle out_h, AtenTensorHandle self_h, AtenTensorHandle a_h,
              AtenTensorHandle b_h, double beta, double alpha, bool batched) {
  TensorInfo out, a, b, self;
  if (read_tensor(op, "out", out_h, &out) || read_tensor(op, batched ? "batch1" : "mat1", a_h, &a) ||
      read_tensor(op, batched ? "batch2" : "mat2", b_h, &b) || check_dtypes(op, out, a, b) ||
      check_shapes(op, out, a, b, batched))
    return 1;
  if (!std::isfinite(alpha) || !std::isfinite(beta))
    return fail("%s(): alpha and beta must be finite, got alpha=%g beta=%g", op, alpha, beta);
  if (self_h != nullptr) {
    if (read_tensor(op, "self", self_h, &self)) return 1;
    if (self.dtype != out.dtype)
      return fail("%s(): self is %s but out is %s; pass self in out's dtype", op, dtype_name(self.dtype),
                  dtype_name(out.dtype));
  }
  DeviceGuard guard(out.device);
  if (check_device_guard(op, guard)) return 1;
  if (out.numel() == 0) return 0;
  const int64_t k = a.sizes[a.ndim - 1];
  const void* bias = nullptr;
  float beta_f = 0.0f;
  if (self_h != nullptr && beta != 0.0) {
    const int64_t n = out.sizes[out.ndim - 1];
    // Note [Matmul epilogue and plans]: a contiguous bias vector over columns, beta == 1, 2-D.
    const bool vector =
        !batched && ((self.ndim == 1 && self.sizes[0] == n && (n == 1 || self.strides[0] == 1)) ||
                     (self.ndim == 2 && self.sizes[0] == 1 && self.sizes[1] == n && (n == 1 || self.strides[1] == 1)));
    const Mat c = mat_of(out);
    if (vector && beta == 1.0 && k > 0 && row_major(c)) {
      bias = self.data;
    } else {
      if (self.data != out.data || std::memcmp(self.strides, out.strides, sizeof(int64_t) * out.ndim) != 0 ||
          self.ndim != out.ndim) {
        if (aoti_torch_copy_(out_h, self_h, 1))  // broadcasts self over out (the core's copy_)
          return fail("%s(): self %s does not broadcast to out %s: %s", op, shape_text(self).c_str(),
                      shape_text(out).c_str(), slimtensor_last_error());
      }
      beta_f = static_cast<float>(beta);
    }
  }
  if (k == 0) {  // an empty sum: out = beta * self (copied above) or zeros
    if (bias != nullptr || (self_h != nullptr && beta != 0.0 && beta != 1.0))
      return fail("%s(): k == 0 with beta=%g is not supported; only beta 0 or 1", op, beta);
    if (self_h == nullptr || beta == 0.0) {
      if (aoti_torch_zero_(out_h)) return fail("%s(): zeroing out failed: %s", op, slimtensor_last_error());
    }
    return 0;
  }
  return matmul_into(op, out, a, b, static_cast<float>(alpha), beta_f, bias);
}

}  // namespace
}  // namespace slimtensor_cuda::aoti_ops

using slimtensor_cuda::aoti_ops::guarded;
using slimtensor_cuda::aoti_ops::matmul_op;

extern "C" {

AOTITorchError aoti_torch_cuda_mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* op = "aoti_torch_cuda_mm_out";
  return guarded(op, [&] { return matmul_op(op, out, nullptr, self, mat2, 0.0, 1.0, false); });
}

AOTITorchError aoti_torch_cuda_addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
                                         AtenTensorHandle mat2, double beta, double alpha) {
  const char* op = "aoti_torch_cuda_addmm_out";
  return guarded(op, [&] {
    if (self == nullptr) return slimtensor_cuda::fail("%s(): self is a null AtenTensorHandle; pass a tensor", op);
    return matmul_op(op, out, self, mat1, mat2, beta, alpha, false);
  });
}

AOTITorchError aoti_torch_cuda_bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  const char* op = "aoti_torch_cuda_bmm_out";
  return guarded(op, [&] { return matmul_op(op, out, nullptr, self, mat2, 0.0, 1.0, true); });
}

AOTITorchError aoti_torch_cuda_baddbmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle batch1,
                                           AtenTensorHandle batch2, double beta, double alpha) {
  const char* op = "aoti_torch_cuda_baddbmm_out";
  return guarded(op, [&] {
    if (self == nullptr) return slimtensor_cuda::fail("%s(): self is a null AtenTensorHandle; pass a tensor", op);
    return matmul_op(op, out, self, batch1, batch2, beta, alpha, true);
  });
}

}  // extern "C"
