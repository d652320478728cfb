// cudnn_api.cpp: cuDNN opened at run time (Note [NVIDIA libraries at run time]).
#include "aoti_ops/cudnn_api.h"

#include <mutex>

#include "aoti_ops/nvidia_library.h"
#include "device/error.h"
#include "device/runtime.h"

namespace slimtensor_cuda::aoti_ops::dnn {
namespace {

const NvidiaLibrary kCudnn = {"cuDNN", "libcudnn.so.9", "nvidia-cudnn-cu13", "cudnn/lib:cu13/lib",
                              "libcudnn_graph.so.9:libcudnn_engines_precompiled.so.9:"
                              "libcudnn_engines_runtime_compiled.so.9:libcudnn_heuristic.so.9:libcudnn_ops.so.9:"
                              "libcudnn_cnn.so.9"};

const char* const kNames[] = {"cudnnCreate",
                              "cudnnSetStream",
                              "cudnnGetErrorString",
                              "cudnnCreateTensorDescriptor",
                              "cudnnSetTensorNdDescriptor",
                              "cudnnDestroyTensorDescriptor",
                              "cudnnCreateFilterDescriptor",
                              "cudnnSetFilterNdDescriptor",
                              "cudnnDestroyFilterDescriptor",
                              "cudnnCreateConvolutionDescriptor",
                              "cudnnSetConvolutionNdDescriptor",
                              "cudnnSetConvolutionGroupCount",
                              "cudnnSetConvolutionMathType",
                              "cudnnDestroyConvolutionDescriptor",
                              "cudnnGetConvolutionForwardAlgorithm_v7",
                              "cudnnGetConvolutionForwardWorkspaceSize",
                              "cudnnConvolutionForward",
                              "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                              "cudnnGetConvolutionBackwardDataWorkspaceSize",
                              "cudnnConvolutionBackwardData",
                              "cudnnAddTensor",
                              nullptr};
static_assert(sizeof(Api) == (sizeof(kNames) / sizeof(kNames[0]) - 1) * sizeof(void*),
              "one name per Api member, in order");

std::mutex g_mutex;
Api g_api;
bool g_loaded = false;
Handle g_handles[kMaxDevices] = {};

}  // namespace

const Api* api(const char* op) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_loaded) return &g_api;
  void* lib = open_nvidia_library(op, kCudnn);
  if (lib == nullptr) return nullptr;
  if (!load_symbols(op, kCudnn, lib, kNames, reinterpret_cast<void**>(&g_api))) return nullptr;
  g_loaded = true;
  return &g_api;
}

int handle(const char* op, int device, cudaStream_t stream, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  if (device < 0 || device >= kMaxDevices) return fail("%s(): device index %d is out of range", op, device);
  // One handle per device shared by threads: cudnnSetStream + the call are not atomic, so calls are serialised
  // by the caller holding conv_mutex() (convolution_op.cpp).
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_handles[device] == nullptr) {
    const Status st = a->Create(&g_handles[device]);
    if (st != 0) return fail("%s(): cudnnCreate failed: %s", op, a->GetErrorString(st));
  }
  const Status st = a->SetStream(g_handles[device], stream);
  if (st != 0) return fail("%s(): cudnnSetStream failed: %s", op, a->GetErrorString(st));
  *out = g_handles[device];
  return 0;
}

}  // namespace slimtensor_cuda::aoti_ops::dnn
