// upstream_call: one HTTP/1.1 exchange with a replica, its response streamed back piece by piece
// as it arrives (SSE passes through untouched) - the router's half of a proxied request, and its
// health probe. Blocking (Boost.Beast, synchronous); every read and write is bounded by
// `io_timeout_s` of inactivity, so a stuck replica cannot hold the caller forever.
// Thread-safety: a free function; each call has its own connection.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "tessera/base/status.h"
#include "tessera/serve/http_message.h"

namespace tessera::cluster {

struct UpstreamRequest {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string method = "GET";
  std::string target = "/";
  std::string body;
  std::string content_type = "application/json";
  serve::HttpHeaders headers;  // forwarded as given (e.g. Authorization)
  double connect_timeout_s = 2.0;
  double io_timeout_s = 300.0;
};

struct UpstreamHead {
  int status = 0;
  std::string content_type;
  bool chunked = false;
  serve::HttpHeaders headers;  // Retry-After, when the replica sent it
};

// Where an exchange stopped: before the replica took the request (safe to retry elsewhere),
// after it answered the head (not retryable), or complete.
enum class UpstreamStage : uint8_t { kNotSent, kSent, kHead, kDone };

// Sends `request`; calls `on_head` once with the response's head, then `on_body` for each piece
// of the body (a false return stops reading and closes the connection). Returns OK when the
// body ended; otherwise kUnavailable naming what failed, with *stage saying how far it got.
Status upstream_call(const UpstreamRequest& request,
                     const std::function<void(const UpstreamHead&)>& on_head,
                     const std::function<bool(std::string_view)>& on_body,
                     UpstreamStage* stage = nullptr);

// GET `target` and collect the body (for /health and /metrics). kUnavailable when unreachable.
struct UpstreamReply {
  int status = 0;
  std::string body;
};
Result<UpstreamReply> upstream_get(const std::string& host, int port, const std::string& target,
                                   double timeout_s);
// Any method (the replica's admin calls: POST /admin/models/{name}/suspend), body collected.
Result<UpstreamReply> upstream_fetch(const std::string& host, int port, const std::string& method,
                                     const std::string& target, const std::string& body,
                                     double timeout_s);

}  // namespace tessera::cluster
