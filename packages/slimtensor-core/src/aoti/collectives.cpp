// src/aoti/collectives.cpp: the registry of named collective groups and the three c10d shims
// (Note [Collective groups] in slimtensor/c/collectives.h).
#include "slimtensor/c/collectives.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "aoti/handle.h"
#include "slimtensor/copy/clone.h"

using namespace slimtensor;
using namespace slimtensor::aoti;

namespace {

struct Group {
  std::string name;
  st_collective_group table{};
  ~Group() {
    if (table.release) table.release(table.context);
  }
  [[noreturn]] void failed(const char* fn, const char* what) const {
    const char* message = table.last_error ? table.last_error(table.context) : nullptr;
    fail(ErrorKind::Runtime, fn, "(): ", what, " on group '", name,
         "' failed: ", message && *message ? message : "(the group gave no message)");
  }
};

// In-flight work: the storage being reduced (kept alive until wait_tensor: the library may still write
// into it) and the group it waits on.
struct Pending {
  std::shared_ptr<Group> group;
  Storage storage;
  st_memory_ref ref;
  int32_t device_type;
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<Group>> groups;
  std::unordered_map<uint64_t, Pending> pending;  // by storage id (never reused)
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: shims may run during exit
  return *r;
}

std::shared_ptr<Group> find_group(const char* name, const char* fn) {
  if (!name) fail(ErrorKind::Value, fn, "(): group_name is NULL");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.groups.find(name);
  if (it == r.groups.end()) {
    std::string known;
    for (const auto& kv : r.groups) known += (known.empty() ? "'" : ", '") + kv.first + "'";
    fail(ErrorKind::Value, fn, "(): no process group named '", name, "' is registered in this process (known: ",
         known.empty() ? std::string("none; call slimtensor.distributed.init_process_group() first") : known, ")");
  }
  return it->second;
}

int32_t reduce_op_code(const char* op, const char* fn) {
  static const char* const names[] = {"sum", "avg", "product", "min", "max"};
  if (op) {
    for (int32_t i = 0; i < 5; ++i) {
      if (std::strcmp(op, names[i]) == 0) return i;
    }
  }
  fail(ErrorKind::Value, fn, "(): reduce_op '", op ? op : "(NULL)", "' is not one of sum, avg, product, min, max");
}

// Reduces t (dense, contiguous) in place over the group and records the in-flight work.
void start_all_reduce(const Tensor& t, const char* op, const char* group_name, const char* fn) {
  const int32_t code = reduce_op_code(op, fn);
  if (!t.is_contiguous()) fail(ErrorKind::Value, fn, "(): the tensor must be contiguous for a collective");
  std::shared_ptr<Group> g = find_group(group_name, fn);
  const st_memory_ref ref = t.memory_ref();
  const int32_t device_type = static_cast<int32_t>(t.device().type);
  if (t.numel() > 0 &&
      g->table.all_reduce(g->table.context, ref, t.numel(), static_cast<int32_t>(t.dtype()), device_type, code) != 0) {
    g->failed(fn, "all_reduce");
  }
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.pending[t.storage()->id()] = Pending{std::move(g), t.storage(), ref, device_type};
}

Tensor alias(const Tensor& t) { return t; }

}  // namespace

extern "C" {

int32_t slimtensor_register_collective_group(const char* name, const st_collective_group* group) {
  return guarded("slimtensor_register_collective_group", [&] {
    const char* fn = "slimtensor_register_collective_group";
    if (!name || !*name) fail(ErrorKind::Value, fn, "(): name is NULL or empty");
    if (!group) fail(ErrorKind::Value, fn, "(): group is NULL");
    if (group->struct_size < sizeof(st_collective_group)) {
      fail(ErrorKind::Value, fn, "(): group->struct_size is ", group->struct_size, ", expected at least ",
           sizeof(st_collective_group));
    }
    if (!group->all_reduce || !group->wait) fail(ErrorKind::Value, fn, "(): all_reduce and wait must be set");
    auto g = std::make_shared<Group>();
    g->name = name;
    std::memcpy(&g->table, group, sizeof(st_collective_group));
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.groups.count(name)) {
      g->table.release = nullptr;  // not ours to release: the caller keeps it
      fail(ErrorKind::Value, fn, "(): a group named '", name, "' is registered already; unregister it first");
    }
    r.groups.emplace(name, std::move(g));
  });
}

int32_t slimtensor_unregister_collective_group(const char* name) {
  return guarded("slimtensor_unregister_collective_group", [&] {
    std::shared_ptr<Group> dropped;  // released outside the lock (release may call back into slimtensor)
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    auto it = name ? r.groups.find(name) : r.groups.end();
    if (it == r.groups.end()) {
      fail(ErrorKind::Value, "slimtensor_unregister_collective_group", "(): no group named '", name ? name : "(NULL)",
           "' is registered");
    }
    dropped = std::move(it->second);
    r.groups.erase(it);
  });
}

int64_t slimtensor_collective_groups(void) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return static_cast<int64_t>(registry().groups.size());
}

int64_t slimtensor_collective_pending(void) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  return static_cast<int64_t>(registry().pending.size());
}

AOTITorchError aoti_torch_cpu__c10d_functional_all_reduce(AtenTensorHandle inp, const char* reduce_op,
                                                          const char* group_name, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__c10d_functional_all_reduce";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(inp, fn, "inp");
    out_arg(ret0, fn, "ret0");
    Tensor out = clone(t, MemoryFormat::Contiguous);  // torch's functional all_reduce: a new, reduced tensor
    start_all_reduce(out, reduce_op, group_name, fn);
    *ret0 = make_handle(std::move(out), fn);
  });
}

AOTITorchError aoti_torch_cpu__c10d_functional_all_reduce_(AtenTensorHandle inp, const char* reduce_op,
                                                           const char* group_name, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__c10d_functional_all_reduce_";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(inp, fn, "inp");
    out_arg(ret0, fn, "ret0");
    start_all_reduce(t, reduce_op, group_name, fn);
    *ret0 = make_handle(alias(t), fn);
  });
}

AOTITorchError aoti_torch_cpu__c10d_functional_wait_tensor(AtenTensorHandle inp, AtenTensorHandle* ret0) {
  const char* fn = "aoti_torch_cpu__c10d_functional_wait_tensor";
  return guarded(fn, [&] {
    const Tensor& t = tensor_arg(inp, fn, "inp");
    out_arg(ret0, fn, "ret0");
    Pending work;
    bool found = false;
    {
      Registry& r = registry();
      std::lock_guard<std::mutex> lock(r.mutex);
      auto it = r.pending.find(t.storage()->id());
      if (it != r.pending.end()) {
        work = std::move(it->second);
        r.pending.erase(it);
        found = true;
      }
    }
    // No work in flight on this tensor: nothing to wait for (as torch's wait_tensor).
    if (found && work.group->table.wait(work.group->table.context, work.ref, work.device_type) != 0) {
      work.group->failed(fn, "wait");
    }
    *ret0 = make_handle(alias(t), fn);
  });
}

}  // extern "C"
