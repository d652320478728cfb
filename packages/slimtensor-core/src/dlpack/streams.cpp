// dlpack/streams.cpp: DLPack's stream handshake on export (Note [DLPack streams]).
#include "dlpack/streams.h"

#include "dlpack/types.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor::dlpack {
namespace {

bool has_dlpack_streams(int32_t dl_type) { return dl_type == kDLCUDA || dl_type == kDLROCM; }

// Until the plugin ABI has streams and events, a device plugin's work is synchronous apart from what
// synchronize() waits for: the consumer's stream is safe once the device is idle.
void wait_for_device(Device device, const char* function) {
  const DeviceEntry& e = usable_device(device, function);
  if (e.table && e.table->synchronize && e.table->synchronize(e.table->ctx, device.index) != 0) {
    fail(ErrorKind::Runtime, call_name(function), ": synchronizing ", device_string(device), " failed: ",
         e.table->last_error ? e.table->last_error(e.table->ctx) : "no message");
  }
}

}  // namespace

void order_export(Device device, bool has_stream, int64_t stream, const char* function) {
  const int32_t dl_type = dl_device_type(device);
  if (device.is_cpu()) {
    ST_CHECK(!has_stream, Value, call_name(function), ": stream must be None for a CPU tensor but got ", stream,
             " (DLPack streams exist for CUDA and ROCm devices only)");
    return;
  }
  if (!has_dlpack_streams(dl_type)) {
    ST_CHECK(!has_stream, Value, call_name(function), ": stream must be None for a tensor on ",
             device_string(device), " (DLPack device type ", dl_type, " defines no stream) but got ", stream);
    wait_for_device(device, function);
    return;
  }
  if (has_stream && stream == -1) return;  // the consumer asked for no synchronisation
  ST_CHECK(!has_stream || stream != 0, Value, call_name(function), ": stream=0 is not allowed for DLPack "
           "device type ", dl_type, " (ambiguous: pass 1 for the legacy default stream, 2 for the per-thread "
           "default stream, or the consumer's stream)");
  ST_CHECK(!has_stream || stream > 0, Value, call_name(function), ": stream must be None, -1, 1, 2 or a "
           "stream handle but got ", stream);
  wait_for_device(device, function);
}

}  // namespace slimtensor::dlpack
