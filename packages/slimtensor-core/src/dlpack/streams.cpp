// dlpack/streams.cpp: DLPack's stream handshake on export (Note [DLPack streams]).
#include "dlpack/streams.h"

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"
#include "slimtensor/runtime/streams.h"

namespace slimtensor::dlpack {
namespace {

// The plugin turns DLPack stream integers into streams (ABI 1.1, stream_from_dlpack).
bool has_dlpack_streams(const DeviceEntry& e) {
  return e.table && e.abi_minor >= 1 && e.table->stream_from_dlpack && e.table->stream_to_dlpack;
}

}  // namespace

void order_export(Device device, bool has_stream, int64_t stream, const char* function) {
  if (device.is_cpu()) {
    ST_CHECK(!has_stream, Value, call_name(function), ": stream must be None for a CPU tensor but got ", stream,
             " (DLPack streams exist for CUDA and ROCm devices only)");
    return;
  }
  const DeviceEntry& e = usable_device(device, function);
  if (!has_dlpack_streams(e)) {
    ST_CHECK(!has_stream, Value, call_name(function), ": stream must be None for a tensor on ", device_string(device),
             " (DLPack device type ", e.dlpack_device_type, " defines no stream) but got ", stream);
    streams::synchronize(device);  // the consumer reads once the producer's queued work is done
    return;
  }
  if (has_stream && stream == -1) return;  // the consumer asked for no synchronisation
  ST_CHECK(!has_stream || stream != 0, Value, call_name(function),
           ": stream=0 is not allowed for DLPack "
           "device type ",
           e.dlpack_device_type,
           " (ambiguous: pass 1 for the legacy default stream, 2 for the "
           "per-thread default stream, or the consumer's stream)");
  ST_CHECK(!has_stream || stream > 0, Value, call_name(function),
           ": stream must be None, -1, 1, 2 or a "
           "stream handle but got ",
           stream);
  void* consumer = nullptr;
  if (!streams::from_dlpack(device, has_stream ? stream : 1, &consumer)) {  // None: the legacy default stream
    fail(ErrorKind::Runtime, call_name(function), ": ", device_string(device), " gives no stream for DLPack value ",
         has_stream ? stream : 1);
  }
  streams::order_after(device, consumer, streams::current(device));
}

bool consumer_stream(Device device, int64_t* value) {
  if (device.is_cpu()) return false;
  const DeviceEntry* e = find_device(device.type);
  if (!e || !has_dlpack_streams(*e)) return false;
  return streams::to_dlpack(device, streams::current(device), value);
}

}  // namespace slimtensor::dlpack
