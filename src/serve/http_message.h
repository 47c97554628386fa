// HTTP exchange types shared by the server and the routes: a fully read request, a complete
// response, and ResponseWriter, the handle through which a handler answers - at once or later,
// whole or streamed - from any thread.
// Thread-safety: HttpRequest/HttpResponse are plain values; every ResponseWriter method is safe to
// call from any thread at any time, including after the client went away (calls become no-ops).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tessera::serve {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent
  std::string target;  // "/v1/models?x=1"
  std::string path;    // target without the query string
  HttpHeaders headers; // names as sent
  std::string body;
  std::string remote;  // peer "address:port", for logs

  // The first header named `name` (ASCII case-insensitive), or "" when absent.
  std::string_view header(std::string_view name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  HttpHeaders headers;  // extra headers (e.g. Retry-After); must not contain CR or LF
  std::string body;
};

// One request's answer. A handler either calls respond() once, or begin_stream(), write()* and
// end_stream(); the first of respond()/begin_stream() wins and later ones are ignored. Dropping
// the last reference without answering sends a 500, so a request never hangs.
class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // Sends a complete response.
  virtual void respond(HttpResponse response) = 0;
  // Sends the status line and headers of a chunked response (Transfer-Encoding: chunked).
  virtual void begin_stream(int status, std::string content_type, HttpHeaders headers = {}) = 0;
  // Queues `data` as one chunk after begin_stream(). Returns false when the client is gone or
  // the connection's backlog of unsent bytes exceeds its limit (the connection is then closed
  // and on_disconnect fires): the caller should stop producing.
  virtual bool write(std::string data) = 0;
  // Ends the chunked body. Idempotent.
  virtual void end_stream() = 0;

  // Runs `fn` on the connection's executor, after anything posted earlier through this writer.
  // Handlers use it to move engine events onto the connection's thread so that per-request state
  // needs no lock. Dropped silently when the server has stopped.
  virtual void post(std::function<void()> fn) = 0;
  // Registers `fn` to run once on the connection's executor if the client disconnects (or the
  // connection is closed by a timeout or shutdown) before the response is complete; runs it
  // right away (posted) if that already happened. Replaces an earlier registration.
  virtual void on_disconnect(std::function<void()> fn) = 0;
  // True once the client is known to be gone.
  virtual bool disconnected() const = 0;
};

// Called once per request on the connection's executor (an I/O thread): it must not block; long
// work answers later through the writer.
using HttpHandler = std::function<void(HttpRequest&&, std::shared_ptr<ResponseWriter>)>;

}  // namespace tessera::serve
