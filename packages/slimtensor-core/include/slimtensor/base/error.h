// slimtensor/base/error.h: the one exception type of the core, tagged with the Python exception it becomes.
//
// Note [Error messages]
// Every message names the function, what it expected, what it found, and, where there is one, the fix:
//   "as_strided(): view needs storage elements [0, 24) but storage holds 12".
// The kind decides the Python exception (ValueError, TypeError, ...) and, at the C ABI, the error code.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "slimtensor/base/export.h"

namespace slimtensor {

enum class ErrorKind { Value, Type, Index, Runtime, Memory, Buffer, NotImplemented };

class SLIMTENSOR_API Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

namespace detail {
template <typename... Parts>
std::string concat(Parts&&... parts) {
  std::ostringstream out;
  (out << ... << std::forward<Parts>(parts));
  return out.str();
}
}  // namespace detail

// "op()" for an op named bare ("as_strided", "aoti_torch__reinterpret_tensor"), the name itself when it
// already ends in "()" ("empty()"): how messages name their function (Note [Error messages]).
inline std::string call_name(const char* op) {
  const std::string name(op);
  return !name.empty() && name.back() == ')' ? name : name + "()";
}

// Throws Error(kind, concatenation of parts). Out of line at the call sites' cold paths.
template <typename... Parts>
[[noreturn]] void fail(ErrorKind kind, Parts&&... parts) {
  throw Error(kind, detail::concat(std::forward<Parts>(parts)...));
}

}  // namespace slimtensor

// Checks a condition on the hot path; builds the message only when it fails.
#define ST_CHECK(cond, kind, ...)                                     \
  do {                                                                \
    if (__builtin_expect(!(cond), 0)) {                               \
      ::slimtensor::fail(::slimtensor::ErrorKind::kind, __VA_ARGS__); \
    }                                                                 \
  } while (0)
