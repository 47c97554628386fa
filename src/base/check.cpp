#include "tessera/base/check.h"

#include <cstdio>
#include <cstdlib>

namespace tessera::detail {

void check_failed(const char* cond, const char* file, int line, std::string_view msg) {
  std::fprintf(stderr, "tessera: internal check failed at %s:%d: %s%s%.*s\n", file, line, cond,
               msg.empty() ? "" : ": ", static_cast<int>(msg.size()), msg.data());
  std::abort();
}

}  // namespace tessera::detail
