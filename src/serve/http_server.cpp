#include "tessera/serve/http_server.h"

#include <fmt/format.h>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tessera/base/log.h"
#include "tessera/serve/api_error.h"

namespace tessera::serve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

namespace {

constexpr size_t kReadChunk = 4096;
// Bytes of a pipelined next request we buffer while a response is in progress; beyond it we stop
// reading (and so stop noticing disconnects) until the response is done.
constexpr size_t kMaxPipelinedBytes = 64u << 10;
// After an error response on a connection we then close, we read and discard what the client
// is still sending for at most this long, so it sees our response instead of a reset.
constexpr auto kLingerTime = std::chrono::milliseconds(1000);
constexpr size_t kLingerBytes = 64u << 20;

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Header values come from handlers; a CR or LF would let them forge headers.
std::string header_safe(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c != '\r' && c != '\n') out.push_back(c);
  }
  return out;
}

constexpr size_t kUntilClose = static_cast<size_t>(-1);  // no Content-Length, no chunking

std::string response_head(int status, std::string_view content_type, const HttpHeaders& headers,
                          bool chunked, size_t content_length, bool keep_alive) {
  std::string_view reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nServer: tessera\r\n", status,
                                reason.empty() ? std::string_view("Unknown") : reason);
  if (!content_type.empty()) out += fmt::format("Content-Type: {}\r\n", header_safe(content_type));
  for (const auto& [name, value] : headers) {
    out += fmt::format("{}: {}\r\n", header_safe(name), header_safe(value));
  }
  if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  } else if (content_length == kUntilClose) {
    // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
  } else {
    out += fmt::format("Content-Length: {}\r\n", content_length);
  }
  out += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

std::string chunk_frame(std::string_view data) {
  return fmt::format("{:x}\r\n", data.size()).append(data).append("\r\n");
}

}  // namespace

std::string_view HttpRequest::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return {};
}

class Session;

// State shared by the listener, every session and every outstanding writer. Sessions hold it by
// shared_ptr so it outlives them however the io_context winds down.
struct ServerCore {
  HttpServerOptions options;
  HttpHandler handler;
  std::function<void(const ExchangeRecord&)> on_complete;
  std::atomic<bool> draining{false};
  std::atomic<int> n_sessions{0};

  // Posting gate: writers live on arbitrary threads (the engine's) and may outlive the server;
  // they post to a session only through here, and stop() closes the gate before the io_context
  // goes away, so nobody posts into a destroyed io_context.
  std::mutex gate_mu;
  bool gate_open = true;

  std::mutex sessions_mu;
  uint64_t next_session = 0;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;

  void record(ExchangeRecord r) {
    if (!on_complete) return;
    try {
      on_complete(r);
    } catch (const std::exception& e) {
      log_warn("serve: exchange hook threw: {}", e.what());
    }
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, std::shared_ptr<ServerCore> core)
      : core_(std::move(core)), stream_(std::move(socket)) {
    core_->n_sessions.fetch_add(1);
  }
  ~Session() {
    {
      std::lock_guard lock(core_->sessions_mu);
      core_->sessions.erase(serial_);
    }
    core_->n_sessions.fetch_sub(1);
  }

