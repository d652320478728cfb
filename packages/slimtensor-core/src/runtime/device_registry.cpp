// runtime/device_registry.cpp: the built-in CPU entry, plugin registration and the ABI compatibility check.
#include "slimtensor/runtime/device_registry.h"

#include <array>
#include <atomic>
#include <mutex>

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/memory_stats.h"
#include "slimtensor/tensor/scalar_type.h"

#include "runtime/core_table.h"
#include "runtime/device_calls.h"

namespace slimtensor {
namespace {

// Note [Device registry] (see the header): slots are written once, under g_mutex, and read lock-free.
std::array<std::atomic<const DeviceEntry*>, kMaxDeviceTypes> g_by_code{};
std::mutex g_mutex;
std::vector<const DeviceEntry*> g_entries;  // registration order, guarded by g_mutex
std::atomic<bool> g_any_plugin{false};      // set (never cleared) when a plugin's table is registered
std::function<void()> g_autoload_hook;      // guarded by g_mutex
thread_local bool t_in_autoload = false;    // this thread is inside the hook: do not re-enter it

const DeviceEntry* make_cpu_entry() {
  auto* cpu = new DeviceEntry;  // lives for the process (Note [Device registry])
  cpu->name = "cpu";
  cpu->type = kCPU;
  cpu->dlpack_device_type = 1;  // kDLCPU
  cpu->source = "built-in";
  g_by_code[kCPU].store(cpu, std::memory_order_release);
  g_entries.push_back(cpu);
  return cpu;
}
const DeviceEntry* const g_cpu = make_cpu_entry();

// The size of st_device_table that each minor defines (Note [Plugin ABI]): a 1.0 plugin's table ends at
// last_error, and no field past it may be read.
constexpr uint32_t kTableSizeForMinor[] = {ST_DEVICE_TABLE_SIZE_1_0, ST_DEVICE_TABLE_SIZE_1_1};
static_assert(sizeof(kTableSizeForMinor) / sizeof(kTableSizeForMinor[0]) == ST_PLUGIN_ABI_MINOR + 1,
              "a new minor needs its table size here, and its required functions in missing_functions()");

// The required functions the table lacks for its minor, comma-separated ("" when complete).
std::string missing_functions(const st_device_table& t) {
  std::string missing;
  auto need = [&](const void* fn, const char* name) {
    if (fn) return;
    if (!missing.empty()) missing += ", ";
    missing += name;
  };
  auto fn = [](auto f) { return reinterpret_cast<const void*>(f); };
  need(fn(t.device_count), "device_count");
  need(fn(t.last_error), "last_error");
  if (t.abi_minor == 0) {
    need(fn(t.allocate), "allocate");
    need(fn(t.free), "free");
    need(fn(t.copy_host_to_device), "copy_host_to_device");
    need(fn(t.copy_device_to_host), "copy_device_to_host");
    need(fn(t.copy_device_to_device), "copy_device_to_device");
    return missing;
  }
  need(fn(t.unavailable_reason), "unavailable_reason");
  need(fn(t.synchronize), "synchronize");
  need(fn(t.current_stream), "current_stream");
  need(fn(t.allocate_v2), "allocate_v2");
  need(fn(t.free_v2), "free_v2");
  need(fn(t.copy_from_host), "copy_from_host");
  need(fn(t.copy_to_host), "copy_to_host");
  need(fn(t.copy_on_device), "copy_on_device");
  need(fn(t.synchronize_stream), "synchronize_stream");
  need(fn(t.get_current_device), "get_current_device");
  need(fn(t.set_current_device), "set_current_device");
  // Groups that are optional together: all or none.
  const int events =
      !!t.event_create + !!t.event_destroy + !!t.event_record + !!t.stream_wait_event + !!t.event_synchronize;
  if (events != 0 && events != 5)
    need(nullptr,
         "all five event functions (event_create, event_destroy, "
         "event_record, stream_wait_event, event_synchronize) or none");
  if (!t.stream_to_dlpack != !t.stream_from_dlpack) need(nullptr, "stream_to_dlpack and stream_from_dlpack together");
  if (!t.host_allocate != !t.host_free) need(nullptr, "host_allocate and host_free together");
  return missing;
}

bool valid_name(const char* name) {
  if (!name || !*name) return false;
  for (const char* p = name; *p; ++p) {
    const char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

}  // namespace

const DeviceEntry* find_device(DeviceType type) noexcept {
  if (type < 0 || type >= kMaxDeviceTypes) return nullptr;
  return g_by_code[type].load(std::memory_order_acquire);
}

namespace {

// Runs the autoload hook after a lookup missed. It runs on every miss (the Python side loads each plugin
// once and is cheap afterwards). No call_once: a plugin that looks up another unknown name while
// registering, or a second thread waiting while holding the GIL, would deadlock in it.
void run_autoload_hook() {
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    hook = g_autoload_hook;
  }
  if (hook && !t_in_autoload) {
    t_in_autoload = true;
    try {
      hook();
    } catch (...) {
      t_in_autoload = false;
      throw;
    }
    t_in_autoload = false;
  }
}

}  // namespace

const DeviceEntry* find_device(const std::string& name) {
  auto lookup = [&]() -> const DeviceEntry* {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const DeviceEntry* e : g_entries) {
      if (e->name == name) return e;
    }
    return nullptr;
  };
  if (const DeviceEntry* e = lookup()) return e;
  run_autoload_hook();
  return lookup();
}

std::vector<const DeviceEntry*> registered_devices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_entries;
}

bool any_plugin_device() noexcept { return g_any_plugin.load(std::memory_order_acquire); }

