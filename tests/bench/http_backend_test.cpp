#include "tessera/bench/http_backend.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>

#include "fake_openai_server.h"
#include "tessera/bench/load_generator.h"
#include "tessera/bench/metrics.h"
#include "tessera/bench/openai_chunk.h"
#include "tessera/bench/sse_parser.h"

namespace tessera::bench {
namespace {

using testing::FakeOpenAiServer;

// Collects one query's callbacks.
class Collector final : public QueryObserver {
 public:
  void on_chunk(uint64_t, int32_t n) override {
    std::lock_guard<std::mutex> lock(mu_);
    chunks.push_back(n);
  }
  void on_complete(uint64_t, const CompletionInfo& i) override {
    std::lock_guard<std::mutex> lock(mu_);
    info = i;
    ok = true;
    ++terminal;
    cv_.notify_all();
  }
  void on_error(uint64_t, QueryError e) override {
    std::lock_guard<std::mutex> lock(mu_);
    error = e;
    ++terminal;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(10), [&] { return terminal > 0; }));
  }
  std::vector<int32_t> chunks;
  CompletionInfo info;
  bool ok = false;
  int terminal = 0;
  QueryError error;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

struct Run {
  Collector c;
  QuerySample s;
};

std::unique_ptr<Run> run_one(HttpBackend& b, const std::string& prompt, int max_tokens = 4) {
  auto r = std::make_unique<Run>();
  r->s.prompt = prompt;
  r->s.max_output_tokens = max_tokens;
  b.issue(Query{0, 0, &r->s}, &r->c);
  r->c.wait();
  return r;
}

std::unique_ptr<HttpBackend> backend(const std::string& url, HttpApi api = HttpApi::kCompletions,
                                     double timeout_s = 5.0, std::string key = "") {
  HttpBackendOptions o;
  o.url = url;
  o.model = "m";
  o.api = api;
  o.timeout_s = timeout_s;
  o.api_key = std::move(key);
  o.ignore_eos = true;
  auto b = HttpBackend::create(o);
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  return std::move(b).value();
}

TEST(HttpBackend, StreamsCompletionsWithExactUsage) {
  FakeOpenAiServer server;
  auto b = backend(server.url());
  auto r = run_one(*b, "ok", 5);
  EXPECT_TRUE(r->c.ok);
  EXPECT_EQ(r->c.terminal, 1);
  EXPECT_EQ(r->c.chunks.size(), 5u);
  EXPECT_EQ(r->c.info.output_tokens, 5);
  EXPECT_EQ(r->c.info.prompt_tokens, 11);
  EXPECT_EQ(server.last_target(), "/v1/completions");
  const auto body = nlohmann::json::parse(server.last_body());
  EXPECT_EQ(body["prompt"], "ok");
  EXPECT_EQ(body["max_tokens"], 5);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["model"], "m");
}

TEST(HttpBackend, BodyVariantsAreMergedByQueryId) {
  HttpBackendOptions o;
  o.url = "http://127.0.0.1:1";
  o.model = "base";
  o.body_variants = {nlohmann::json{{"model", "base:a"}},
                     nlohmann::json{{"lora", {{{"id", 1}, {"scale", 1.0}}}}, {"stream_options", nullptr}},
                     nlohmann::json::object()};
  auto b = HttpBackend::create(o);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  QuerySample s;
  s.prompt = "p";
  s.max_output_tokens = 2;
  const auto q0 = nlohmann::json::parse((*b)->request_body(s, 0));
  const auto q1 = nlohmann::json::parse((*b)->request_body(s, 1));
  const auto q2 = nlohmann::json::parse((*b)->request_body(s, 2));
  const auto q3 = nlohmann::json::parse((*b)->request_body(s, 3));
  EXPECT_EQ(q0["model"], "base:a");
  EXPECT_EQ(q1["model"], "base");
  EXPECT_EQ(q1["lora"][0]["id"], 1);
  EXPECT_FALSE(q1.contains("stream_options"));  // null removes a field (merge patch)
  EXPECT_EQ(q2["model"], "base");
  EXPECT_TRUE(q2.contains("stream_options"));
  EXPECT_EQ(q3, q0);  // cycles
  EXPECT_EQ(q0["prompt"], "p");
}