  void start() {
    {
      std::lock_guard lock(core_->sessions_mu);
      serial_ = core_->next_session++;
      core_->sessions[serial_] = weak_from_this();
    }
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);  // SSE tokens should not wait for Nagle
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = fmt::format("{}:{}", ep.address().to_string(), ep.port());
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_idle(); });
  }

  // Posts `fn(session)` to this session's strand. Any thread.
  template <typename Fn>
  void post(Fn&& fn) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), fn = std::forward<Fn>(fn)]() mutable {
                // Work posted by handlers (engine events) must not take the I/O thread down.
                try {
                  fn(*self);
                } catch (const std::exception& e) {
                  log_warn("serve: task for {} threw: {}", self->remote_, e.what());
                }
              });
  }

  // --- calls from writers, on the strand ---------------------------------------------------

  void send_response(uint64_t id, HttpResponse r) {
    if (id != exchange_id_ || state_ != State::kHandling || closed_) return;
    state_ = State::kResponding;
    status_sent_ = r.status;
    queue(response_head(r.status, r.content_type, r.headers, false, r.body.size(), keep_alive_) +
          r.body);
    response_done_ = true;
    flush();
  }

  void begin_stream(uint64_t id, int status, std::string content_type, HttpHeaders headers) {
    if (id != exchange_id_ || state_ != State::kHandling || closed_) return;
    state_ = State::kStreaming;
    status_sent_ = status;
    if (http10_) {
      keep_alive_ = false;
      queue(response_head(status, content_type, headers, false, kUntilClose, false));
    } else {
      queue(response_head(status, content_type, headers, true, 0, keep_alive_));
    }
    flush();
  }

  void write_chunk(uint64_t id, std::string data) {
    // An empty chunk would end the chunked body, so it is skipped.
    if (id != exchange_id_ || state_ != State::kStreaming || closed_ || response_done_ ||
        data.empty()) {
      return;
    }
    queue(http10_ ? std::move(data) : chunk_frame(data));
    if (out_bytes_ > core_->options.max_stream_backlog) {
      log_warn("serve: {} is not reading its stream ({} bytes queued); closing", remote_,
               out_bytes_);
      client_gone();
      return;
    }
    flush();
  }

  void end_stream(uint64_t id) {
    if (id != exchange_id_ || state_ != State::kStreaming || closed_ || response_done_) return;
    if (!http10_) queue("0\r\n\r\n");
    response_done_ = true;
    if (out_.empty() && !writing_) {
      finish_exchange();
      return;
    }
    flush();
  }

  void set_on_disconnect(uint64_t id, std::function<void()> fn) {
    if (id == exchange_id_ && !closed_ && in_response()) {
      on_disconnect_ = std::move(fn);
    } else if (id == exchange_id_ && gone_->load()) {
      run_disconnect(fn);
    }
    // Otherwise the exchange already completed: the client did not disconnect before it.
  }

  // A writer for exchange `id` went away without answering.
  void abandoned(uint64_t id) {
    if (id != exchange_id_ || closed_) return;
    if (state_ == State::kHandling) {
      send_response(id, api_error_response(server_error("the request handler produced no response")));
    } else if (state_ == State::kStreaming && !response_done_) {
      end_stream(id);
    }
  }

  // Shutdown, phase 1: close idle connections, let busy ones finish their exchange.
  void drain() {
    keep_alive_ = false;
    if (state_ == State::kIdle && !closed_) close_socket();
  }
  // Shutdown, phase 2: close whatever is left, telling handlers their client is gone.
  void force_close() {
    if (closed_) return;
    if (in_response()) {
      client_gone();
    } else {
      close_socket();
    }
  }

  std::shared_ptr<std::atomic<bool>> gone_flag() const { return gone_; }

 private:
  enum class State { kIdle, kReadingHeader, kReadingBody, kHandling, kResponding, kStreaming, kClosing };

  bool in_response() const {
    return state_ == State::kHandling || state_ == State::kResponding ||
           state_ == State::kStreaming;
  }

  // Waits for the first byte of the next request under the (long) keep-alive timeout; the
  // (short) header timeout starts with that byte.
  void read_idle() {
    state_ = State::kIdle;
    if (closed_) return;
    if (core_->draining.load()) {
      close_socket();
      return;
    }
    if (buffer_.size() > 0) {
      read_header();
      return;
    }
    stream_.expires_after(core_->options.idle_timeout);
    stream_.async_read_some(buffer_.prepare(kReadChunk),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec || self->closed_) {
                                self->close_socket();
                                return;
                              }
                              self->buffer_.commit(n);
                              self->read_header();
                            });
  }

  void read_header() {
    state_ = State::kReadingHeader;
    method_.clear();
    path_.clear();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(core_->options.max_header_bytes));
    parser_->body_limit(core_->options.max_body_bytes);
    stream_.expires_after(core_->options.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              self->on_header(ec);
                            });
  }

  void on_header(beast::error_code ec) {
    if (closed_) return;
    if (ec) {
      on_read_error(ec);
      return;
    }
    const auto& req = parser_->get();
    method_ = std::string(req.method_string());
    path_ = std::string(req.target().substr(0, req.target().find('?')));
    if (parser_->is_done()) {
      dispatch();
      return;
    }
    state_ = State::kReadingBody;
    stream_.expires_after(core_->options.body_timeout);
    auto read_body = [self = shared_from_this()] {
      http::async_read(self->stream_, self->buffer_, *self->parser_,
                       [self](beast::error_code ec2, size_t) {
                         if (self->closed_) return;
                         if (ec2) {
                           self->on_read_error(ec2);
                           return;
                         }
                         self->dispatch();
                       });
    };
    // curl and others wait (up to a second) for this before sending a large body.
    if (iequals(req[http::field::expect], "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                       [self = shared_from_this(), read_body](beast::error_code ec2, size_t) {
                         if (ec2 || self->closed_) {
                           self->close_socket();
                           return;
                         }
                         read_body();
                       });
      return;
    }
    read_body();
  }

  void on_read_error(beast::error_code ec) {
    if (parser_ && method_.empty()) {  // the error came while reading the head: name what we saw
      const auto& req = parser_->get();
      method_ = std::string(req.method_string());
      path_ = std::string(req.target().substr(0, req.target().find('?')));
    }
    if (ec == http::error::body_limit) {
      reply_error_and_close(invalid_request(
          fmt::format("request body exceeds the limit of {} bytes", core_->options.max_body_bytes),
          "", "request_too_large"), 413);
    } else if (ec == http::error::header_limit) {
      reply_error_and_close(invalid_request(fmt::format("request headers exceed the limit of {} bytes",
                                                        core_->options.max_header_bytes)),
                            431);
    } else if (ec.category() == http::make_error_code(http::error::bad_method).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      reply_error_and_close(invalid_request("malformed HTTP request: " + ec.message()), 400);
    } else {
      // Timeouts, resets and clients that close mid-request: nobody to answer.
      if (ec == beast::error::timeout) log_debug("serve: {} timed out reading a request", remote_);
      close_socket();
    }
  }

  void reply_error_and_close(ApiError e, int status) {
    e.http_status = status;
    request_unread_ = true;
    keep_alive_ = false;
    state_ = State::kResponding;
    status_sent_ = status;
    HttpResponse r = api_error_response(e);
    queue(response_head(r.status, r.content_type, r.headers, false, r.body.size(), false) + r.body);
    response_done_ = true;
    flush();
  }

  void dispatch() {
    auto msg = parser_->release();
    parser_.reset();
    stream_.expires_never();
    ++n_exchanges_;
    keep_alive_ = msg.keep_alive() && !core_->draining.load();
    http10_ = msg.version() < 11;

    HttpRequest req;
    req.method = std::string(msg.method_string());
    req.target = std::string(msg.target());
    req.path = path_;
    req.remote = remote_;
    for (const auto& f : msg) req.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
    req.body = std::move(msg.body());

    ++exchange_id_;
    gone_ = std::make_shared<std::atomic<bool>>(false);
    on_disconnect_ = nullptr;
    response_done_ = false;
    status_sent_ = 0;
    state_ = State::kHandling;
    watch();

    auto writer = make_writer();
    try {
      core_->handler(std::move(req), writer);
    } catch (const std::exception& e) {
      log_warn("serve: handler for {} {} threw: {}", method_, path_, e.what());
      writer->respond(api_error_response(server_error(std::string("internal error: ") + e.what())));
    }
  }

  std::shared_ptr<ResponseWriter> make_writer();

  // Reads while a response is in progress, only to notice a client that disconnects (a cancelled
  // stream must free its engine request). Bytes of a pipelined next request are kept.
  void watch() {
    if (buffer_.size() >= kMaxPipelinedBytes || closed_) return;
    watching_ = true;
    stream_.socket().async_read_some(buffer_.prepare(kReadChunk),
                                     [self = shared_from_this()](beast::error_code ec, size_t n) {
                                       self->on_watch(ec, n);
                                     });
  }

  void on_watch(beast::error_code ec, size_t n) {
    watching_ = false;
    if (!ec) buffer_.commit(n);
    if (resume_after_watch_) {  // the exchange ended and cancelled us to read the next request
      resume_after_watch_ = false;
      if (ec && ec != net::error::operation_aborted) {
        close_socket();
      } else {
        read_idle();
      }
      return;
    }
    if (closed_) return;
    if (ec) {
      if (in_response()) {
        client_gone();
      } else {
        close_socket();
      }
      return;
    }
    if (in_response()) watch();
  }

  void queue(std::string bytes) {
    out_bytes_ += bytes.size();
    out_.push_back(std::move(bytes));
  }

  void flush() {
    if (writing_ || out_.empty() || closed_) return;
    write_buf_.clear();
    for (auto& s : out_) write_buf_ += s;  // one write for everything queued so far
    out_.clear();
    writing_ = true;
    stream_.expires_after(core_->options.write_timeout);
    net::async_write(stream_, net::buffer(write_buf_),
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->on_write(ec);
                     });
  }

  void on_write(beast::error_code ec) {
    writing_ = false;
    out_bytes_ -= write_buf_.size();
    write_buf_.clear();
    if (closed_) return;
    if (ec) {
      client_gone();
      return;
    }
    if (!out_.empty()) {
      flush();
      return;
    }
    if (response_done_ && in_response()) finish_exchange();
  }

  void finish_exchange() {
    core_->record({method_, path_, status_sent_});
    on_disconnect_ = nullptr;
    stream_.expires_never();
    if (keep_alive_ && !core_->draining.load()) {
      state_ = State::kIdle;
      if (watching_) {
        // Stop the disconnect watch; its handler continues with read_idle().
        resume_after_watch_ = true;
        beast::error_code ec;
        stream_.socket().cancel(ec);
      } else {
        read_idle();
      }
    } else {
      graceful_close();
    }
  }

  void run_disconnect(std::function<void()>& fn) {
    if (!fn) return;
    auto f = std::move(fn);
    fn = nullptr;
    try {
      f();
    } catch (const std::exception& e) {
      log_warn("serve: disconnect hook threw: {}", e.what());
    }
  }

  // The client went away (or was dropped) before its response completed.
  void client_gone() {
    if (closed_) return;
    const bool was_in_response = in_response();
    gone_->store(true);
    close_socket();
    if (was_in_response) {
      core_->record({method_, path_, status_sent_});
      run_disconnect(on_disconnect_);
    }
  }

  // Half-closes, then discards what the client still sends for a moment so that it reads our
  // last response rather than a connection reset.
  void graceful_close() {
    if (closed_) return;
    state_ = State::kClosing;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (!request_unread_) {  // the request was read whole: nothing is in flight towards us
      close_socket();
      return;
    }
    linger_deadline_ = std::chrono::steady_clock::now() + kLingerTime;
    linger();
  }

  void linger() {
    if (closed_) return;
    auto left = linger_deadline_ - std::chrono::steady_clock::now();
    if (left <= decltype(left)::zero() || lingered_ > kLingerBytes) {
      close_socket();
      return;
    }
    stream_.expires_after(std::chrono::duration_cast<std::chrono::milliseconds>(left));
    stream_.async_read_some(net::buffer(scratch_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec) {
                                self->close_socket();
                                return;
                              }
                              self->lingered_ += n;
                              self->linger();
                            });
  }

  void close_socket() {
    if (closed_) return;
    if (in_response()) gone_->store(true);
    closed_ = true;
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  std::shared_ptr<ServerCore> core_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  uint64_t serial_ = 0;
  std::string remote_;

  State state_ = State::kIdle;
  uint64_t exchange_id_ = 0;
  uint64_t n_exchanges_ = 0;
  std::shared_ptr<std::atomic<bool>> gone_ = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> on_disconnect_;
  std::string method_, path_;
  bool keep_alive_ = true;
  bool http10_ = false;  // the request was HTTP/1.0: stream without chunked encoding
  bool response_done_ = false;
  int status_sent_ = 0;
  bool closed_ = false;

  std::deque<std::string> out_;
  std::string write_buf_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  bool watching_ = false;
  bool resume_after_watch_ = false;

  std::chrono::steady_clock::time_point linger_deadline_;
  size_t lingered_ = 0;
  bool request_unread_ = false;  // we answer before the client finished sending (413, 400)
  std::array<char, 4096> scratch_{};
};

