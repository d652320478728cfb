// errors.h: the plugin's thread-local last-error message and the helpers that set it.
//
// Note [Plugin errors]
// Every failing call returns non-zero and leaves one sentence here: the function, what it expected, what
// it found, and how to fix it ("allocate_v2(): needs nbytes > 0 but got 0; ..."). Nothing throws across
// the C ABI and nothing aborts: C++ exceptions (bad_alloc from a container) are caught at the boundary
// (guarded) and turned into this message.
#pragma once

#include <cstdarg>
#include <exception>
#include <new>
#include <string>

namespace slimtensor_metal {

// The calling thread's last message ("" when none).
const char* last_error();
// Sets the message (printf-style) and returns 1, so `return fail("...")` reads naturally.
int fail(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
// Appends ": <bridge message>" to a message and returns 1.
int fail_bridge(const std::string& what, const char* bridge_err);
void clear_error();

// Runs f() and converts an escaping exception into an error return (Note [Plugin errors]).
template <class F>
int guarded(const char* fn, F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return fail("%s: out of host memory while keeping the plugin's bookkeeping; free some tensors", fn);
  } catch (const std::exception& e) {
    return fail("%s: unexpected internal error: %s", fn, e.what());
  } catch (...) {
    return fail("%s: unexpected internal error", fn);
  }
}

}  // namespace slimtensor_metal
