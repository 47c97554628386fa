// TS_CHECK: invariants that stay on in release builds. A failed check is a bug in Tessera, not bad
// input (bad input gets a Status): it prints the condition and location to stderr and aborts.
// Thread-safety: callable from any thread.
#pragma once

#include <string_view>

namespace tessera::detail {
[[noreturn]] void check_failed(const char* cond, const char* file, int line, std::string_view msg);
}  // namespace tessera::detail

#define TS_CHECK(cond)                                                     \
  do {                                                                     \
    if (__builtin_expect(!(cond), 0))                                      \
      ::tessera::detail::check_failed(#cond, __FILE__, __LINE__, {});      \
  } while (0)

#define TS_CHECK_MSG(cond, msg)                                            \
  do {                                                                     \
    if (__builtin_expect(!(cond), 0))                                      \
      ::tessera::detail::check_failed(#cond, __FILE__, __LINE__, (msg));   \
  } while (0)