namespace {

// The ResponseWriter of one exchange. It holds the session weakly: a writer kept by an engine
// callback must not keep a closed connection (or the io_context) alive.
class SessionWriter final : public ResponseWriter {
 public:
  SessionWriter(std::weak_ptr<Session> session, std::shared_ptr<ServerCore> core, uint64_t id,
                std::shared_ptr<std::atomic<bool>> gone)
      : session_(std::move(session)), core_(std::move(core)), id_(id), gone_(std::move(gone)) {}

  ~SessionWriter() override {
    if (!ended_.load()) {
      const uint64_t id = id_;
      post_to_session([id](Session& s) { s.abandoned(id); });
    }
  }

  void respond(HttpResponse response) override {
    if (answered_.exchange(true)) return;
    ended_.store(true);
    post_to_session([id = id_, r = std::move(response)](Session& s) mutable {
      s.send_response(id, std::move(r));
    });
  }

  void begin_stream(int status, std::string content_type, HttpHeaders headers) override {
    if (answered_.exchange(true)) return;
    streaming_.store(true);
    post_to_session([id = id_, status, ct = std::move(content_type),
                     h = std::move(headers)](Session& s) mutable {
      s.begin_stream(id, status, std::move(ct), std::move(h));
    });
  }

  bool write(std::string data) override {
    if (!streaming_.load() || ended_.load() || gone_->load()) return false;
    if (!post_to_session([id = id_, d = std::move(data)](Session& s) mutable {
          s.write_chunk(id, std::move(d));
        })) {
      return false;
    }
    return !gone_->load();
  }

