// A small OpenAI-compatible server for the HTTP backend's tests (Boost.Beast, synchronous, a
// thread per connection): POST /v1/completions and /v1/chat/completions stream server-sent
// events in chunked encoding. What it does is chosen by the prompt (or the last message):
//   "ok"        max_tokens chunks `delay_ms` apart, then usage (unless "nousage") and [DONE]
//   "status500" HTTP 500 with an OpenAI error body       "junk"  a data line that is not JSON
//   "stall"     headers, then silence for 0.6 s             "drop"  two chunks, then closes
//   "error"     one chunk, then {"error": {...}} in the stream
// A prompt "ok nousage" omits usage. Requests without "Authorization: Bearer <api_key>" get 401
// when api_key is set. Thread-safety: counters are atomic; start/stop from the test thread.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tessera::bench::testing {

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(int delay_ms = 2, std::string api_key = "")
      : delay_ms_(delay_ms), api_key_(std::move(api_key)), acceptor_(ioc_) {
    namespace net = boost::asio;
    const net::ip::tcp::endpoint ep(net::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(ep.protocol());
    acceptor_.set_option(net::socket_base::reuse_address(true));
    acceptor_.bind(ep);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~FakeOpenAiServer() {
    stopping_ = true;
    boost::system::error_code ec;
    {
      // Closing an acceptor does not wake a blocked accept() on Linux; a connection does.
      boost::asio::ip::tcp::socket wake(ioc_);
      wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    }
    acceptor_.close(ec);
    accept_thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& t : conn_threads_) t.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_; }
  int requests() const { return requests_; }
  std::string last_body() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_body_;
  }
  std::string last_target() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_target_;
  }

 private:
  void accept_loop() {
    for (;;) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket sock(ioc_);
      acceptor_.accept(sock, ec);
      if (ec || stopping_) return;
      ++connections_;
      sock.set_option(boost::asio::ip::tcp::no_delay(true), ec);  // as real servers do
      std::lock_guard<std::mutex> lock(mu_);
      conn_threads_.emplace_back([this, s = std::move(sock)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(boost::asio::ip::tcp::socket sock) {
    namespace beast = boost::beast;
    namespace http = beast::http;
    beast::flat_buffer buf;
    for (;;) {
      http::request<http::string_body> req;
      boost::system::error_code ec;
      http::read(sock, buf, req, ec);
      if (ec) return;
      ++requests_;
      {
        std::lock_guard<std::mutex> lock(mu_);
        last_body_ = req.body();
        last_target_ = std::string(req.target());
      }
      if (!api_key_.empty() && req[http::field::authorization] != "Bearer " + api_key_) {
        simple(sock, req, http::status::unauthorized,
               R"({"error":{"message":"bad api key","type":"auth"}})");
        continue;
      }
      const auto j = nlohmann::json::parse(req.body());
      const bool chat = j.contains("messages");
      const std::string prompt =
          chat ? j["messages"].back()["content"].get<std::string>() : j["prompt"].get<std::string>();
      const int n = j.value("max_tokens", 4);
      if (prompt.find("status500") != std::string::npos) {
        simple(sock, req, http::status::internal_server_error,
               R"({"error":{"message":"model exploded","type":"server_error"}})");
        continue;
      }
      http::response<http::empty_body> res{http::status::ok, req.version()};
      res.set(http::field::content_type, "text/event-stream");
      res.chunked(true);
      res.keep_alive(req.keep_alive());
      http::response_serializer<http::empty_body> sr{res};
      http::write_header(sock, sr, ec);
      if (ec) return;
      auto send = [&](const std::string& data) {
        const std::string ev = "data: " + data + "\n\n";
        boost::asio::write(sock, http::make_chunk(boost::asio::buffer(ev)), ec);
        return !ec;
      };
      auto piece = [&](int i) {
        nlohmann::json c;
        if (chat) {
          c = {{"choices", {{{"index", 0}, {"delta", {{"content", " w" + std::to_string(i)}}}}}}};
        } else {
          c = {{"choices", {{{"index", 0}, {"text", " w" + std::to_string(i)}}}}};
        }
        return c.dump();
      };
      if (prompt.find("stall") != std::string::npos) {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return;
      }
      if (prompt.find("junk") != std::string::npos) {
        send("this is not json");
        boost::asio::write(sock, http::make_chunk_last(), ec);
        continue;
      }
      if (chat) send(R"({"choices":[{"index":0,"delta":{"role":"assistant"}}]})");
      const int produce = prompt.find("drop") != std::string::npos ? 2 : n;
      for (int i = 0; i < produce; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
        if (!send(piece(i))) return;
        if (prompt.find("error") != std::string::npos) {
          send(R"({"error":{"message":"out of KV cache","code":500}})");
          break;
        }
      }
      if (prompt.find("drop") != std::string::npos) return;  // closes mid-stream
      if (prompt.find("nousage") == std::string::npos &&
          j.contains("stream_options") && j["stream_options"].value("include_usage", false)) {
        send(nlohmann::json{{"choices", nlohmann::json::array()},
                            {"usage", {{"prompt_tokens", 11}, {"completion_tokens", produce},
                                       {"total_tokens", 11 + produce}}}}.dump());
      }
      send("[DONE]");
      boost::asio::write(sock, http::make_chunk_last(), ec);
      if (ec || !req.keep_alive()) return;
    }
  }

  template <typename Req>
  void simple(boost::asio::ip::tcp::socket& sock, const Req& req, boost::beast::http::status st,
              const std::string& body) {
    namespace http = boost::beast::http;
    http::response<http::string_body> res{st, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = body;
    res.prepare_payload();
    boost::system::error_code ec;
    http::write(sock, res, ec);
  }

  int delay_ms_;
  std::string api_key_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> requests_{0};
  std::thread accept_thread_;
  std::mutex mu_;
  std::vector<std::thread> conn_threads_;
  std::string last_body_;
  std::string last_target_;
};

}  // namespace tessera::bench::testing
