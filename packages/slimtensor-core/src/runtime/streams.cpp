// runtime/streams.cpp: Note [Streams in the core], over the plugin calls of runtime/device_calls.h.
#include "slimtensor/runtime/streams.h"

#include "runtime/device_calls.h"
#include "slimtensor/base/error.h"
#include "slimtensor/runtime/device_registry.h"

namespace slimtensor::streams {
namespace {

// The usable entry of a resolved device (index -1 becomes the current one).
const DeviceEntry& entry_for(Device& d, const char* function) {
  d = resolve_device(d, function);
  return usable_device(d, function);
}

}  // namespace

void* current(Device d) {
  if (d.is_cpu()) return nullptr;
  const DeviceEntry& e = entry_for(d, "streams::current()");
  return device_calls::current_stream(e, d.index, "streams::current()");
}

void synchronize(Device d, void* stream) {
  if (d.is_cpu()) return;
  const DeviceEntry& e = entry_for(d, "synchronize()");
  device_calls::synchronize_stream(e, d.index, stream, "synchronize()");
}

void synchronize_device(Device d) {
  if (d.is_cpu()) return;
  const DeviceEntry& e = entry_for(d, "synchronize()");
  device_calls::synchronize_device(e, d.index, "synchronize()");
}

void order_after(Device d, void* consumer, void* producer) {
  if (d.is_cpu() || consumer == producer) return;
  order_after(d, consumer, d, producer);
}

void order_after(Device cd, void* consumer, Device pd, void* producer) {
  const char* fn = "streams::order_after()";
  if (cd.is_cpu() || pd.is_cpu()) return;
  ST_CHECK(cd.type == pd.type, Runtime, fn, ": streams of ", device_string(cd), " and ", device_string(pd),
           " cannot be ordered: they belong to different plugins; synchronize the producer instead");
  const DeviceEntry& e = entry_for(cd, fn);
  pd = resolve_device(pd, fn);
  if (cd == pd && consumer == producer) return;
  // Events stay on one index (c/device_plugin.h): across two devices, and without events, the host waits
  // for the producer instead of the consumer's stream.
  if (cd.index != pd.index || !device_calls::has_events(e)) {
    device_calls::synchronize_stream(e, pd.index, producer, fn);
    return;
  }
  void* event = device_calls::event_create(e, pd.index, fn);
  try {
    device_calls::event_record(e, pd.index, event, producer, fn);
    device_calls::stream_wait_event(e, cd.index, consumer, event, fn);
  } catch (...) {
    device_calls::event_destroy(e, pd.index, event);
    throw;
  }
  device_calls::event_destroy(e, pd.index, event);  // allowed once the wait is queued (c/device_plugin.h)
}

bool to_dlpack(Device d, void* stream, int64_t* value) {
  if (d.is_cpu()) return false;
  const DeviceEntry& e = entry_for(d, "__dlpack__()");
  return device_calls::stream_to_dlpack(e, d.index, stream, value, "__dlpack__()");
}

bool from_dlpack(Device d, int64_t value, void** stream) {
  if (d.is_cpu()) return false;
  const DeviceEntry& e = entry_for(d, "__dlpack__()");
  return device_calls::stream_from_dlpack(e, d.index, value, stream, "__dlpack__()");
}

int32_t current_device(DeviceType type) {
  if (type == kCPU) return 0;
  return resolve_device(Device{type, -1}, "current_device()").index;
}

void set_device(Device d) {
  if (d.is_cpu()) {
    ST_CHECK(d.index <= 0, Runtime, "set_device(): the CPU has only index 0 but got ", d.index);
    return;
  }
  ST_CHECK(d.index >= 0, Value, "set_device(): give an index ('", device_string(d), ":1'), not the current device");
  const DeviceEntry& e = usable_device(d, "set_device()");  // checks the index is in range
  device_calls::set_current_device(e, d.index, "set_device()");
}

}  // namespace slimtensor::streams