  void end_stream() override {
    if (!streaming_.load() || ended_.exchange(true)) return;
    post_to_session([id = id_](Session& s) { s.end_stream(id); });
  }

  void post(std::function<void()> fn) override {
    post_to_session([fn = std::move(fn)](Session&) { fn(); });
  }

  void on_disconnect(std::function<void()> fn) override {
    auto shared = std::make_shared<std::function<void()>>(std::move(fn));
    if (!post_to_session([id = id_, shared](Session& s) { s.set_on_disconnect(id, std::move(*shared)); })) {
      // The connection no longer exists, so the client is gone: run it here.
      if (*shared) (*shared)();
    }
  }

  bool disconnected() const override { return gone_->load(); }

 private:
  // Posts `fn` to the session's strand if the server and the session are both still there.
  template <typename Fn>
  bool post_to_session(Fn&& fn) {
    std::lock_guard lock(core_->gate_mu);
    if (!core_->gate_open) return false;
    auto s = session_.lock();
    if (!s) return false;
    s->post(std::forward<Fn>(fn));
    return true;
  }

  std::weak_ptr<Session> session_;
  std::shared_ptr<ServerCore> core_;
  const uint64_t id_;
  std::shared_ptr<std::atomic<bool>> gone_;
  std::atomic<bool> answered_{false};
  std::atomic<bool> streaming_{false};
  std::atomic<bool> ended_{false};
};

}  // namespace

