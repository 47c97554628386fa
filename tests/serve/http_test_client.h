// A blocking loopback HTTP client for the serve tests (Beast), plus helpers to read
// server-sent events.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace tessera::serve::testing {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

struct ClientResponse {
  int status = 0;
  std::string body;
  http::fields headers;
  bool keep_alive = false;
  std::string error;  // non-empty when the exchange failed (e.g. the server closed)
};

// One keep-alive connection to 127.0.0.1:port.
class TestClient {
 public:
  explicit TestClient(int port) : socket_(ioc_) {
    socket_.connect(tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)));
  }

  ClientResponse request(const std::string& method, const std::string& target,
                         const std::string& body = "",
                         std::vector<std::pair<std::string, std::string>> headers = {}) {
    send(method, target, body, std::move(headers));
    return read();
  }

  void send(const std::string& method, const std::string& target, const std::string& body = "",
            std::vector<std::pair<std::string, std::string>> headers = {}) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (auto& [k, v] : headers) req.set(k, v);
    if (!body.empty() || method == "POST") {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
      req.prepare_payload();
    }
    http::write(socket_, req);
  }

  ClientResponse read() {
    ClientResponse out;
    http::response<http::string_body> res;
    beast::error_code ec;
    http::read(socket_, buffer_, res, ec);
    if (ec) {
      out.error = ec.message();
      return out;
    }
    out.status = static_cast<int>(res.result_int());
    out.body = std::move(res.body());
    out.keep_alive = res.keep_alive();
    out.headers = res.base();
    return out;
  }

  // Reads the response head of a streamed response and returns the parser for reading on.
  tcp::socket& socket() { return socket_; }
  beast::flat_buffer& buffer() { return buffer_; }

  // True when the server has closed the connection (reads EOF or an error within `wait`).
  bool closed_by_server(std::chrono::milliseconds wait) {
    socket_.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + wait;
    char c;
    while (std::chrono::steady_clock::now() < deadline) {
      beast::error_code ec;
      socket_.read_some(net::buffer(&c, 1), ec);
      if (ec == net::error::would_block) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      socket_.non_blocking(false);
      return static_cast<bool>(ec);  // EOF or reset: closed (stray data would also count as not)
    }
    socket_.non_blocking(false);
    return false;
  }

 private:
  net::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

// The "data: " payloads of an SSE body, in order.
inline std::vector<std::string> sse_payloads(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string_view ev(body.data() + pos, end - pos);
    if (ev.starts_with("data: ")) out.emplace_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

}  // namespace tessera::serve::testing
