// module.cpp: slimtensor_cuda._C, the nanobind module behind the Python API (streams, events, devices,
// allocator statistics) and the capsule that hands the device table to slimtensor.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstring>
#include <optional>
#include <string>

#include "device/cuda_backend.h"
#include "device/error.h"
#include "device/runtime.h"
#include "device/streams.h"
#include "device/table.h"

namespace nb = nanobind;
using namespace slimtensor_cuda;

namespace {

[[noreturn]] void raise_last() { throw std::runtime_error(last_error()); }

void check(int rc) {
  if (rc != 0) raise_last();
}

void check_cuda(const char* fn, const char* what, cudaError_t err) {
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail_cuda(fn, what, err);
    raise_last();
  }
}

int resolve_device(std::optional<int> device, const char* fn) {
  int d = 0;
  if (device.has_value()) {
    d = *device;
  } else {
    if (const char* why = unavailable_reason()) {
      fail("slimtensor_cuda %s(): the CUDA device is unavailable: %s", fn, why);
      raise_last();
    }
    check_cuda(fn, "cudaGetDevice", cudaGetDevice(&d));
  }
  check(check_device(fn, d));
  return d;
}

uintptr_t as_int(const void* p) { return reinterpret_cast<uintptr_t>(p); }
template <class T>
T as_ptr(uintptr_t v) {
  return reinterpret_cast<T>(v);
}