TEST(HttpBackend, ChatSkipsTheRoleChunkAndUsesThePrefixPath) {
  FakeOpenAiServer server;
  auto b = backend(server.url() + "/v1/", HttpApi::kChat);
  auto r = run_one(*b, "ok", 3);
  EXPECT_TRUE(r->c.ok);
  EXPECT_EQ(r->c.chunks.size(), 3u);  // the role-only first chunk is not a token
  EXPECT_EQ(r->c.info.output_tokens, 3);
  EXPECT_EQ(server.last_target(), "/v1/chat/completions");
  const auto body = nlohmann::json::parse(server.last_body());
  EXPECT_EQ(body["messages"][0]["content"], "ok");
  EXPECT_EQ(body["max_completion_tokens"], 3);
}

TEST(HttpBackend, WithoutUsageCountsChunks) {
  FakeOpenAiServer server;
  auto b = backend(server.url());
  auto r = run_one(*b, "ok nousage", 4);
  EXPECT_TRUE(r->c.ok);
  EXPECT_EQ(r->c.info.output_tokens, -1);  // unknown: the harness falls back to the chunks
  EXPECT_EQ(r->c.chunks.size(), 4u);
}

TEST(HttpBackend, ErrorsAreClassified) {
  FakeOpenAiServer server;
  auto b = backend(server.url(), HttpApi::kCompletions, 0.2);
  auto e500 = run_one(*b, "status500");
  EXPECT_FALSE(e500->c.ok);
  EXPECT_EQ(e500->c.error.kind, ErrorKind::kHttpStatus) << e500->c.error.message;
  EXPECT_EQ(e500->c.error.http_status, 500);
  EXPECT_NE(e500->c.error.message.find("model exploded"), std::string::npos);
  auto junk = run_one(*b, "junk");
  EXPECT_EQ(junk->c.error.kind, ErrorKind::kBadStream);
  auto err = run_one(*b, "error");
  EXPECT_EQ(err->c.error.kind, ErrorKind::kServer);
  EXPECT_NE(err->c.error.message.find("out of KV cache"), std::string::npos);
  EXPECT_EQ(err->c.chunks.size(), 1u);
  auto drop = run_one(*b, "drop", 6);
  EXPECT_EQ(drop->c.error.kind, ErrorKind::kConnect);
  EXPECT_EQ(drop->c.chunks.size(), 2u);
  auto stall = run_one(*b, "stall");
  EXPECT_EQ(stall->c.error.kind, ErrorKind::kTimeout);
  for (auto* r : {e500.get(), junk.get(), err.get(), drop.get(), stall.get()}) {
    EXPECT_EQ(r->c.terminal, 1);
  }
}

TEST(HttpBackend, ConnectionRefusedIsAConnectError) {
  unsigned short port;
  {
    FakeOpenAiServer probe;  // a port that was just free, now closed
    port = static_cast<unsigned short>(std::stoi(probe.url().substr(probe.url().rfind(':') + 1)));
  }
  auto b = backend("http://127.0.0.1:" + std::to_string(port));
  auto r = run_one(*b, "ok");
  EXPECT_EQ(r->c.error.kind, ErrorKind::kConnect);
}

TEST(HttpBackend, SendsTheApiKey) {
  FakeOpenAiServer server(1, "sekret");
  auto good = backend(server.url(), HttpApi::kCompletions, 5.0, "sekret");
  EXPECT_TRUE(run_one(*good, "ok")->c.ok);
  auto bad = backend(server.url(), HttpApi::kCompletions, 5.0, "wrong");
  auto r = run_one(*bad, "ok");
  EXPECT_EQ(r->c.error.kind, ErrorKind::kHttpStatus);
  EXPECT_EQ(r->c.error.http_status, 401);
}

