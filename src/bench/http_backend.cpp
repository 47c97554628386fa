#include "tessera/bench/http_backend.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "tessera/bench/openai_chunk.h"
#include "tessera/bench/sse_parser.h"

namespace tessera::bench {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

Result<ParsedUrl> parse_http_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return invalid_argument("https targets are not supported (" + url +
                            "): use http:// or put a TLS-terminating proxy in front");
  }
  if (url.rfind(kScheme, 0) != 0) {
    return invalid_argument("target '" + url + "' is not an http://host[:port][/prefix] URL");
  }
  ParsedUrl p;
  std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  std::string hostport = rest.substr(0, slash);
  if (slash != std::string::npos) p.prefix = rest.substr(slash);
  while (!p.prefix.empty() && p.prefix.back() == '/') p.prefix.pop_back();
  const size_t colon = hostport.rfind(':');
  const size_t bracket = hostport.find(']');
  if (colon != std::string::npos && (bracket == std::string::npos || colon > bracket)) {
    p.host = hostport.substr(0, colon);
    p.port = hostport.substr(colon + 1);
  } else {
    p.host = hostport;
    p.port = "80";
  }
  if (p.host.size() > 2 && p.host.front() == '[' && p.host.back() == ']') {
    p.host = p.host.substr(1, p.host.size() - 2);
  }
  if (p.host.empty() || p.port.empty() ||
      p.port.find_first_not_of("0123456789") != std::string::npos) {
    return invalid_argument("target '" + url + "': bad host or port");
  }
  return p;
}

struct HttpBackend::Impl {
  HttpBackendOptions options;
  ParsedUrl url;
  std::string target;  // request path
  net::io_context ioc;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work;
  tcp::resolver::results_type endpoints;
  std::vector<std::thread> threads;

  std::mutex pool_mu;
  std::vector<beast::tcp_stream> idle;  // keep-alive connections ready for reuse

  std::optional<beast::tcp_stream> take_idle() {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (idle.empty()) return std::nullopt;
    beast::tcp_stream s = std::move(idle.back());
    idle.pop_back();
    return s;
  }
  void give_back(beast::tcp_stream&& s) {
    std::lock_guard<std::mutex> lock(pool_mu);
    if (static_cast<int>(idle.size()) < options.max_idle_connections) idle.push_back(std::move(s));
  }
  std::chrono::steady_clock::duration timeout() const {
    return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(options.timeout_s));
  }
};

namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr size_t kMaxErrorBody = 2048;

