// slimtensor/runtime/streams.h: the streams of plugin devices: current, synchronise, order, DLPack numbers.
//
// Note [Streams in the core]
// The core queues all its device work on the calling thread's current stream of the device
// (ST_STREAM_CURRENT; Note [Streams] in c/device_plugin.h). These functions let the rest of the core and
// its users wait for that work, order one stream after another (the DLPack handshake), and translate
// streams to and from DLPack's integers. The CPU has no streams: every function is a no-op for it (current
// is nullptr). Devices are resolved first (index -1: the current device). Failures throw Error(Runtime)
// with the plugin's own message.
#pragma once

#include <cstdint>

#include "slimtensor/base/export.h"
#include "slimtensor/c/device_plugin.h"
#include "slimtensor/tensor/device.h"

namespace slimtensor::streams {

// The plugin's current stream of d (a real stream, never ST_STREAM_CURRENT); nullptr for the CPU and for an
// ABI 1.0 plugin without current_stream.
SLIMTENSOR_API void* current(Device d);
// Waits until the work queued so far on `stream` of d has finished.
SLIMTENSOR_API void synchronize(Device d, void* stream = ST_STREAM_CURRENT);
// Waits for all queued work of device d (every stream).
SLIMTENSOR_API void synchronize_device(Device d);
// Makes `consumer` wait for the work queued so far on `producer` (both streams of d): an event recorded on
// the producer and waited on by the consumer, or, when the plugin has no events, a synchronisation of the
// producer. A no-op when consumer == producer.
SLIMTENSOR_API void order_after(Device d, void* consumer, void* producer);
// The same across two devices of one type (a peer copy): `consumer` (a stream of consumer_device) may not
// start later work before the work queued so far on `producer` (a stream of producer_device) has finished.
// Events never cross devices (c/device_plugin.h), so across two indices the host synchronises the producer.
SLIMTENSOR_API void order_after(Device consumer_device, void* consumer, Device producer_device, void* producer);
// The DLPack integer of a stream of d, and back; false when d defines no DLPack streams (kDLMetal, CPU).
SLIMTENSOR_API bool to_dlpack(Device d, void* stream, int64_t* value);
SLIMTENSOR_API bool from_dlpack(Device d, int64_t value, void** stream);

// The calling thread's current device index of a device type (0 for the CPU and ABI 1.0 plugins), and
// setting it (Note [Current device] in c/device_plugin.h). set_device takes a device with its index.
SLIMTENSOR_API int32_t current_device(DeviceType type);
SLIMTENSOR_API void set_device(Device d);

}  // namespace slimtensor::streams
