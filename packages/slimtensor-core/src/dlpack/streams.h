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
// Whether a device has DLPack streams is the plugin's to say (stream_to_dlpack/stream_from_dlpack of ABI
// 1.1). The consumer's stream becomes a stream of the device through the plugin, and waits for the
// producer's current stream (slimtensor::streams::order_after: an event, or a synchronize without events).
// On import slimtensor is the consumer: it passes its current stream's DLPack value (consumer_stream).
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor::dlpack {

// Orders the consumer's stream after the producer's work for an export of memory on `device`;
// `has_stream` false means stream=None. Throws Error(Value) naming `function` for a value the rules
// above refuse, and Error(Runtime) when the plugin fails.
SLIMTENSOR_API void order_export(Device device, bool has_stream, int64_t stream, const char* function);
// The DLPack value of the current stream of `device` for a producer's __dlpack__(stream=...); false when
// the device has no DLPack streams (the CPU, kDLMetal): then no stream is passed.
SLIMTENSOR_API bool consumer_stream(Device device, int64_t* value);

}  // namespace slimtensor::dlpack