// One query's exchange: connect (or reuse), write, read the header, stream the body.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(HttpBackend::Impl* backend, uint64_t id, QueryObserver* observer, std::string body)
      : b_(backend), id_(id), observer_(observer) {
    req_.method(http::verb::post);
    req_.target(b_->target);
    req_.version(11);
    req_.set(http::field::host, b_->url.host + ":" + b_->url.port);
    req_.set(http::field::user_agent, "tessera-bench");
    req_.set(http::field::content_type, "application/json");
    req_.set(http::field::accept, "text/event-stream");
    if (!b_->options.api_key.empty()) {
      req_.set(http::field::authorization, "Bearer " + b_->options.api_key);
    }
    req_.keep_alive(true);
    req_.body() = std::move(body);
    req_.prepare_payload();
  }

  void start() {
    if (auto s = b_->take_idle()) {
      stream_.emplace(std::move(*s));
      reused_ = true;
      net::post(stream_->get_executor(), [self = shared_from_this()] { self->write(); });
    } else {
      connect();
    }
  }

 private:
  void connect() {
    reused_ = false;
    stream_.emplace(net::make_strand(b_->ioc));
    stream_->expires_after(b_->timeout());
    stream_->async_connect(b_->endpoints, [self = shared_from_this()](
                                              beast::error_code ec, const tcp::endpoint&) {
      if (ec) return self->fail(ec, "connect");
      beast::error_code ignored;  // small requests should not wait for Nagle
      self->stream_->socket().set_option(tcp::no_delay(true), ignored);
      self->write();
    });
  }

  void write() {
    stream_->expires_after(b_->timeout());
    http::async_write(*stream_, req_, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->fail_or_retry(ec, "write");
      self->read_header();
    });
  }

  void read_header() {
    parser_.emplace();
    // Not boost::none: Boost 1.74 compares a Content-Length against an empty limit as "exceeded".
    parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
    stream_->expires_after(b_->timeout());
    http::async_read_header(*stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) {
                              if (ec) return self->fail_or_retry(ec, "read header");
                              self->got_header_ = true;
                              self->status_ = self->parser_->get().result_int();
                              self->read_body();
                            });
  }

  void read_body() {
    if (parser_->is_done()) return done();
    parser_->get().body().data = chunk_;
    parser_->get().body().size = sizeof chunk_;
    stream_->expires_after(b_->timeout());
    http::async_read_some(*stream_, buffer_, *parser_,
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec == http::error::need_buffer) ec = {};
                            const size_t n = sizeof self->chunk_ - self->parser_->get().body().size;
                            if (!ec || ec == http::error::end_of_stream) {
                              if (n > 0 && !self->consume(std::string_view(self->chunk_, n))) {
                                return;  // a terminal call was made
                              }
                            }
                            if (ec) return self->fail(ec, "read body");
                            self->read_body();
                          });
  }

  // Returns false once the query has ended (error inside the stream).
  bool consume(std::string_view bytes) {
    if (status_ < 200 || status_ > 299) {
      if (error_body_.size() < kMaxErrorBody) error_body_.append(bytes.substr(0, kMaxErrorBody));
      return true;
    }
    events_.clear();
    sse_.feed(bytes, events_);
    for (const std::string& data : events_) {
      auto c = parse_openai_chunk(data, b_->options.api == HttpApi::kChat);
      if (!c.is_ok()) {
        terminal_error({ErrorKind::kBadStream, 0, c.status().message()});
        close();
        return false;
      }
      if (!c->error.empty()) {
        terminal_error({ErrorKind::kServer, 0, c->error});
        close();
        return false;
      }
      if (!c->text.empty()) {
        ++content_chunks_;
        observer_->on_chunk(id_, 1);
      }
      if (c->server_prompt_ms >= 0) {
        info_.server_ttft_ms = c->server_prompt_ms;
        info_.server_e2e_ms = c->server_prompt_ms + std::max(0.0, c->server_predicted_ms);
      }
      if (c->has_usage) {
        info_.prompt_tokens = c->prompt_tokens;
        info_.output_tokens = c->completion_tokens;
      }
      saw_done_ = saw_done_ || c->done;
    }
    return true;
  }

  void done() {
    const bool keep = parser_->keep_alive();
    if (status_ < 200 || status_ > 299) {
      std::string msg = "HTTP " + std::to_string(status_);
      if (!error_body_.empty()) msg += ": " + error_body_;
      terminal_error({ErrorKind::kHttpStatus, status_, msg});
    } else if (!saw_done_ && info_.output_tokens < 0 && content_chunks_ == 0) {
      terminal_error({ErrorKind::kBadStream, 0,
                      "the response ended without stream events (is \"stream\" supported?)"});
    } else {
      finished_ = true;
      observer_->on_complete(id_, info_);
    }
    if (keep && stream_) {
      b_->give_back(std::move(*stream_));
      stream_.reset();
    } else {
      close();
    }
  }

  // A reused keep-alive connection may have been closed by the server while idle: if nothing
  // of the response came back, retry once on a fresh connection.
  void fail_or_retry(beast::error_code ec, const char* what) {
    if (reused_ && !got_header_ && ec != beast::error::timeout) {
      close();
      buffer_.consume(buffer_.size());
      return connect();
    }
    fail(ec, what);
  }

  void fail(beast::error_code ec, const char* what) {
    ErrorKind kind = ErrorKind::kConnect;
    if (ec == beast::error::timeout) {
      kind = ErrorKind::kTimeout;
    } else if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
               ec != http::error::end_of_stream && ec != http::error::partial_message) {
      kind = ErrorKind::kBadStream;  // the bytes do not parse as HTTP
    }
    terminal_error({kind, 0, std::string(what) + ": " + ec.message()});
    close();
  }

  void terminal_error(QueryError e) {
    if (finished_) return;
    finished_ = true;
    observer_->on_error(id_, std::move(e));
  }

  void close() {
    if (!stream_) return;
    beast::error_code ignored;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_->close();
    stream_.reset();
  }

  HttpBackend::Impl* b_;
  uint64_t id_;
  QueryObserver* observer_;
  http::request<http::string_body> req_;
  std::optional<beast::tcp_stream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::response_parser<http::buffer_body>> parser_;
  char chunk_[kReadChunk];
  SseParser sse_;
  std::vector<std::string> events_;
  std::string error_body_;
  CompletionInfo info_;
  int status_ = 0;
  int content_chunks_ = 0;
  bool reused_ = false;
  bool got_header_ = false;
  bool saw_done_ = false;
  bool finished_ = false;
};

}  // namespace

