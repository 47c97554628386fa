#include "tessera/cluster/upstream_call.h"

#include <fmt/format.h>

#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <limits>

namespace tessera::cluster {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

std::chrono::milliseconds ms(double s) {
  return std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

// Runs one asynchronous operation to completion on `io` and returns its error. Blocking calls
// would ignore tcp_stream's expiry (it bounds only asynchronous operations); this way every step
// is bounded by the timeout set just before it.
template <typename Start>
beast::error_code run_op(asio::io_context& io, Start&& start) {
  beast::error_code result;
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run();
  return result;
}

}  // namespace

Status upstream_call(const UpstreamRequest& request,
                     const std::function<void(const UpstreamHead&)>& on_head,
                     const std::function<bool(std::string_view)>& on_body, UpstreamStage* stage) {
  UpstreamStage local = UpstreamStage::kNotSent;
  UpstreamStage& at = stage != nullptr ? *stage : local;
  at = UpstreamStage::kNotSent;
  const std::string where = fmt::format("{}:{}{}", request.host, request.port, request.target);
  try {
    asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    beast::error_code ec;
    const auto endpoints = resolver.resolve(request.host, std::to_string(request.port), ec);
    if (ec) return Status(ErrorCode::kUnavailable, fmt::format("{}: cannot resolve: {}", where, ec.message()));
    stream.expires_after(ms(request.connect_timeout_s));
    ec = run_op(io, [&](auto handler) { stream.async_connect(endpoints, std::move(handler)); });
    if (ec) return Status(ErrorCode::kUnavailable, fmt::format("{}: cannot connect: {}", where, ec.message()));

    http::request<http::string_body> req{
        http::string_to_verb(request.method) == http::verb::unknown ? http::verb::get
                                                                   : http::string_to_verb(request.method),
        request.target, 11};
    req.set(http::field::host, fmt::format("{}:{}", request.host, request.port));
    req.set(http::field::connection, "close");
    for (const auto& [k, v] : request.headers) req.set(k, v);
    if (!request.body.empty() || request.method == "POST") {
      req.set(http::field::content_type, request.content_type);
      req.body() = request.body;
      req.prepare_payload();
    }
    stream.expires_after(ms(request.io_timeout_s));
    ec = run_op(io, [&](auto handler) { http::async_write(stream, req, std::move(handler)); });
    if (ec) return Status(ErrorCode::kUnavailable, fmt::format("{}: sending the request: {}", where, ec.message()));
    at = UpstreamStage::kSent;

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    stream.expires_after(ms(request.io_timeout_s));
    ec = run_op(io, [&](auto handler) { http::async_read_header(stream, buffer, parser, std::move(handler)); });
    if (ec) return Status(ErrorCode::kUnavailable, fmt::format("{}: reading the response: {}", where, ec.message()));
    at = UpstreamStage::kHead;
    UpstreamHead head;
    const auto& msg = parser.get();
    head.status = static_cast<int>(msg.result_int());
    head.content_type = std::string(msg[http::field::content_type]);
    head.chunked = parser.chunked();
    if (auto it = msg.find(http::field::retry_after); it != msg.end()) {
      head.headers.emplace_back("Retry-After", std::string(it->value()));
    }
    on_head(head);

    std::array<char, 16384> chunk{};
    while (!parser.is_done()) {
      parser.get().body().data = chunk.data();
      parser.get().body().size = chunk.size();
      stream.expires_after(ms(request.io_timeout_s));
      ec = run_op(io, [&](auto handler) { http::async_read(stream, buffer, parser, std::move(handler)); });
      if (ec == http::error::need_buffer) ec = {};
      if (ec && ec != http::error::end_of_stream) {
        return Status(ErrorCode::kUnavailable, fmt::format("{}: reading the body: {}", where, ec.message()));
      }
      const size_t got = chunk.size() - parser.get().body().size;
      if (got > 0 && !on_body(std::string_view(chunk.data(), got))) {
        return Status(ErrorCode::kCancelled, fmt::format("{}: the client went away", where));
      }
      if (ec == http::error::end_of_stream) break;
    }
    at = UpstreamStage::kDone;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return Status::ok();
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable, fmt::format("{}: {}", where, e.what()));
  }
}

Result<UpstreamReply> upstream_get(const std::string& host, int port, const std::string& target,
                                   double timeout_s) {
  return upstream_fetch(host, port, "GET", target, {}, timeout_s);
}

Result<UpstreamReply> upstream_fetch(const std::string& host, int port, const std::string& method,
                                     const std::string& target, const std::string& body,
                                     double timeout_s) {
  UpstreamRequest req;
  req.host = host;
  req.port = port;
  req.method = method;
  req.target = target;
  req.body = body;
  req.connect_timeout_s = timeout_s;
  req.io_timeout_s = timeout_s;
  UpstreamReply reply;
  Status st = upstream_call(
      req, [&](const UpstreamHead& h) { reply.status = h.status; },
      [&](std::string_view piece) {
        reply.body.append(piece);
        return true;
      });
  if (!st.is_ok()) return st;
  return reply;
}

}  // namespace tessera::cluster
