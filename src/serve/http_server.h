// HttpServer: an asynchronous HTTP/1.1 server on Boost.Beast. One io_context is run by a small
// fixed number of threads; each connection is a session on its own strand, so thousands of
// connections cost memory, not threads. Sessions keep connections alive, bound every read with a
// timeout (idle, header, body) and every write (a client that stops reading is closed), cap the
// body size (413) and the number of connections (503), and stream chunked responses.
// Thread-safety: start/stop/port may be called from any one controlling thread; the handler runs
// on the I/O threads (see HttpHandler).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "tessera/base/status.h"
#include "tessera/serve/http_message.h"

namespace tessera::serve {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;                    // 0: any free port (see HttpServer::port())
  int n_threads = 2;               // I/O threads running the io_context
  int max_connections = 1024;      // open connections beyond which new ones get 503 and close
  size_t max_body_bytes = 8u << 20;    // larger bodies get 413
  size_t max_header_bytes = 64u << 10; // larger headers get 431
  size_t max_stream_backlog = 8u << 20;  // unsent streamed bytes beyond which the client is dropped
  std::chrono::milliseconds idle_timeout{60000};    // keep-alive wait for a request's first byte
  std::chrono::milliseconds header_timeout{10000};  // first byte to end of headers
  std::chrono::milliseconds body_timeout{30000};    // end of headers to end of body
  std::chrono::milliseconds write_timeout{30000};   // per write while the client does not read
};

// What the server saw of each finished exchange, for access logs and metrics.
struct ExchangeRecord {
  std::string method;
  std::string path;
  int status = 0;  // 0 when the client left before a status was sent
};

class HttpServer {
 public:
  // `handler` serves every well-formed request; `on_complete` (may be empty) is called on an I/O
  // thread after each exchange ends, including ones the server answered itself (413, 431, 400).
  HttpServer(HttpServerOptions options, HttpHandler handler,
             std::function<void(const ExchangeRecord&)> on_complete = {});
  ~HttpServer();  // stop(0)
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds host:port, starts listening and the I/O threads. Errors: kInvalidArgument for a bad
  // address or options, kIoError when the port cannot be bound (naming it), kInternal when
  // called twice.
  Status start();
  // The bound port (useful with port 0); 0 before start().
  int port() const { return port_.load(); }

  // Graceful shutdown: stops accepting, closes idle connections, lets in-flight exchanges finish
  // (their connections close afterwards) until `grace` passes, then closes the rest (their
  // on_disconnect callbacks run) and joins the I/O threads. Idempotent; blocks the caller.
  void stop(std::chrono::milliseconds grace);

  // Connections currently open.
  int connections() const;

 private:
  struct Impl;
  HttpServerOptions options_;
  std::atomic<int> port_{0};
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::serve
