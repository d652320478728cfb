// dlpack/streams.h: DLPack's stream handshake on export: which stream the consumer named, and ordering it
// after the producer's work.
//
// Note [DLPack streams]
// __dlpack__(stream=...) names the consumer's stream; the producer must make that stream wait for the
// work queued so far on its own (current) stream before the consumer uses the memory. The values follow
// the DLPack specification exactly:
//   - kDLCPU: stream must be None.
//   - kDLCUDA / kDLROCM: None -> the legacy default stream (value 1); -1 -> no synchronisation at all;
//     0 -> an error (ambiguous: the specification forbids it); 1 / 2 -> the legacy / per-thread default
//     stream; any other value -> that stream (a cudaStream_t the consumer owns).
//   - any other device (kDLMetal, plugins that declare no DLPack stream): stream must be None, and the
//     export waits until the device's current stream has finished its queued work.
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor::dlpack {

// Orders the consumer's stream after the producer's work for an export of memory on `device`;
// `has_stream` false means stream=None. Throws Error(Value) naming `function` for a value the rules
// above refuse, and Error(Runtime) when the plugin fails.
SLIMTENSOR_API void order_export(Device device, bool has_stream, int64_t stream, const char* function);

}  // namespace slimtensor::dlpack