TEST(HttpBackend, UnderTheHarnessConnectionsAreReused) {
  FakeOpenAiServer server(1);
  auto b = backend(server.url());
  InMemoryLibrary lib;
  for (int i = 0; i < 4; ++i) {
    QuerySample s;
    s.prompt = "ok";
    s.input_tokens = 1;
    s.max_output_tokens = 3;
    lib.add(s);
  }
  RealSleeper sleeper;
  LoadGenerator gen(b.get(), &lib, &sleeper);
  TestSettings s;
  s.scenario = Scenario::kConcurrency;
  s.concurrency = 4;
  s.min_queries = 48;
  const ServeMetrics m = compute_metrics(*gen.run(s), Slo{});
  EXPECT_EQ(m.completed, 48);
  EXPECT_EQ(m.total_output_tokens, 144);
  EXPECT_EQ(m.total_input_tokens, 48 * 11);  // from usage
  EXPECT_TRUE(m.output_tokens_exact);
  EXPECT_EQ(m.itl.n, 48u * 2);
  EXPECT_GE(m.itl.p[1], 0.9);  // p90: the server sleeps 1 ms between chunks
  EXPECT_LE(server.connections(), 8);  // kept alive, not one per query
  EXPECT_EQ(server.requests(), 48);
}

TEST(HttpBackend, UrlParsing) {
  auto p = parse_http_url("http://example.com:8080/base/");
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->host, "example.com");
  EXPECT_EQ(p->port, "8080");
  EXPECT_EQ(p->prefix, "/base");
  EXPECT_EQ(parse_http_url("http://h")->port, "80");
  EXPECT_EQ(parse_http_url("http://[::1]:9000")->host, "::1");
  EXPECT_FALSE(parse_http_url("https://h").is_ok());
  EXPECT_FALSE(parse_http_url("h:80").is_ok());
  EXPECT_FALSE(parse_http_url("http://h:x").is_ok());
}

TEST(SseParser, HandlesArbitrarySplitsLineEndingsAndComments) {
  const std::string stream =
      ": keep-alive comment\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: message\n"
      "data:first\n"
      "data: second\n\n"
      "data: [DONE]\r\r";
  for (size_t split = 1; split <= stream.size(); ++split) {
    SCOPED_TRACE(split);
    SseParser p;
    std::vector<std::string> ev;
    for (size_t i = 0; i < stream.size(); i += split) p.feed(stream.substr(i, split), ev);
    ASSERT_EQ(ev.size(), 3u);
    EXPECT_EQ(ev[0], "{\"a\":1}");
    EXPECT_EQ(ev[1], "first\nsecond");
    EXPECT_EQ(ev[2], "[DONE]");
    EXPECT_FALSE(p.has_partial());
  }
}

TEST(OpenAiChunk, ParsesTextDeltaUsageDoneAndErrors) {
  auto c = parse_openai_chunk(R"({"choices":[{"text":"hi","index":0}]})", false);
  EXPECT_EQ(c->text, "hi");
  auto d = parse_openai_chunk(R"({"choices":[{"delta":{"content":"yo"}}]})", true);
  EXPECT_EQ(d->text, "yo");
  auto role = parse_openai_chunk(R"({"choices":[{"delta":{"role":"assistant"}}]})", true);
  EXPECT_TRUE(role->text.empty());
  auto u = parse_openai_chunk(
      R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}})", false);
  EXPECT_TRUE(u->has_usage);
  EXPECT_EQ(u->prompt_tokens, 7);
  EXPECT_EQ(u->completion_tokens, 3);
  EXPECT_TRUE(parse_openai_chunk("[DONE]", false)->done);
  EXPECT_EQ(parse_openai_chunk(R"({"error":{"message":"boom"}})", false)->error, "boom");
  auto t = parse_openai_chunk(
      R"({"choices":[{"text":""}],"timings":{"prompt_ms":12.5,"predicted_ms":40}})", false);
  EXPECT_EQ(t->server_prompt_ms, 12.5);
  EXPECT_EQ(t->server_predicted_ms, 40);
  EXPECT_FALSE(parse_openai_chunk("nope", false).is_ok());
  EXPECT_FALSE(parse_openai_chunk(R"({"id":"x"})", false).is_ok());
}

}  // namespace
}  // namespace tessera::bench
