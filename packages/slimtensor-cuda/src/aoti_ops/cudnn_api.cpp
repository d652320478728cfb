// cudnn_api.cpp: cuDNN opened at run time (Note [NVIDIA libraries at run time]).
#include "aoti_ops/cudnn_api.h"

#include "aoti_ops/nvidia_library.h"
#include "device/error.h"

namespace slimtensor_cuda::aoti_ops::dnn {
namespace {

const NvidiaLibrary kCudnn = {"cuDNN", "libcudnn.so.9", "nvidia-cudnn-cu13", "cudnn/lib:cu13/lib",
                              "libcudnn_graph.so.9:libcudnn_engines_precompiled.so.9:"
                              "libcudnn_engines_runtime_compiled.so.9:libcudnn_heuristic.so.9:libcudnn_ops.so.9:"
                              "libcudnn_cnn.so.9"};

const char* const kNames[] = {"cudnnCreate",
                              "cudnnSetStream",
                              "cudnnGetErrorString",
                              "cudnnGetLastErrorString",
                              "cudnnBackendCreateDescriptor",
                              "cudnnBackendDestroyDescriptor",
                              "cudnnBackendFinalize",
                              "cudnnBackendSetAttribute",
                              "cudnnBackendGetAttribute",
                              "cudnnBackendExecute"};

NvidiaApi<Api> g_api(kCudnn, kNames);  // Note [One function table per library]
DeviceHandles<Handle> g_handles;

}  // namespace

const Api* api(const char* op) { return g_api.get(op); }

int handle(const char* op, int device, cudaStream_t stream, Handle* out) {
  const Api* a = api(op);
  if (a == nullptr) return 1;
  const int rc = g_handles.get(
      op, device,
      [&](Handle* h) {
        const Status st = a->Create(h);
        return st == 0 ? 0 : fail("%s(): cudnnCreate failed: %s", op, a->GetErrorString(st));
      },
      out);
  if (rc != 0) return rc;
  // One handle per device shared by threads: cudnnSetStream + the call are not atomic, so calls are serialised
  // by the caller holding conv_mutex() (convolution_op.cpp).
  const Status st = a->SetStream(*out, stream);
  if (st != 0) return fail("%s(): cudnnSetStream failed: %s", op, a->GetErrorString(st));
  return 0;
}

}  // namespace slimtensor_cuda::aoti_ops::dnn