nb::dict stats_dict(int device) {
  nb::dict d;
  DeviceCachingAllocator* a = existing_allocator(device);
  const AllocatorStats s = a ? a->stats() : AllocatorStats{};
#define ST_PUT(field) d[#field] = s.field
  ST_PUT(allocated_bytes);
  ST_PUT(requested_bytes);
  ST_PUT(reserved_bytes);
  ST_PUT(peak_allocated_bytes);
  ST_PUT(peak_reserved_bytes);
  ST_PUT(active_blocks);
  ST_PUT(pending_free_blocks);
  ST_PUT(cached_bytes);
  ST_PUT(segments);
  ST_PUT(raw_mallocs);
  ST_PUT(raw_frees);
  ST_PUT(cache_hits);
  ST_PUT(cache_misses);
  ST_PUT(splits);
  ST_PUT(merges);
  ST_PUT(ooms);
  ST_PUT(alloc_retries);
  ST_PUT(failed_allocations);
  ST_PUT(lost_blocks);
#undef ST_PUT
  return d;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "slimtensor_cuda._C: the CUDA device plugin's native module (use the slimtensor_cuda package)";

  m.def(
      "plugin_capsule",
      []() {
        st_plugin_init_fn init = st_plugin_init;
        void* p = nullptr;
        std::memcpy(&p, &init, sizeof p);  // POSIX: a function pointer round-trips through void*
        return nb::capsule(p, ST_PLUGIN_CAPSULE_NAME);
      },
      "The PyCapsule 'slimtensor.device_plugin' holding st_plugin_init.");

  m.def(
      "state",
      []() {
        const RuntimeState s = runtime_state();
        nb::dict d;
        d["probed"] = s.probed;
        d["driver_initialised"] = s.driver_initialised;
        d["context_touched"] = s.context_touched;
        return d;
      },
      "Which lazy steps have run (Note [Lazy CUDA]): probed, driver_initialised, context_touched.");

  m.def("unavailable_reason", []() -> std::optional<std::string> {
    const char* r = unavailable_reason();
    if (r == nullptr) return std::nullopt;
    return std::string(r);
  });
  m.def("device_count", []() { return device_count(); });
  m.def("current_device", []() { return resolve_device(std::nullopt, "current_device"); });
  m.def(
      "set_device",
      [](int d) {
        check(check_device("set_device", d));
        check_cuda("set_device", "cudaSetDevice", cudaSetDevice(d));
      },
      nb::arg("device"));

  m.def(
      "synchronize",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "synchronize");
        nb::gil_scoped_release release;
        DeviceGuard g(d);
        check_cuda("synchronize", "cudaDeviceSynchronize", cudaDeviceSynchronize());
      },
      nb::arg("device").none() = nb::none());

  m.def(
      "device_properties",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "get_device_properties");
        cudaDeviceProp p{};
        check_cuda("get_device_properties", "cudaGetDeviceProperties", cudaGetDeviceProperties(&p, d));
        nb::dict r;
        r["index"] = d;
        r["name"] = std::string(p.name);
        r["total_memory"] = static_cast<uint64_t>(p.totalGlobalMem);
        r["major"] = p.major;
        r["minor"] = p.minor;
        r["multi_processor_count"] = p.multiProcessorCount;
        r["l2_cache_size"] = p.l2CacheSize;
        r["shared_memory_per_block"] = static_cast<uint64_t>(p.sharedMemPerBlock);
        r["warp_size"] = p.warpSize;
        r["pci_bus_id"] = p.pciBusID;
        char uuid[64];
        const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
        std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                      u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
                      u[15]);
        r["uuid"] = std::string(uuid);
        return r;
      },
      nb::arg("device").none() = nb::none());

  // ---- streams (handles are integers: the cudaStream_t value; 0 is the legacy default stream) ----
  m.def(
      "stream_acquire",
      [](int device, int priority) {
        check(check_device("Stream", device));
        cudaStream_t s = nullptr;
        check(acquire_stream(device, priority, &s));
        return as_int(s);
      },
      nb::arg("device"), nb::arg("priority") = 0);
  m.def("stream_release",
        [](int device, int priority, uintptr_t s) { release_stream(device, priority, as_ptr<cudaStream_t>(s)); });
  m.def("priority_range", []() {
    int lo = 0, hi = 0;
    check_cuda("Stream", "cudaDeviceGetStreamPriorityRange", cudaDeviceGetStreamPriorityRange(&lo, &hi));
    return nb::make_tuple(lo, hi);
  });
  m.def(
      "current_stream",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "current_stream");
        return nb::make_tuple(d, as_int(current_stream(d)));
      },
      nb::arg("device").none() = nb::none());
  m.def("set_current_stream", [](int device, uintptr_t s) {
    check(check_device("set_stream", device));
    set_current_stream(device, as_ptr<cudaStream_t>(s));
  });
  m.def("stream_query", [](int device, uintptr_t s) {
    DeviceGuard g(device);
    const cudaError_t err = cudaStreamQuery(as_ptr<cudaStream_t>(s));
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check_cuda("Stream.query", "cudaStreamQuery", err);
    return true;
  });
  m.def("stream_synchronize", [](int device, uintptr_t s) {
    nb::gil_scoped_release release;
    DeviceGuard g(device);
    check_cuda("Stream.synchronize", "cudaStreamSynchronize", cudaStreamSynchronize(as_ptr<cudaStream_t>(s)));
  });
  m.def("stream_wait_event", [](int device, uintptr_t s, uintptr_t e) {
    DeviceGuard g(device);
    check_cuda("Stream.wait_event", "cudaStreamWaitEvent",
               cudaStreamWaitEvent(as_ptr<cudaStream_t>(s), as_ptr<cudaEvent_t>(e), 0));
  });

  // ---- events ----
  m.def("event_create", [](int device, bool timing, bool blocking) {
    check(check_device("Event", device));
    DeviceGuard g(device);
    check_cuda("Event", "cudaSetDevice", g.status());
    unsigned flags = (timing ? 0u : cudaEventDisableTiming) | (blocking ? cudaEventBlockingSync : 0u);
    cudaEvent_t e = nullptr;
    check_cuda("Event", "cudaEventCreateWithFlags", cudaEventCreateWithFlags(&e, flags));
    return as_int(e);
  });
  m.def("event_destroy", [](uintptr_t e) {
    if (cudaEventDestroy(as_ptr<cudaEvent_t>(e)) != cudaSuccess) cudaGetLastError();
  });
  m.def("event_record", [](int device, uintptr_t e, uintptr_t s) {
    DeviceGuard g(device);
    check_cuda("Event.record", "cudaEventRecord", cudaEventRecord(as_ptr<cudaEvent_t>(e), as_ptr<cudaStream_t>(s)));
  });
  m.def("event_query", [](uintptr_t e) {
    const cudaError_t err = cudaEventQuery(as_ptr<cudaEvent_t>(e));
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check_cuda("Event.query", "cudaEventQuery", err);
    return true;
  });
  m.def("event_synchronize", [](uintptr_t e) {
    nb::gil_scoped_release release;
    check_cuda("Event.synchronize", "cudaEventSynchronize", cudaEventSynchronize(as_ptr<cudaEvent_t>(e)));
  });
  m.def("event_elapsed_ms", [](uintptr_t start, uintptr_t end) {
    float ms = 0;
    check_cuda("Event.elapsed_time",
               "cudaEventElapsedTime (both events need enable_timing=True and must have completed)",
               cudaEventElapsedTime(&ms, as_ptr<cudaEvent_t>(start), as_ptr<cudaEvent_t>(end)));
    return ms;
  });

  // ---- the allocator ----
  m.def(
      "memory_stats", [](std::optional<int> device) { return stats_dict(resolve_device(device, "memory_stats")); },
      nb::arg("device").none() = nb::none());
  m.def(
      "stream_allocated_bytes",
      [](int device, uintptr_t stream) -> int64_t {
        check(check_device("stream_memory_allocated", device));
        DeviceCachingAllocator* a = existing_allocator(device);
        return a ? a->allocated_bytes_on(as_ptr<void*>(stream)) : 0;
      },
      nb::arg("device"), nb::arg("stream"));
  m.def(
      "empty_cache",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "empty_cache");
        DeviceCachingAllocator* a = existing_allocator(d);
        if (a == nullptr) return;
        std::string error;
        bool ok;
        {
          nb::gil_scoped_release release;
          ok = a->empty_cache(&error);
        }
        if (!ok) throw std::runtime_error("slimtensor_cuda empty_cache(): " + error);
      },
      nb::arg("device").none() = nb::none());
  m.def(
      "reset_peak_memory_stats",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "reset_peak_memory_stats");
        if (DeviceCachingAllocator* a = existing_allocator(d)) a->reset_peak_stats();
      },
      nb::arg("device").none() = nb::none());
  m.def(
      "mem_get_info",
      [](std::optional<int> device) {
        const int d = resolve_device(device, "mem_get_info");
        DeviceGuard g(d);
        size_t f = 0, t = 0;
        check_cuda("mem_get_info", "cudaMemGetInfo", cudaMemGetInfo(&f, &t));
        return nb::make_tuple(static_cast<uint64_t>(f), static_cast<uint64_t>(t));
      },
      nb::arg("device").none() = nb::none());
  m.def("locate_pointer", [](uintptr_t ptr) {
    int32_t index = -1;
    check(device_table()->locate_pointer(nullptr, reinterpret_cast<const void*>(ptr), &index));
    return index;
  });
  m.attr("ALLOC_CONF_ENV") = kAllocConfEnv;
}
