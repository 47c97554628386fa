// HttpServer over real loopback sockets: keep-alive, limits, timeouts, streaming from other
// threads, disconnect notification, connection caps and graceful shutdown.
#include "tessera/serve/http_server.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_test_client.h"

namespace tessera::serve {
namespace http_server_test {

using testing::TestClient;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
namespace net = boost::asio;
namespace beast = boost::beast;

// Routes for the tests: /echo answers the body, /stream streams N chunks from another thread,
// /late answers after 200 ms from another thread, /throw throws, /drop never answers.
class HttpServerTest : public ::testing::Test {
 protected:
  void start(HttpServerOptions o = {}) {
    o.port = 0;
    server_ = std::make_unique<HttpServer>(
        o, [this](HttpRequest&& r, std::shared_ptr<ResponseWriter> w) { handle(std::move(r), std::move(w)); },
        [this](const ExchangeRecord& rec) { completed_.fetch_add(1); (void)rec; });
    ASSERT_TRUE(server_->start().is_ok());
    ASSERT_GT(server_->port(), 0);
  }
  void TearDown() override {
    if (server_) server_->stop(1s);
    for (auto& t : threads_) t.join();
  }

  void handle(HttpRequest&& r, std::shared_ptr<ResponseWriter> w) {
    if (r.path == "/echo") {
      w->respond(HttpResponse{200, "text/plain", {{"X-Method", r.method}}, r.body});
    } else if (r.path == "/stream") {
      w->begin_stream(200, "text/event-stream");
      w->on_disconnect([this] { disconnects_.fetch_add(1); });
      const int n = r.target.find("n=1000") != std::string::npos ? 1000 : 5;
      std::lock_guard lock(mu_);
      threads_.emplace_back([w, n] {
        for (int i = 0; i < n; ++i) {
          if (!w->write("data: " + std::to_string(i) + "\n\n")) return;
          if (n > 5) std::this_thread::sleep_for(5ms);
        }
        w->end_stream();
      });
    } else if (r.path == "/late") {
      std::lock_guard lock(mu_);
      threads_.emplace_back([w] {
        std::this_thread::sleep_for(200ms);
        w->respond(HttpResponse{200, "text/plain", {}, "late"});
      });
    } else if (r.path == "/throw") {
      throw std::runtime_error("boom");
    } else if (r.path == "/drop") {
      // no answer: the writer's destructor must produce a 500
    } else {
      w->respond(HttpResponse{404, "text/plain", {}, "nope"});
    }
  }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> completed_{0};
  std::atomic<int> disconnects_{0};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

TEST_F(HttpServerTest, KeepAliveServesManyRequestsOnOneConnection) {
  start();
  TestClient c(server_->port());
  for (int i = 0; i < 5; ++i) {
    auto r = c.request("POST", "/echo", "hello " + std::to_string(i));
    ASSERT_EQ(r.status, 200) << r.error;
    EXPECT_EQ(r.body, "hello " + std::to_string(i));
    EXPECT_TRUE(r.keep_alive);
    EXPECT_EQ(r.headers["X-Method"], "POST");
  }
  EXPECT_EQ(server_->connections(), 1);
}

TEST_F(HttpServerTest, AnswersLaterFromAnotherThread) {
  start();
  TestClient c(server_->port());
  auto r = c.request("GET", "/late");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "late");
  auto r2 = c.request("GET", "/echo");  // the connection is still usable
  EXPECT_EQ(r2.status, 200);
}

TEST_F(HttpServerTest, StreamsChunksWrittenFromAnotherThread) {
  start();
  TestClient c(server_->port());
  auto r = c.request("GET", "/stream");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.headers[http::field::transfer_encoding], "chunked");
  EXPECT_EQ(r.body, "data: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n");
  EXPECT_EQ(c.request("POST", "/echo", "after").body, "after");
}

TEST_F(HttpServerTest, StreamsToHttp10ClientsUntilClose) {
  start();
  TestClient c(server_->port());
  net::write(c.socket(), net::buffer(std::string("GET /stream HTTP/1.0\r\n\r\n")));
  std::string all;
  beast::error_code ec;
  char buf[4096];
  for (;;) {
    size_t n = c.socket().read_some(net::buffer(buf), ec);
    if (ec) break;
    all.append(buf, n);
  }
  EXPECT_EQ(ec, net::error::eof);
  EXPECT_TRUE(all.starts_with("HTTP/1.1 200 OK\r\n")) << all;
  EXPECT_EQ(all.find("chunked"), std::string::npos) << all;
  EXPECT_TRUE(all.ends_with("\r\n\r\ndata: 0\n\ndata: 1\n\ndata: 2\n\ndata: 3\n\ndata: 4\n\n")) << all;
}

TEST_F(HttpServerTest, HandlerThatThrowsOrDropsTheWriterGets500) {
  start();
  TestClient c(server_->port());
  auto r = c.request("GET", "/throw");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("boom"), std::string::npos);
  auto r2 = c.request("GET", "/drop");
  EXPECT_EQ(r2.status, 500);
  EXPECT_TRUE(nlohmann::json::parse(r2.body).contains("error"));
}

TEST_F(HttpServerTest, BodyTooLargeIs413) {
  HttpServerOptions o;
  o.max_body_bytes = 1024;
  start(o);
  {
    TestClient c(server_->port());
    auto r = c.request("POST", "/echo", std::string(4096, 'x'));
    EXPECT_EQ(r.status, 413) << r.error;
    auto j = nlohmann::json::parse(r.body);
    EXPECT_EQ(j["error"]["code"], "request_too_large");
    EXPECT_FALSE(r.keep_alive);
  }
  {
    // Refused from the Content-Length alone, before the body is sent.
    TestClient c(server_->port());
    std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n";
    net::write(c.socket(), net::buffer(head));
    auto r = c.read();
    EXPECT_EQ(r.status, 413) << r.error;
  }
  TestClient c(server_->port());
  EXPECT_EQ(c.request("POST", "/echo", std::string(1000, 'y')).status, 200);
}

