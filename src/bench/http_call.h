// One blocking HTTP/1.1 exchange (Boost.Beast) with a server: for the operator's commands
// (`tessera fleet`) and for reading a server's /metrics around a benchmark. Not for load: the
// benchmark's own traffic goes through HttpBackend.
// Thread-safety: a free function; each call has its own connection.
#pragma once

#include <string>

#include "tessera/base/status.h"

namespace tessera::bench {

struct HttpReply {
  int status = 0;
  std::string body;
};

// `method` (GET or POST, with an empty body) to `target` on `server` ("http://host[:port]").
// `api_key`, when set, goes as a bearer token. Errors: kInvalidArgument for a URL that is not
// http://, kUnavailable naming the request when the server cannot be reached or answers
// nothing within `timeout_s`.
Result<HttpReply> http_call(const std::string& server, const std::string& method,
                            const std::string& target, const std::string& api_key,
                            double timeout_s);

}  // namespace tessera::bench