std::shared_ptr<ResponseWriter> Session::make_writer() {
  return std::make_shared<SessionWriter>(weak_from_this(), core_, exchange_id_, gone_);
}

struct HttpServer::Impl {
  // Declared first so it is destroyed last: sessions destroyed with the io_context use it.
  std::shared_ptr<ServerCore> core = std::make_shared<ServerCore>();
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;
  std::optional<net::steady_timer> retry_timer;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  explicit Impl(int n_threads) : ioc(n_threads) {}

  void accept() {
    acceptor->async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
      if (ec) {
        // E.g. out of file descriptors: back off instead of spinning on the error.
        log_warn("serve: accept failed: {}", ec.message());
        retry_timer->expires_after(std::chrono::milliseconds(50));
        retry_timer->async_wait([this](beast::error_code) {
          if (acceptor->is_open()) accept();
        });
        return;
      }
      if (core->draining.load() || core->n_sessions.load() >= core->options.max_connections) {
        reject(std::move(socket));
      } else {
        std::make_shared<Session>(std::move(socket), core)->start();
      }
      accept();
    });
  }

  // Over the connection limit: a best-effort 503 without blocking, then close.
  void reject(tcp::socket socket) {
    HttpResponse r = api_error_response(api_error_from_status(
        Status(ErrorCode::kUnavailable, "the server has too many open connections")));
    std::string bytes =
        response_head(r.status, r.content_type, r.headers, false, r.body.size(), false) + r.body;
    beast::error_code ec;
    socket.non_blocking(true, ec);
    socket.write_some(net::buffer(bytes), ec);
    socket.shutdown(tcp::socket::shutdown_both, ec);
    socket.close(ec);
    core->record({"", "", 503});
  }

  template <typename Fn>
  void for_each_session(Fn fn) {
    std::vector<std::shared_ptr<Session>> live;
    {
      std::lock_guard lock(core->sessions_mu);
      for (auto& [id, w] : core->sessions) {
        if (auto s = w.lock()) live.push_back(std::move(s));
      }
    }
    for (auto& s : live) s->post(fn);
  }

  bool wait_for_sessions(std::chrono::steady_clock::time_point deadline) {
    while (core->n_sessions.load() > 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }
};

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler,
                       std::function<void(const ExchangeRecord&)> on_complete)
    : options_(std::move(options)), impl_(std::make_unique<Impl>(std::max(1, options_.n_threads))) {
  impl_->core->options = options_;
  impl_->core->handler = std::move(handler);
  impl_->core->on_complete = std::move(on_complete);
}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

