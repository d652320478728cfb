// conv_graph.cpp: a convolution's cuDNN graph-API execution plan (Note [Convolution plans]).
#include "aoti_ops/conv_graph.h"

namespace slimtensor_cuda::aoti_ops {
namespace {

// Unique ids of the three tensors in the operation graph and the variant pack.
constexpr int64_t kX = 1, kW = 2, kY = 3;

}  // namespace

std::vector<int64_t> ConvProblem::key(int device) const {
  std::vector<int64_t> k = {device, type, transposed, nd, x_align, w_align, y_align};
  for (int i = 0; i < nd; ++i)
    k.insert(k.end(), {x_dims[i], x_strides[i], w_dims[i], w_strides[i], y_dims[i], y_strides[i]});
  for (int i = 0; i < nd - 2; ++i) k.insert(k.end(), {pad[i], stride[i], dilation[i]});
  return k;
}

ConvGraphPlan::~ConvGraphPlan() {
  if (plan_) a_->BackendDestroyDescriptor(plan_);
  for (dnn::Desc d : owned_) a_->BackendDestroyDescriptor(d);
}

std::string ConvGraphPlan::reason(const char* what, dnn::Status st) const {
  char detail[512] = {0};
  a_->GetLastErrorString(detail, sizeof detail);
  std::string r = std::string(what) + " failed: " + a_->GetErrorString(st);
  if (detail[0] != '\0') r += std::string(" (") + detail + ")";
  return r;
}

dnn::Desc ConvGraphPlan::make(int type, std::string* why, const char* what) {
  dnn::Desc d = nullptr;
  const dnn::Status st = a_->BackendCreateDescriptor(type, &d);
  if (st != 0) {
    *why = reason(what, st);
    return nullptr;
  }
  owned_.push_back(d);
  return d;
}

#define SET(desc, name, type, count, values)                                           \
  do {                                                                                 \
    const dnn::Status st_ = a_->BackendSetAttribute(desc, name, type, count, values);  \
    if (st_ != 0) return *why = reason("cudnnBackendSetAttribute(" #name ")", st_), 1; \
  } while (0)
#define FINALIZE(desc, what)                                                      \
  do {                                                                            \
    const dnn::Status st_ = a_->BackendFinalize(desc);                            \
    if (st_ != 0) return *why = reason("cudnnBackendFinalize(" what ")", st_), 1; \
  } while (0)

int ConvGraphPlan::tensor(int64_t uid, int nd, const int64_t* dims, const int64_t* strides, int64_t align, int type,
                          dnn::Desc* out, std::string* why) {
  dnn::Desc t = make(dnn::kTensorDesc, why, "cudnnBackendCreateDescriptor(tensor)");
  if (t == nullptr) return 1;
  SET(t, dnn::kTensorDataType, dnn::kTypeDataType, 1, &type);
  SET(t, dnn::kTensorDimensions, dnn::kTypeInt64, nd, dims);
  SET(t, dnn::kTensorStrides, dnn::kTypeInt64, nd, strides);
  SET(t, dnn::kTensorUniqueId, dnn::kTypeInt64, 1, &uid);
  SET(t, dnn::kTensorByteAlignment, dnn::kTypeInt64, 1, &align);
  FINALIZE(t, "tensor");
  *out = t;
  return 0;
}

int ConvGraphPlan::build(dnn::Handle h, const ConvProblem& p, std::string* why) {
  dnn::Desc x = nullptr, w = nullptr, y = nullptr;
  if (tensor(kX, p.nd, p.x_dims, p.x_strides, p.x_align, p.type, &x, why) ||
      tensor(kW, p.nd, p.w_dims, p.w_strides, p.w_align, p.type, &w, why) ||
      tensor(kY, p.nd, p.y_dims, p.y_strides, p.y_align, p.type, &y, why))
    return 1;

  dnn::Desc conv = make(dnn::kConvolutionDesc, why, "cudnnBackendCreateDescriptor(convolution)");
  if (conv == nullptr) return 1;
  const int64_t nsp = p.nd - 2;
  const int comp = dnn::kFloat, mode = dnn::kCrossCorrelation;
  SET(conv, dnn::kConvSpatialDims, dnn::kTypeInt64, 1, &nsp);
  SET(conv, dnn::kConvCompType, dnn::kTypeDataType, 1, &comp);
  SET(conv, dnn::kConvMode, dnn::kTypeConvolutionMode, 1, &mode);
  SET(conv, dnn::kConvPrePaddings, dnn::kTypeInt64, nsp, p.pad);
  SET(conv, dnn::kConvPostPaddings, dnn::kTypeInt64, nsp, p.pad);
  SET(conv, dnn::kConvFilterStrides, dnn::kTypeInt64, nsp, p.stride);
  SET(conv, dnn::kConvDilations, dnn::kTypeInt64, nsp, p.dilation);
  FINALIZE(conv, "convolution");

  // y = conv(x, w), or for a transposed convolution x = conv(y, w) solved for y (backward data: dy = x, dx = y).
  const float one = 1.0f, zero = 0.0f;
  dnn::Desc op = make(p.transposed ? dnn::kConvBackwardDataOpDesc : dnn::kConvForwardOpDesc, why,
                      "cudnnBackendCreateDescriptor(convolution operation)");
  if (op == nullptr) return 1;
  if (!p.transposed) {
    SET(op, dnn::kConvFwdX, dnn::kTypeDescriptor, 1, &x);
    SET(op, dnn::kConvFwdW, dnn::kTypeDescriptor, 1, &w);
    SET(op, dnn::kConvFwdY, dnn::kTypeDescriptor, 1, &y);
    SET(op, dnn::kConvFwdConvDesc, dnn::kTypeDescriptor, 1, &conv);
    SET(op, dnn::kConvFwdAlpha, dnn::kTypeFloat, 1, &one);
    SET(op, dnn::kConvFwdBeta, dnn::kTypeFloat, 1, &zero);
  } else {
    SET(op, dnn::kConvBwdDataDy, dnn::kTypeDescriptor, 1, &x);
    SET(op, dnn::kConvBwdDataW, dnn::kTypeDescriptor, 1, &w);
    SET(op, dnn::kConvBwdDataDx, dnn::kTypeDescriptor, 1, &y);
    SET(op, dnn::kConvBwdDataConvDesc, dnn::kTypeDescriptor, 1, &conv);
    SET(op, dnn::kConvBwdDataAlpha, dnn::kTypeFloat, 1, &one);
    SET(op, dnn::kConvBwdDataBeta, dnn::kTypeFloat, 1, &zero);
  }
  FINALIZE(op, "convolution operation");

  dnn::Desc graph = make(dnn::kOperationGraphDesc, why, "cudnnBackendCreateDescriptor(operation graph)");
  if (graph == nullptr) return 1;
  SET(graph, dnn::kGraphOps, dnn::kTypeDescriptor, 1, &op);
  SET(graph, dnn::kGraphHandle, dnn::kTypeHandle, 1, &h);
  FINALIZE(graph, "operation graph");

  dnn::Desc heur = make(dnn::kEngineHeuristicsDesc, why, "cudnnBackendCreateDescriptor(engine heuristics)");
  if (heur == nullptr) return 1;
  const int heur_mode = dnn::kHeurInstant;  // torch's default (benchmark=False): the heuristics' ranking
  SET(heur, dnn::kHeurOperationGraph, dnn::kTypeDescriptor, 1, &graph);
  SET(heur, dnn::kHeurMode, dnn::kTypeHeurMode, 1, &heur_mode);
  FINALIZE(heur, "engine heuristics");

  constexpr int kMaxConfigs = 16;
  dnn::Desc configs[kMaxConfigs];
  for (dnn::Desc& c : configs)
    if ((c = make(dnn::kEngineConfigDesc, why, "cudnnBackendCreateDescriptor(engine config)")) == nullptr) return 1;
  int64_t n = 0;
  const dnn::Status got =
      a_->BackendGetAttribute(heur, dnn::kHeurResults, dnn::kTypeDescriptor, kMaxConfigs, &n, configs);
  if (got != 0) return *why = reason("cudnnBackendGetAttribute(engine heuristics results)", got), 1;
  // The first ranked engine whose plan finalizes (some need a feature this GPU or this cuDNN lacks).
  std::string last = "cuDNN's heuristics ranked no engine for it";
  for (int64_t i = 0; i < n && i < kMaxConfigs; ++i) {
    dnn::Desc plan = nullptr;
    dnn::Status st = a_->BackendCreateDescriptor(dnn::kExecutionPlanDesc, &plan);
    if (st != 0) return *why = reason("cudnnBackendCreateDescriptor(execution plan)", st), 1;
    st = a_->BackendSetAttribute(plan, dnn::kPlanHandle, dnn::kTypeHandle, 1, &h);
    if (st == 0) st = a_->BackendSetAttribute(plan, dnn::kPlanEngineConfig, dnn::kTypeDescriptor, 1, &configs[i]);
    if (st == 0) st = a_->BackendFinalize(plan);
    int64_t count = 0, bytes = 0;
    if (st == 0) st = a_->BackendGetAttribute(plan, dnn::kPlanWorkspaceSize, dnn::kTypeInt64, 1, &count, &bytes);
    if (st == 0) {
      plan_ = plan;
      workspace_ = bytes;
      return 0;
    }
    last = reason("finalizing the execution plan of every ranked engine", st);
    a_->BackendDestroyDescriptor(plan);
  }
  *why = last;
  return 1;
}

dnn::Status ConvGraphPlan::run(dnn::Handle h, const void* x, const void* w, void* y, void* workspace,
                               std::string* why) const {
  // A variant pack per call: it names this call's memory (torch's cuDNN convolutions do the same).
  dnn::Desc pack = nullptr;
  dnn::Status st = a_->BackendCreateDescriptor(dnn::kVariantPackDesc, &pack);
  if (st != 0) return *why = reason("cudnnBackendCreateDescriptor(variant pack)", st), st;
  const int64_t uids[3] = {kX, kW, kY};
  void* ptrs[3] = {const_cast<void*>(x), const_cast<void*>(w), y};
  const char* what = "cudnnBackendSetAttribute(variant pack)";
  st = a_->BackendSetAttribute(pack, dnn::kPackUniqueIds, dnn::kTypeInt64, 3, uids);
  if (st == 0) st = a_->BackendSetAttribute(pack, dnn::kPackDataPointers, dnn::kTypeVoidPtr, 3, ptrs);
  if (st == 0) st = a_->BackendSetAttribute(pack, dnn::kPackWorkspace, dnn::kTypeVoidPtr, 1, &workspace);
  if (st == 0) what = "cudnnBackendFinalize(variant pack)", st = a_->BackendFinalize(pack);
  if (st == 0) what = "cudnnBackendExecute", st = a_->BackendExecute(h, plan_, pack);
  if (st != 0) *why = reason(what, st);
  a_->BackendDestroyDescriptor(pack);
  return st;
}

}  // namespace slimtensor_cuda::aoti_ops
