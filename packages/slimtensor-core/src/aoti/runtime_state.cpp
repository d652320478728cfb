// src/aoti/runtime_state.cpp: thread-local grad mode, aoti_torch_check (throws) and aoti_torch_warn.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "aoti/handle.h"

namespace {
// Note [Grad mode]
// slimtensor has no autograd; the flag is remembered per thread (default on, as in torch) because the
// generated code saves it, turns it off around a run, and restores it.
thread_local bool t_grad_mode = true;
}  // namespace

extern "C" {

bool aoti_torch_grad_mode_is_enabled(void) { return t_grad_mode; }
void aoti_torch_grad_mode_set_enabled(bool enabled) { t_grad_mode = enabled; }

void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line, const char* msg) {
  if (__builtin_expect(cond, 1)) return;
  std::string text = msg && msg[0] ? msg : "check failed";
  text += " (";
  text += func ? func : "?";
  text += " at ";
  text += file ? file : "?";
  text += ":" + std::to_string(line) + ")";
  slimtensor::aoti::set_last_error("aoti_torch_check", text.c_str());
  throw std::runtime_error(text);
}

void aoti_torch_warn(const char* func, const char* file, uint32_t line, const char* msg) {
  std::fprintf(stderr, "Warning: %s (%s at %s:%u)\n", msg ? msg : "", func ? func : "?", file ? file : "?",
               static_cast<unsigned>(line));
}

}  // extern "C"
