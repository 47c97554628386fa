#include "tessera/bench/system_under_test.h"

namespace tessera::bench {

std::string_view error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kHttpStatus: return "http_status";
    case ErrorKind::kConnect: return "connect";
    case ErrorKind::kTimeout: return "timeout";
    case ErrorKind::kBadStream: return "bad_stream";
    case ErrorKind::kRefused: return "refused";
    case ErrorKind::kServer: return "server";
    case ErrorKind::kCancelled: return "cancelled";
  }
  return "?";
}

}  // namespace tessera::bench
