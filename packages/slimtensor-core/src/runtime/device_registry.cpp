// runtime/device_registry.cpp: the built-in CPU entry, plugin registration and the ABI compatibility check.
#include "slimtensor/runtime/device_registry.h"

#include <array>
#include <atomic>
#include <mutex>

#include "slimtensor/base/error.h"
#include "slimtensor/runtime/memory_stats.h"
#include "slimtensor/tensor/scalar_type.h"

namespace slimtensor {
namespace {

// Note [Device registry] (see the header): slots are written once, under g_mutex, and read lock-free.
std::array<std::atomic<const DeviceEntry*>, kMaxDeviceTypes> g_by_code{};
std::mutex g_mutex;
std::vector<const DeviceEntry*> g_entries;  // registration order, guarded by g_mutex
std::function<void()> g_autoload_hook;      // guarded by g_mutex
thread_local bool t_in_autoload = false;  // this thread is inside the hook: do not re-enter it

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

int32_t core_itemsize(int32_t code) {
  const ScalarTypeInfo* i = scalar_type_info(code);
  return i ? i->itemsize : 0;
}

void core_note_device_memory(int32_t, int32_t, int64_t) {}

const st_core_table kCoreTable = {
    sizeof(st_core_table), ST_PLUGIN_ABI_MAJOR, ST_PLUGIN_ABI_MINOR, "0.1.0", core_itemsize,
    core_note_device_memory,
};

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

const DeviceEntry* find_device(const std::string& name) {
  auto lookup = [&]() -> const DeviceEntry* {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const DeviceEntry* e : g_entries) {
      if (e->name == name) return e;
    }
    return nullptr;
  };
  if (const DeviceEntry* e = lookup()) return e;
  std::function<void()> hook;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    hook = g_autoload_hook;
  }
  // The hook runs on every miss (the Python side loads each plugin once and is cheap afterwards). No
  // call_once: a plugin that looks up another unknown name while registering, or a second thread waiting
  // while holding the GIL, would deadlock in it.
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
  return lookup();
}

std::vector<const DeviceEntry*> registered_devices() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_entries;
}

const DeviceEntry& usable_device(Device device, const char* function) {
  const DeviceEntry* e = find_device(device.type);
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
  const int rc = init(&kCoreTable, &t);
  ST_CHECK(rc == 0 && t != nullptr, Runtime, who, ": the plugin's st_plugin_init failed (code ", rc, ")");
  // Note [Plugin ABI]: major equal, minor not newer than ours, struct at least as large as we know.
  ST_CHECK(t->abi_major == ST_PLUGIN_ABI_MAJOR, Runtime, who, ": the plugin was built for device-plugin ABI ",
           t->abi_major, ".", t->abi_minor, " but slimtensor-core ", kCoreTable.core_version, " speaks ABI ",
           ST_PLUGIN_ABI_MAJOR, ".", ST_PLUGIN_ABI_MINOR,
           "; install matching versions: pip install -U slimtensor-core and the plugin");
  ST_CHECK(t->abi_minor <= ST_PLUGIN_ABI_MINOR, Runtime, who, ": the plugin needs device-plugin ABI ",
           t->abi_major, ".", t->abi_minor, " but slimtensor-core ", kCoreTable.core_version, " has ",
           ST_PLUGIN_ABI_MAJOR, ".", ST_PLUGIN_ABI_MINOR, "; upgrade the core: pip install -U slimtensor-core");
  ST_CHECK(t->struct_size >= sizeof(st_device_table), Runtime, who, ": the plugin's device table has ",
           t->struct_size, " bytes but ABI ", ST_PLUGIN_ABI_MAJOR, ".", t->abi_minor, " needs at least ",
           sizeof(st_device_table), "; the plugin is damaged or mislabeled: reinstall it, and pip install -U "
           "slimtensor-core");
  ST_CHECK(valid_name(t->name), Runtime, who, ": the plugin's device name must be lower-case [a-z0-9_]");
  ST_CHECK(t->device_type > 0 && t->device_type < kMaxDeviceTypes, Runtime, who, ": device type code ",
           t->device_type, " is outside [1, ", kMaxDeviceTypes - 1, "]");
  ST_CHECK(t->device_count && t->allocate && t->free && t->copy_host_to_device && t->copy_device_to_host &&
               t->copy_device_to_device && t->last_error,
           Runtime, who, ": the device table lacks a required function (device_count, allocate, free, the three "
           "copies and last_error are required)");

  std::lock_guard<std::mutex> lock(g_mutex);
  for (const DeviceEntry* e : g_entries) {
    ST_CHECK(e->name != t->name, Runtime, who, ": a device named '", t->name, "' is already registered by ",
             e->source);
  }
  ST_CHECK(g_by_code[t->device_type].load() == nullptr, Runtime, who, ": device type code ", t->device_type,
           " is already taken by '", g_by_code[t->device_type].load()->name, "'");
  auto* entry = new DeviceEntry;  // lives for the process (Note [Device registry])
  entry->name = t->name;
  entry->type = static_cast<DeviceType>(t->device_type);
  entry->dlpack_device_type = t->dlpack_device_type;
  entry->plugin_version = t->plugin_version ? t->plugin_version : "";
  entry->table = t;
  entry->source = source;
  if (t->unavailable_reason) {
    if (const char* reason = t->unavailable_reason(t->ctx)) entry->unavailable_reason = reason;
  }
  g_entries.push_back(entry);
  g_by_code[entry->type].store(entry, std::memory_order_release);
  return *entry;
}

void set_device_autoload_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_autoload_hook = std::move(hook);
}

}  // namespace slimtensor