HttpBackend::HttpBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpBackend>> HttpBackend::create(const HttpBackendOptions& options) {
  TS_ASSIGN_OR_RETURN(ParsedUrl url, parse_http_url(options.url));
  if (options.io_threads < 1 || options.io_threads > 2) {
    return invalid_argument("the HTTP backend runs 1 or 2 io threads");
  }
  if (!(options.timeout_s > 0)) return invalid_argument("the timeout must be > 0 seconds");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->url = url;
  const std::string base = url.prefix;
  const bool has_v1 = base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0;
  impl->target = base + (has_v1 ? "" : "/v1") +
                 (options.api == HttpApi::kChat ? "/chat/completions" : "/completions");
  try {
    tcp::resolver resolver(impl->ioc);
    impl->endpoints = resolver.resolve(url.host, url.port);
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable,
                  "cannot resolve " + url.host + ":" + url.port + ": " + e.what());
  }
  impl->work.emplace(net::make_work_guard(impl->ioc));
  Impl* raw = impl.get();
  for (int i = 0; i < options.io_threads; ++i) {
    impl->threads.emplace_back([raw] { raw->ioc.run(); });
  }
  return std::unique_ptr<HttpBackend>(new HttpBackend(std::move(impl)));
}

HttpBackend::~HttpBackend() {
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->idle.clear();
}

nlohmann::json HttpBackend::describe() const {
  const auto& o = impl_->options;
  return {{"kind", "http"},
          {"url", o.url},
          {"path", impl_->target},
          {"api", o.api == HttpApi::kChat ? "chat" : "completions"},
          {"model", o.model},
          {"io_threads", o.io_threads},
          {"timeout_s", o.timeout_s},
          {"ignore_eos", o.ignore_eos},
          {"include_usage", o.include_usage},
          {"body_variants", o.body_variants.size()}};
}

std::string HttpBackend::request_body(const QuerySample& s, uint64_t query_id) const {
  const auto& o = impl_->options;
  nlohmann::json j = {{"model", o.model},
                      {"max_tokens", s.max_output_tokens},
                      {"temperature", o.temperature},
                      {"stream", true}};
  if (o.api == HttpApi::kChat) {
    j["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", s.prompt}}});
    j["max_completion_tokens"] = s.max_output_tokens;
  } else {
    j["prompt"] = s.prompt;
  }
  if (o.include_usage) j["stream_options"] = {{"include_usage", true}};
  if (o.ignore_eos) j["ignore_eos"] = true;
  if (!o.body_variants.empty()) j.merge_patch(o.body_variants[query_id % o.body_variants.size()]);
  return j.dump();
}

void HttpBackend::issue(const Query& q, QueryObserver* observer) {
  auto session = std::make_shared<Session>(impl_.get(), q.id, observer, request_body(*q.sample, q.id));
  session->start();
}

}  // namespace tessera::bench