TEST_F(HttpServerTest, MalformedRequestIs400) {
  start();
  TestClient c(server_->port());
  std::string junk = "GARBAGE\x01 / HTTP/1.1\r\n\r\n";
  net::write(c.socket(), net::buffer(junk));
  auto r = c.read();
  EXPECT_EQ(r.status, 400) << r.error;
}

TEST_F(HttpServerTest, SlowHeadersAreClosedByTimeoutAndOthersStillServed) {
  HttpServerOptions o;
  o.header_timeout = 200ms;
  start(o);
  TestClient slow(server_->port());
  net::write(slow.socket(), net::buffer(std::string("GET /echo HTTP/1.1\r\nHo")));
  TestClient fast(server_->port());
  EXPECT_EQ(fast.request("POST", "/echo", "x").status, 200);
  EXPECT_TRUE(slow.closed_by_server(3s));
  EXPECT_EQ(fast.request("POST", "/echo", "y").status, 200);
}

TEST_F(HttpServerTest, IdleKeepAliveConnectionsAreClosedAfterIdleTimeout) {
  HttpServerOptions o;
  o.idle_timeout = 200ms;
  start(o);
  TestClient c(server_->port());
  EXPECT_EQ(c.request("GET", "/echo").status, 200);
  EXPECT_TRUE(c.closed_by_server(3s));
}

TEST_F(HttpServerTest, DisconnectMidStreamIsReported) {
  start();
  {
    TestClient c(server_->port());
    c.send("GET", "/stream?n=1000");
    http::response_parser<http::empty_body> p;
    http::read_header(c.socket(), c.buffer(), p);
    EXPECT_EQ(p.get().result_int(), 200u);
  }  // closes the socket mid-stream
  for (int i = 0; i < 300 && disconnects_.load() == 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(disconnects_.load(), 1);
}

TEST_F(HttpServerTest, ConnectionsBeyondTheCapGet503) {
  HttpServerOptions o;
  o.max_connections = 2;
  start(o);
  TestClient a(server_->port()), b(server_->port());
  EXPECT_EQ(a.request("GET", "/echo").status, 200);
  EXPECT_EQ(b.request("GET", "/echo").status, 200);
  TestClient c(server_->port());
  c.send("GET", "/echo");
  auto r = c.read();
  EXPECT_EQ(r.status, 503) << r.error;
  EXPECT_EQ(a.request("GET", "/echo").status, 200);
}

TEST_F(HttpServerTest, HundredsOfIdleConnectionsDoNotBlockARequest) {
  HttpServerOptions o;
  o.n_threads = 1;
  start(o);
  constexpr int kIdle = 500;
  std::vector<std::unique_ptr<TestClient>> idle;
  for (int i = 0; i < kIdle; ++i) {
    idle.push_back(std::make_unique<TestClient>(server_->port()));
    if (i % 50 == 0) {
      EXPECT_EQ(idle.back()->request("GET", "/echo").status, 200);  // some mid-keep-alive
    }
  }
  for (int i = 0; i < 200 && server_->connections() < kIdle; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(server_->connections(), kIdle);
  TestClient c(server_->port());
  auto r = c.request("POST", "/echo", "still here");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "still here");
}

TEST_F(HttpServerTest, GracefulStopFinishesInFlightRequests) {
  start();
  TestClient idle(server_->port());
  EXPECT_EQ(idle.request("GET", "/echo").status, 200);
  TestClient busy(server_->port());
  busy.send("GET", "/late");
  std::this_thread::sleep_for(50ms);  // the request is in the handler
  auto stopper = std::async(std::launch::async, [this] { server_->stop(5s); });
  auto r = busy.read();
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body, "late");
  EXPECT_FALSE(r.keep_alive);  // draining: the connection closes after this response
  stopper.get();
  EXPECT_EQ(server_->connections(), 0);
  EXPECT_TRUE(idle.closed_by_server(1s));
}

TEST_F(HttpServerTest, StopAfterGraceClosesStreamsAndReportsDisconnect) {
  start();
  TestClient c(server_->port());
  c.send("GET", "/stream?n=1000");
  http::response_parser<http::empty_body> p;
  http::read_header(c.socket(), c.buffer(), p);
  server_->stop(100ms);
  EXPECT_EQ(disconnects_.load(), 1);
  EXPECT_EQ(server_->connections(), 0);
}

TEST(HttpServerStart, BadAddressAndBusyPortAreErrors) {
  HttpServerOptions o;
  o.host = "not-an-ip";
  HttpServer bad(o, [](HttpRequest&&, std::shared_ptr<ResponseWriter>) {});
  EXPECT_EQ(bad.start().code(), ErrorCode::kInvalidArgument);

  HttpServerOptions a;
  HttpServer first(a, [](HttpRequest&&, std::shared_ptr<ResponseWriter>) {});
  ASSERT_TRUE(first.start().is_ok());
  HttpServerOptions b;
  b.port = first.port();
  HttpServer second(b, [](HttpRequest&&, std::shared_ptr<ResponseWriter>) {});
  Status s = second.start();
  EXPECT_EQ(s.code(), ErrorCode::kIoError);
  EXPECT_NE(s.message().find(std::to_string(first.port())), std::string::npos);
}

}  // namespace http_server_test
}  // namespace tessera::serve
