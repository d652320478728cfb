// buffer_registry.cpp: live buffers and interior-pointer resolution (Note [Buffer registry]).
#include "buffer_registry.h"

namespace slimtensor_metal {

bool BufferRegistry::add(void* handle, void* contents, uint64_t length, uint64_t requested) {
  if (!handle || !contents || length == 0 || by_handle_.count(handle)) return false;
  const uintptr_t c = reinterpret_cast<uintptr_t>(contents);
  // Contents ranges of live buffers never overlap; refuse one that would (a bridge bug, not a user error).
  auto next = by_contents_.lower_bound(c);
  if (next != by_contents_.end() && next->first < c + length) return false;
  if (next != by_contents_.begin()) {
    auto prev = std::prev(next);
    const BufferEntry& p = by_handle_.at(prev->second);
    if (prev->first + p.length > c) return false;
  }
  by_handle_.emplace(handle, BufferEntry{contents, length, requested, 1});
  by_contents_.emplace(c, handle);
  return true;
}

BufferEntry* BufferRegistry::find(void* handle) {
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : &it->second;
}

const BufferEntry* BufferRegistry::find(void* handle) const {
  auto it = by_handle_.find(handle);
  return it == by_handle_.end() ? nullptr : &it->second;
}

void BufferRegistry::remove(void* handle) {
  auto it = by_handle_.find(handle);
  if (it == by_handle_.end()) return;
  by_contents_.erase(reinterpret_cast<uintptr_t>(it->second.contents));
  by_handle_.erase(it);
}

bool BufferRegistry::resolve_pointer(const void* ptr, void** handle, uint64_t* offset) const {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = by_contents_.upper_bound(p);  // first buffer starting after p
  if (it == by_contents_.begin()) return false;
  --it;
  const BufferEntry& e = by_handle_.at(it->second);
  if (p - it->first >= e.length) return false;
  *handle = it->second;
  *offset = p - it->first;
  return true;
}

}  // namespace slimtensor_metal