const DeviceEntry& usable_device(Device device, const char* function) {
  const DeviceEntry* e = find_device(device.type);
  if (e == nullptr) {  // a device the core names itself ("cuda", "mps") whose plugin is not loaded yet
    run_autoload_hook();
    e = find_device(device.type);
  }
  ST_CHECK(e != nullptr, Runtime, function, ": no device of type ", device_string(device),
           " is registered; install its plugin (for CUDA: pip install slimtensor-cuda) and see slimtensor.devices()");
  if (!e->table) {
    ST_CHECK(device.index == 0, Runtime, function, ": the CPU has only index 0 but got ", device.index);
    return *e;
  }
  ST_CHECK(e->unavailable_reason.empty(), Runtime, function, ": device '", e->name,
           "' is registered but unavailable: ", e->unavailable_reason);
  int32_t count = 0;
  ST_CHECK(e->table->device_count(e->table->ctx, &count) == 0, Runtime, function, ": ", e->name,
           " device_count failed: ", e->table->last_error(e->table->ctx));
  ST_CHECK(device.index >= 0 && device.index < count, Runtime, function, ": device index ", device.index,
           " is out of range for '", e->name, "', which has ", count, " device(s)");
  return *e;
}

const DeviceEntry& register_device_plugin(st_plugin_init_fn init, const std::string& source) {
  const std::string who = "register_device_plugin(" + source + ")";
  ST_CHECK(init != nullptr, Runtime, who, ": the plugin's init function is null");
  const st_device_table* t = nullptr;
  const st_core_table& core = core_table();
  const int rc = init(&core, &t);
  ST_CHECK(rc == 0 && t != nullptr, Runtime, who, ": the plugin's st_plugin_init failed (code ", rc, ")");
  // Note [Plugin ABI]: major equal, minor not newer than ours, struct at least as large as we know.
  ST_CHECK(t->abi_major == ST_PLUGIN_ABI_MAJOR, Runtime, who, ": the plugin was built for device-plugin ABI ",
           t->abi_major, ".", t->abi_minor, " but slimtensor-core ", core.core_version, " speaks ABI ",
           ST_PLUGIN_ABI_MAJOR, ".", ST_PLUGIN_ABI_MINOR,
           "; install matching versions: pip install -U slimtensor-core and the plugin");
  ST_CHECK(t->abi_minor <= ST_PLUGIN_ABI_MINOR, Runtime, who, ": the plugin needs device-plugin ABI ", t->abi_major,
           ".", t->abi_minor, " but slimtensor-core ", core.core_version, " has ", ST_PLUGIN_ABI_MAJOR, ".",
           ST_PLUGIN_ABI_MINOR, "; upgrade the core: pip install -U slimtensor-core");
  const uint32_t known = kTableSizeForMinor[t->abi_minor];
  ST_CHECK(t->struct_size >= known, Runtime, who, ": the plugin's device table has ", t->struct_size, " bytes but ABI ",
           ST_PLUGIN_ABI_MAJOR, ".", t->abi_minor, " defines ", known,
           "; the plugin is damaged or mislabeled: reinstall it, and pip install -U slimtensor-core");
  ST_CHECK(valid_name(t->name), Runtime, who, ": the plugin's device name must be lower-case [a-z0-9_]");
  ST_CHECK(t->device_type > 0 && t->device_type < kMaxDeviceTypes, Runtime, who, ": device type code ", t->device_type,
           " is outside [1, ", kMaxDeviceTypes - 1, "]");
  const std::string missing = missing_functions(*t);
  ST_CHECK(missing.empty(), Runtime, who, ": the device table (ABI ", t->abi_major, ".", t->abi_minor, ") of '",
           t->name, "' lacks what its minor requires: ", missing,
           "; the plugin is incomplete: upgrade or reinstall it (and pip install -U slimtensor-core)");

  std::lock_guard<std::mutex> lock(g_mutex);
  for (const DeviceEntry* e : g_entries) {
    ST_CHECK(e->name != t->name, Runtime, who, ": a device named '", t->name, "' is already registered by ", e->source);
  }
  ST_CHECK(g_by_code[t->device_type].load() == nullptr, Runtime, who, ": device type code ", t->device_type,
           " is already taken by '", g_by_code[t->device_type].load()->name, "'");
  auto* entry = new DeviceEntry;  // lives for the process (Note [Device registry])
  entry->name = t->name;
  entry->type = static_cast<DeviceType>(t->device_type);
  entry->dlpack_device_type = t->dlpack_device_type;
  entry->plugin_version = t->plugin_version ? t->plugin_version : "";
  entry->table = t;
  entry->abi_minor = t->abi_minor;
  // 1.0 had no flags: its memory is addressable (Note [Plugin minors in the core]).
  entry->memory_flags = t->abi_minor == 0 ? ST_DEVICE_MEMORY_ADDRESSABLE : t->memory_flags;
  entry->source = source;
  if (t->unavailable_reason) {
    if (const char* reason = t->unavailable_reason(t->ctx)) entry->unavailable_reason = reason;
  }
  g_entries.push_back(entry);
  g_by_code[entry->type].store(entry, std::memory_order_release);
  g_any_plugin.store(true, std::memory_order_release);
  return *entry;
}

Device resolve_device(Device device, const char* function) {
  if (device.type == kCPU) return kCPUDevice;
  if (device.index >= 0) return device;
  const DeviceEntry& e = usable_device(Device{device.type, 0}, function);
  device.index = static_cast<int16_t>(device_calls::current_device(e, function));
  return device;
}

void set_device_autoload_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_autoload_hook = std::move(hook);
}

}  // namespace slimtensor
