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
                              "cudnnAddTensor"};

NvidiaApi<Api> g_api(kCudnn, kNames);  // Note [One function table per library]
std::mutex g_handles_mutex;
Handle g_handles[kMaxDevices] = {};

}  // namespace

const Api* api(const char* op) { return g_api.get(op); }

int handle(const char* op, int device, cudaStream_t stream, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  if (device < 0 || device >= kMaxDevices) return fail("%s(): device index %d is out of range", op, device);
  // One handle per device shared by threads: cudnnSetStream + the call are not atomic, so calls are serialised
  // by the caller holding conv_mutex() (convolution_op.cpp).
  std::lock_guard<std::mutex> lock(g_handles_mutex);
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