int HttpServer::connections() const { return impl_->core->n_sessions.load(); }

Status HttpServer::start() {
  if (impl_->started) return internal_error("HttpServer::start called twice");
  if (options_.n_threads < 1 || options_.n_threads > 64) {
    return invalid_argument(fmt::format("n_threads must be in [1, 64], got {}", options_.n_threads));
  }
  if (options_.port < 0 || options_.port > 65535) {
    return invalid_argument(fmt::format("port must be in [0, 65535], got {}", options_.port));
  }
  if (options_.max_connections < 1) return invalid_argument("max_connections must be >= 1");
  beast::error_code ec;
  auto address = net::ip::make_address(options_.host, ec);
  if (ec) {
    return invalid_argument(fmt::format("'{}' is not an IP address (e.g. 127.0.0.1 or 0.0.0.0)",
                                        options_.host));
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(options_.port));
  impl_->acceptor.emplace(net::make_strand(impl_->ioc));
  impl_->retry_timer.emplace(impl_->acceptor->get_executor());
  auto& acc = *impl_->acceptor;
  const std::string where = fmt::format("{}:{}", options_.host, options_.port);
  if (acc.open(endpoint.protocol(), ec); ec) return io_error("cannot open a socket for " + where + ": " + ec.message());
  if (acc.set_option(net::socket_base::reuse_address(true), ec); ec) {
    return io_error("cannot set SO_REUSEADDR on " + where + ": " + ec.message());
  }
  if (acc.bind(endpoint, ec); ec) return io_error("cannot bind " + where + ": " + ec.message());
  if (acc.listen(net::socket_base::max_listen_connections, ec); ec) {
    return io_error("cannot listen on " + where + ": " + ec.message());
  }
  port_.store(acc.local_endpoint().port());
  impl_->started = true;
  impl_->work.emplace(net::make_work_guard(impl_->ioc));
  impl_->accept();
  for (int i = 0; i < options_.n_threads; ++i) {
    impl_->threads.emplace_back([this] {
      for (;;) {
        try {
          impl_->ioc.run();
          return;
        } catch (const std::exception& e) {
          // A handler threw past its own guard; keep serving the other connections.
          log_warn("serve: I/O thread caught: {}", e.what());
        }
      }
    });
  }
  log_info("serve: listening on {}:{}", options_.host, port_.load());
  return Status::ok();
}

void HttpServer::stop(std::chrono::milliseconds grace) {
  if (!impl_->started || impl_->stopped) return;
  impl_->stopped = true;
  auto& core = *impl_->core;
  core.draining.store(true);
  net::post(impl_->acceptor->get_executor(), [this] {
    beast::error_code ec;
    impl_->acceptor->close(ec);
    impl_->retry_timer->cancel();
  });
  impl_->for_each_session([](Session& s) { s.drain(); });
  const auto start = std::chrono::steady_clock::now();
  if (!impl_->wait_for_sessions(start + grace)) {
    impl_->for_each_session([](Session& s) { s.force_close(); });
    // Sockets are closed now; give their handlers (and the disconnect hooks) a moment to run.
    impl_->wait_for_sessions(std::chrono::steady_clock::now() + std::chrono::seconds(2));
  }
  {
    std::lock_guard lock(core.gate_mu);
    core.gate_open = false;
  }
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

}  // namespace tessera::serve
