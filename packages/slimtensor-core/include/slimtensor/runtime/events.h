// slimtensor/runtime/events.h: the hook points of memory-lifetime tracing.
//
// Note [Tracing cost]
// Recording is off unless a trace is active. Each hook first reads one relaxed atomic (tracing_active());
// only when it is set does it build an Event and append it under a mutex. Traces nest: a trace is the
// slice of the shared event log between its start and its stop.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "slimtensor/base/export.h"
#include "slimtensor/tensor/device.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor {

enum class EventKind : uint8_t {
  StorageAlloc,
  StorageFree,
  TensorCreate,
  TensorDestroy,
  Copy,
  HandleCreate,
  HandleDelete,
  // A device plugin's own event: memory it took or gave back outside storages (op "device_memory",
  // from note_device_memory) or anything it reports through trace_device_event ("cache_hit", ...).
  DeviceEvent,
};

struct Event {
  EventKind kind;
  int64_t time_ns;  // steady clock
  uint64_t id = 0;  // storage id (Storage*), tensor id (Tensor*), handle address (Handle*)
  uint64_t storage_id = 0;
  int64_t bytes = 0;
  Device device;
  Device src_device;  // copies
  int8_t dtype = -1;
  int8_t src_dtype = -1;  // copies
  bool owning = false;
  std::string op;  // the operation that made a tensor, or the owner of borrowed memory
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  uint64_t src_storage_id = 0;  // copies
  uint64_t stream = 0;          // device events: the plugin's stream, as an opaque number (0: none given)
};

namespace events {
SLIMTENSOR_API extern std::atomic<int> g_active_traces;
inline bool tracing_active() noexcept { return g_active_traces.load(std::memory_order_relaxed) > 0; }
SLIMTENSOR_API void record(Event event);
// Starts a trace; returns the index of the first event it will own.
SLIMTENSOR_API size_t start_trace();
// Stops a trace started at `first`; returns its events. Traces may stop in any order.
SLIMTENSOR_API std::vector<Event> stop_trace(size_t first);
SLIMTENSOR_API int64_t now_ns() noexcept;

// Builds an event (kind and time set, the rest by `fill(e)`) and records it. Best effort: an event that
// cannot be built or stored (out of memory) is lost, and the operation it describes goes on unaffected.
template <typename Fill>
void emit(EventKind kind, Fill&& fill) noexcept {
  try {
    Event e;
    e.kind = kind;
    e.time_ns = now_ns();
    fill(e);
    record(std::move(e));
  } catch (...) {}
}
}  // namespace events

}  // namespace slimtensor
