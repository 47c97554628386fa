#include "tessera/bench/http_call.h"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>

namespace tessera::bench {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

Result<HttpReply> http_call(const std::string& server, const std::string& method,
                            const std::string& target, const std::string& api_key,
                            double timeout_s) {
  std::string rest = server;
  if (rest.starts_with("http://")) {
    rest = rest.substr(7);
  } else if (rest.find("://") != std::string::npos) {
    return invalid_argument("the server must be an http:// URL, got " + server);
  }
  while (rest.ends_with("/")) rest.pop_back();
  std::string host = rest;
  std::string port = "80";
  if (const size_t colon = rest.rfind(':'); colon != std::string::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  try {
    boost::asio::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
    stream.connect(resolver.resolve(host, port));
    http::request<http::string_body> req(method == "POST" ? http::verb::post : http::verb::get,
                                         target, 11);
    req.set(http::field::host, host);
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    return HttpReply{static_cast<int>(res.result_int()), res.body()};
  } catch (const std::exception& e) {
    return Status(ErrorCode::kUnavailable, fmt::format("{} {}{}: {}", method, server, target, e.what()));
  }
}

}  // namespace tessera::bench
