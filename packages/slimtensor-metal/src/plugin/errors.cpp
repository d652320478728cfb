// errors.cpp: the thread-local last-error message of the Metal plugin (Note [Plugin errors]).
#include "errors.h"

#include <cstdio>

namespace slimtensor_metal {
namespace {
thread_local std::string g_message;
}

const char* last_error() { return g_message.c_str(); }

void clear_error() { g_message.clear(); }

int fail(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  try {
    g_message = buf;
  } catch (...) {
    // keeping the old message is all we can do without memory
  }
  return 1;
}

int fail_bridge(const std::string& what, const char* bridge_err) {
  return fail("%s: %s", what.c_str(), (bridge_err && *bridge_err) ? bridge_err : "Metal reported no reason");
}

}  // namespace slimtensor_metal
