// Server routes over loopback HTTP with a scripted backend: response shapes, SSE streams, every
// error status, auth, metrics, and cancellation on disconnect.
#include "tessera/serve/server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <thread>

#include "fake_backend.h"
#include "http_test_client.h"

namespace tessera::serve {
namespace server_test {

using json = nlohmann::json;
using testing::FakeBackend;
using testing::TestClient;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
namespace net = boost::asio;

class ServerTest : public ::testing::Test {
 protected:
  void start(ServerOptions o = {}, bool with_chat = true) {
    backend_ = std::make_shared<FakeBackend>();
    models_ = std::make_shared<ModelRouter>();
    ModelEntry e;
    e.name = "tiny";
    e.backend = backend_;
    e.created = 1700000000;
    if (with_chat) {
      // Renders tools (as their JSON) and asks for Hermes-style calls.
      e.chat = [](const std::vector<ChatTurn>& turns,
                  const nlohmann::ordered_json* tools) -> Result<RenderedChat> {
        std::string out;
        if (tools != nullptr) out += "<tools>" + tools->dump() + "\n";
        for (const auto& t : turns) {
          if (t.role == "tool") return invalid_argument("tool messages are not in this template");
          out += "<" + t.role + ">" + t.content + "\n";
        }
        return RenderedChat{out + "<assistant>", ToolCallSyntax::kHermes};
      };
    }
    ASSERT_TRUE(models_->add(e).is_ok());
    o.http.port = 0;
    server_ = std::make_unique<Server>(o, models_);
    ASSERT_TRUE(server_->start().is_ok());
    server_->set_serving();
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
  }

  testing::ClientResponse post(const std::string& path, const json& body,
                               std::vector<std::pair<std::string, std::string>> headers = {}) {
    TestClient c(server_->port());
    return c.request("POST", path, body.dump(), std::move(headers));
  }
  testing::ClientResponse get(const std::string& path,
                              std::vector<std::pair<std::string, std::string>> headers = {}) {
    TestClient c(server_->port());
    return c.request("GET", path, "", std::move(headers));
  }
  static void expect_error(const testing::ClientResponse& r, int status, const std::string& type,
                           const std::string& param = "") {
    EXPECT_EQ(r.status, status) << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["type"], type) << r.body;
    EXPECT_TRUE(j["error"]["message"].is_string());
    EXPECT_TRUE(j["error"].contains("code"));
    if (param.empty()) {
      EXPECT_TRUE(j["error"]["param"].is_null()) << r.body;
    } else {
      EXPECT_EQ(j["error"]["param"], param) << r.body;
    }
  }

  std::shared_ptr<FakeBackend> backend_;
  std::shared_ptr<ModelRouter> models_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerTest, ListsAndGetsModels) {
  start();
  auto r = get("/v1/models");
  ASSERT_EQ(r.status, 200);
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 1u);
  EXPECT_EQ(j["data"][0]["id"], "tiny");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["created"], 1700000000);
  EXPECT_EQ(j["data"][0]["root"], "tiny");
  EXPECT_EQ(j["data"][0]["max_model_len"], 256);
  EXPECT_EQ(json::parse(get("/v1/models/tiny").body)["id"], "tiny");
  EXPECT_EQ(json::parse(get("/v1/models/tiny").body)["max_model_len"], 256);
  expect_error(get("/v1/models/nope"), 404, "not_found_error", "model");
}

TEST_F(ServerTest, CompletionHasOpenAIShapeAndUsage) {
  start();
  auto r = post("/v1/completions",
                {{"model", "tiny"}, {"prompt", "hello world"}, {"max_tokens", 3}, {"temperature", 0},
                 {"stop", "xyz"}, {"seed", 5}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers[http::field::content_type], "application/json");
  json j = json::parse(r.body);
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("cmpl-"));
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["text"], "w0 w1 w2 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 3);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

  auto reqs = backend_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].max_tokens, 3);
  EXPECT_EQ(reqs[0].sampling.temperature, 0.0f);
  EXPECT_EQ(reqs[0].sampling.seed, 5u);
  EXPECT_EQ(reqs[0].stop, std::vector<std::string>{"xyz"});
  // Tokenized with add_special: BOS first.
  EXPECT_EQ(reqs[0].prompt.front(), backend_->tokenizer().bos_id());
}

TEST_F(ServerTest, CompletionAcceptsTokenIdsAndChecksVocabulary) {
  start();
  auto r = post("/v1/completions", {{"model", "tiny"}, {"prompt", {1, 50, 60}}, {"max_tokens", 1}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(backend_->requests()[0].prompt, (std::vector<int32_t>{1, 50, 60}));
  expect_error(post("/v1/completions", {{"model", "tiny"}, {"prompt", {1, 99999}}}), 400,
               "invalid_request_error", "prompt");
}

TEST_F(ServerTest, CompletionStreamIsServerSentEventsEndingInDone) {
  start();
  auto r = post("/v1/completions", {{"model", "tiny"}, {"prompt", "hi"}, {"max_tokens", 4},
                                    {"stream", true}, {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers[http::field::content_type], "text/event-stream");
  auto events = testing::sse_payloads(r.body);
  ASSERT_GE(events.size(), 6u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string id;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json c = json::parse(events[i]);
    EXPECT_EQ(c["object"], "text_completion");
    if (id.empty()) id = c["id"];
    EXPECT_EQ(c["id"], id);  // one id for the whole stream
    text += c["choices"][0]["text"].get<std::string>();
    EXPECT_TRUE(c.contains("usage") && c["usage"].is_null());
  }
  EXPECT_EQ(text, "w0 w1 w2 w3 ");
  json last_choice = json::parse(events[events.size() - 3]);
  EXPECT_EQ(last_choice["choices"][0]["finish_reason"], "length");
  json usage = json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 4);
}

// n > 1: n engine requests with seeds seed, seed + 1, ...; one choice each, by index.
TEST_F(ServerTest, SeveralChoicesWholeAndStreamed) {
  start();
  auto r = post("/v1/completions", {{"model", "tiny"}, {"prompt", "hi"}, {"max_tokens", 2},
                                    {"n", 3}, {"seed", 40}, {"logprobs", 1}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 3u) << r.body;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], "w0 w1 ");
    EXPECT_EQ(j["choices"][i]["logprobs"]["tokens"].size(), 2u);
  }
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);  // every choice's tokens, the prompt once
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"].get<int>() + 6);
  auto reqs = backend_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  std::set<uint64_t> seeds;
  for (const auto& q : reqs) {
    seeds.insert(q.sampling.seed);
    EXPECT_EQ(q.prompt, reqs[0].prompt);
  }
  EXPECT_EQ(seeds, (std::set<uint64_t>{40, 41, 42}));

  // Streamed chat: a role delta per choice, then each choice's text and finish under its index.
  r = post("/v1/chat/completions", {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "x"}}}},
                                    {"max_tokens", 3}, {"n", 2}, {"stream", true},
                                    {"stream_options", {{"include_usage", true}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  auto events = testing::sse_payloads(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::map<int, std::string> text, finish;
  std::map<int, int> roles;
  json usage;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json c = json::parse(events[i]);
    if (c["choices"].empty()) {
      usage = c["usage"];
      continue;
    }
    const int idx = c["choices"][0]["index"];
    const json& delta = c["choices"][0]["delta"];
    if (delta.contains("role")) ++roles[idx];
    if (delta.contains("content")) text[idx] += delta["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish[idx] = c["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(roles, (std::map<int, int>{{0, 1}, {1, 1}}));
  EXPECT_EQ(text, (std::map<int, std::string>{{0, "w0 w1 w2 "}, {1, "w0 w1 w2 "}}));
  EXPECT_EQ(finish, (std::map<int, std::string>{{0, "length"}, {1, "length"}}));
  EXPECT_EQ(usage["completion_tokens"], 6) << r.body;
}

TEST_F(ServerTest, ChatCompletionAndStream) {
  start();
  json body = {{"model", "tiny"},
               {"messages", {{{"role", "system"}, {"content", "be brief"}},
                             {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "hi"}}}}}}},
               {"max_completion_tokens", 2}};
  auto r = post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_TRUE(j["id"].get<std::string>().starts_with("chatcmpl-"));
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "w0 w1 ");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  // The rendered template was tokenized.
  const auto& tok = backend_->tokenizer();
  EXPECT_EQ(backend_->requests()[0].prompt, tok.encode("<system>be brief\n<user>hi\n<assistant>", true, true));

  body["stream"] = true;
  auto s = post("/v1/chat/completions", body);
  ASSERT_EQ(s.status, 200);
  auto events = testing::sse_payloads(s.body);
  ASSERT_GE(events.size(), 4u);
  EXPECT_EQ(events.back(), "[DONE]");
  json first = json::parse(events[0]);
  EXPECT_EQ(first["object"], "chat.completion.chunk");
  EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json c = json::parse(events[i]);
    const auto& d = c["choices"][0]["delta"];
    if (d.contains("content")) text += d["content"].get<std::string>();
  }
  EXPECT_EQ(text, "w0 w1 ");
  EXPECT_EQ(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"], "length");
}

TEST_F(ServerTest, ChatWithoutTemplateOrWithFailingTemplateIs400) {
  start({}, /*with_chat=*/false);
  json body = {{"model", "tiny"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}};
  expect_error(post("/v1/chat/completions", body), 400, "invalid_request_error", "messages");
  // Completions still work.
  EXPECT_EQ(post("/v1/completions", {{"model", "tiny"}, {"prompt", "x"}}).status, 200);
}

TEST_F(ServerTest, ChatTemplateErrorsAre400) {
  start();
  json body = {{"model", "tiny"}, {"messages", {{{"role", "tool"}, {"content", "x"}}}}};
  expect_error(post("/v1/chat/completions", body), 400, "invalid_request_error", "messages");
}

// Function calling end to end over the scripted backend: the tools reach the template, the
// output (Hermes syntax, as the test template asks) is parsed into tool_calls, whole and streamed.
TEST_F(ServerTest, ToolCallsAreParsedFromTheOutput) {
  start();
  const json tools = json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}])");
  json body = {{"model", "tiny"},
               {"messages", {{{"role", "user"}, {"content", "weather in Paris?"}}}},
               {"tools", tools},
               {"max_tokens", 32}};
  backend_->set_script({"<tool_call>", "\n{\"name\": \"get_weather\", ", "\"arguments\": ",
                        "{\"city\": \"Paris\"}}", "\n</tool_call>"});
  auto r = post("/v1/chat/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  const json& msg = j["choices"][0]["message"];
  EXPECT_TRUE(msg["content"].is_null()) << r.body;
  ASSERT_EQ(msg["tool_calls"].size(), 1u) << r.body;
  EXPECT_EQ(msg["tool_calls"][0]["type"], "function");
  EXPECT_TRUE(msg["tool_calls"][0]["id"].get<std::string>().starts_with("call_"));
  EXPECT_EQ(msg["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(msg["tool_calls"][0]["function"]["arguments"].get<std::string>()),
            json({{"city", "Paris"}}));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "tool_calls");
  // The template saw the tools.
  const auto& tok = backend_->tokenizer();
  EXPECT_NE(tok.decode(backend_->requests()[0].prompt).find("get_weather"), std::string::npos);
  EXPECT_EQ(backend_->requests()[0].structured, nullptr);  // auto: not constrained

  // Streamed: no text deltas for the call, one tool_calls delta, then the finish.
  body["stream"] = true;
  auto s = post("/v1/chat/completions", body);
  ASSERT_EQ(s.status, 200);
  auto events = testing::sse_payloads(s.body);
  ASSERT_EQ(events.size(), 4u) << s.body;  // role, tool_calls, finish, [DONE]
  json calls = json::parse(events[1])["choices"][0]["delta"]["tool_calls"];
  ASSERT_EQ(calls.size(), 1u) << events[1];
  EXPECT_EQ(calls[0]["index"], 0);
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(json::parse(events[2])["choices"][0]["finish_reason"], "tool_calls");

  // Plain text stays text, streamed as one delta at the end.
  backend_->set_script({"It is ", "sunny."});
  auto t = post("/v1/chat/completions", body);
  auto text_events = testing::sse_payloads(t.body);
  ASSERT_EQ(text_events.size(), 4u) << t.body;
  EXPECT_EQ(json::parse(text_events[1])["choices"][0]["delta"]["content"], "It is sunny.");
  EXPECT_EQ(json::parse(text_events[2])["choices"][0]["finish_reason"], "stop");
  body["stream"] = false;
  auto u = post("/v1/chat/completions", body);
  json plain = json::parse(u.body)["choices"][0];
  EXPECT_EQ(plain["message"]["content"], "It is sunny.");
  EXPECT_FALSE(plain["message"].contains("tool_calls"));
  EXPECT_EQ(plain["finish_reason"], "stop");

  // A forced call is decoded under the call schema.
  body["tool_choice"] = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  backend_->set_script({"{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}"});
  auto f = post("/v1/chat/completions", body);
  ASSERT_EQ(f.status, 200) << f.body;
  EXPECT_NE(backend_->requests().back().structured, nullptr);
  json fc = json::parse(f.body)["choices"][0];
  EXPECT_EQ(fc["finish_reason"], "tool_calls");
  EXPECT_EQ(fc["message"]["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");

  // Streaming logprobs cannot be given with tools (the text is held back).
  body["stream"] = true;
  body["logprobs"] = true;
  expect_error(post("/v1/chat/completions", body), 400, "invalid_request_error", "logprobs");
}

TEST_F(ServerTest, LogprobsShapes) {
  start();
  auto r = post("/v1/completions", {{"model", "tiny"}, {"prompt", "x"}, {"max_tokens", 2}, {"logprobs", 2}});
  ASSERT_EQ(r.status, 200) << r.body;
  json lp = json::parse(r.body)["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"w0 ", "w1 "}));
  EXPECT_EQ(lp["token_logprobs"][0], -0.5);
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_EQ(lp["text_offset"], json({0, 3}));
  EXPECT_EQ(backend_->requests()[0].n_logprobs, 2);

  auto c = post("/v1/chat/completions", {{"model", "tiny"},
                                         {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                         {"max_tokens", 1}, {"logprobs", true}, {"top_logprobs", 3}});
  ASSERT_EQ(c.status, 200) << c.body;
  json content = json::parse(c.body)["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 1u);
  EXPECT_EQ(content[0]["token"], "w0 ");
  EXPECT_EQ(content[0]["bytes"], json({'w', '0', ' '}));
  EXPECT_EQ(content[0]["top_logprobs"].size(), 3u);
}

TEST_F(ServerTest, BadRequestsAre400NamingTheField) {
  start();
  TestClient c(server_->port());
  auto malformed = c.request("POST", "/v1/completions", "{\"prompt\": ");
  expect_error(malformed, 400, "invalid_request_error");
  EXPECT_NE(json::parse(malformed.body)["error"]["message"].get<std::string>().find("JSON"), std::string::npos);
  expect_error(c.request("POST", "/v1/completions", "[1,2]"), 400, "invalid_request_error");
  expect_error(c.request("POST", "/v1/completions", std::string(1000, '[') + std::string(1000, ']')),
               400, "invalid_request_error");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"temperature", "hot"}}), 400,
               "invalid_request_error", "temperature");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"temperature", 7}}), 400,
               "invalid_request_error", "temperature");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", "ten"}}), 400,
               "invalid_request_error", "max_tokens");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 0}}), 400,
               "invalid_request_error", "max_tokens");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"n", 17}}), 400, "invalid_request_error", "n");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"n", 0}}), 400, "invalid_request_error", "n");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"stream", "yes"}}), 400,
               "invalid_request_error", "stream");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"stop", 5}}), 400, "invalid_request_error", "stop");
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"logprobs", true}}), 400,
               "invalid_request_error", "logprobs");
  expect_error(post("/v1/completions", {{"max_tokens", 1}}), 400, "invalid_request_error", "prompt");
  expect_error(post("/v1/completions", {{"prompt", 5}}), 400, "invalid_request_error", "prompt");
  expect_error(post("/v1/chat/completions", {{"messages", "hi"}}), 400, "invalid_request_error", "messages");
  expect_error(post("/v1/chat/completions", {{"messages", {{{"role", "wizard"}, {"content", "x"}}}}}),
               400, "invalid_request_error", "messages[0].role");
  expect_error(post("/v1/chat/completions",
                    {{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}),
               400, "invalid_request_error", "top_logprobs");
  // Fields the server does not implement are refused by name, not silently ignored.
  expect_error(post("/v1/completions", {{"prompt", "x"}, {"mirostat", 2}}), 400,
               "invalid_request_error", "mirostat");
  expect_error(post("/v1/chat/completions",
                    {{"messages", {{{"role", "user"}, {"content", "x"}}}},
                     {"response_format", {{"type", "json_schema"},
                                          {"json_schema", {{"schema", {{"not", json::object()}}}}}}}}),
               400, "invalid_request_error", "response_format");
  EXPECT_TRUE(backend_->requests().empty());
}

TEST_F(ServerTest, TokenizeAndDetokenizeInBothDialects) {
  start();
  const auto& tok = backend_->tokenizer();
  const std::vector<int32_t> plain = tok.encode("hello world", false, true);
  const std::vector<int32_t> special = tok.encode("hello world", true, true);
  ASSERT_FALSE(plain.empty());
  // llama-server: "content", no special tokens unless asked.
  auto r = post("/tokenize", {{"content", "hello world"}});
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), plain);
  EXPECT_FALSE(j.contains("count"));
  j = json::parse(post("/tokenize", {{"content", "hello world"}, {"add_special", true}}).body);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), special);
  j = json::parse(post("/tokenize", {{"content", "hello world"}, {"with_pieces", true}}).body);
  ASSERT_EQ(j["tokens"].size(), plain.size());
  EXPECT_EQ(j["tokens"][0]["id"], plain[0]);
  EXPECT_EQ(j["tokens"][0]["piece"], tok.token_to_piece(plain[0], true));
  // vLLM: "prompt" and "model", special tokens by default, with count and max_model_len.
  r = post("/tokenize", {{"prompt", "hello world"}, {"model", "tiny"}});
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), special);
  EXPECT_EQ(j["count"], special.size());
  EXPECT_EQ(j["max_model_len"], 256);
  j = json::parse(post("/tokenize", {{"prompt", "hello world"}, {"add_special_tokens", false}}).body);
  EXPECT_EQ(j["tokens"].get<std::vector<int32_t>>(), plain);
  // Detokenize answers both names.
  r = post("/detokenize", {{"tokens", plain}});
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  EXPECT_EQ(j["content"], tok.decode(plain));
  EXPECT_EQ(j["content"], "hello world");
  EXPECT_EQ(j["prompt"], j["content"]);
  EXPECT_EQ(json::parse(post("/detokenize", {{"tokens", special}, {"model", "tiny"}}).body)["prompt"],
            "hello world");
  // Errors.
  expect_error(post("/tokenize", {{"content", "x"}, {"model", "nope"}}), 404, "not_found_error", "model");
  expect_error(post("/tokenize", {{"content", "x"}, {"prompt", "y"}}), 400, "invalid_request_error", "prompt");
  expect_error(post("/tokenize", json::object()), 400, "invalid_request_error", "content");
  expect_error(post("/tokenize", {{"content", 5}}), 400, "invalid_request_error", "content");
  expect_error(post("/tokenize", {{"content", "x"}, {"add_special", "yes"}}), 400, "invalid_request_error",
               "add_special");
  expect_error(post("/tokenize", {{"content", "x"}, {"messages", json::array()}}), 400,
               "invalid_request_error", "messages");
  expect_error(post("/detokenize", {{"tokens", {1, 512}}}), 400, "invalid_request_error", "tokens");
  expect_error(post("/detokenize", {{"tokens", {-1}}}), 400, "invalid_request_error", "tokens");
  expect_error(post("/detokenize", {{"content", "x"}}), 400, "invalid_request_error", "content");
  expect_error(post("/detokenize", json::object()), 400, "invalid_request_error", "tokens");
  expect_error(get("/tokenize"), 405, "invalid_request_error");
}

TEST_F(ServerTest, UnknownModelRouteAndMethod) {
  start();
  expect_error(post("/v1/completions", {{"model", "gpt-9"}, {"prompt", "x"}}), 404, "not_found_error", "model");
  expect_error(get("/v2/nothing"), 404, "not_found_error");
  auto r = get("/v1/completions");
  expect_error(r, 405, "invalid_request_error");
  EXPECT_EQ(r.headers[http::field::allow], "POST");
}

TEST_F(ServerTest, ApiKeyIsRequiredExceptForHealth) {
  ServerOptions o;
  o.api_key = "sekret";
  start(o);
  expect_error(get("/v1/models"), 401, "authentication_error");
  expect_error(get("/v1/models", {{"Authorization", "Bearer wrong"}}), 401, "authentication_error");
  expect_error(get("/v1/models", {{"Authorization", "sekret"}}), 401, "authentication_error");
  EXPECT_EQ(get("/v1/models", {{"Authorization", "Bearer sekret"}}).status, 200);
  EXPECT_EQ(get("/health").status, 200);
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}}, {{"Authorization", "Bearer sekret"}}).status, 200);
}

// Issue 42: the inference key cannot suspend, resume or evict models, nor load adapters.
TEST_F(ServerTest, OperatorRoutesNeedTheAdminKey) {
  ServerOptions o;
  o.api_key = "inference";
  o.admin_api_key = "operator";
  start(o);
  const std::pair<std::string, std::string> inference{"Authorization", "Bearer inference"};
  const std::pair<std::string, std::string> admin{"Authorization", "Bearer operator"};
  expect_error(get("/admin/models", {inference}), 403, "permission_error");
  expect_error(post("/admin/models/tiny/suspend", json::object(), {inference}), 403, "permission_error");
  expect_error(post("/v1/adapters", {{"name", "x"}, {"path", "x"}}, {inference}), 403, "permission_error");
  expect_error(get("/admin/models"), 401, "authentication_error");
  EXPECT_EQ(json::parse(get("/admin/models", {inference}).body)["error"]["code"], "admin_key_required");
  EXPECT_EQ(get("/admin/models", {admin}).status, 200);
  // The admin key works on the inference routes too; the inference key keeps them.
  EXPECT_EQ(get("/v1/models", {admin}).status, 200);
  EXPECT_EQ(get("/v1/models", {inference}).status, 200);
  EXPECT_EQ(get("/health").status, 200);
}

TEST_F(ServerTest, AnInferenceKeyAloneTurnsTheOperatorRoutesOff) {
  ServerOptions o;
  o.api_key = "inference";
  start(o);
  expect_error(get("/admin/models", {{"Authorization", "Bearer inference"}}), 403, "permission_error");
  EXPECT_EQ(get("/v1/models", {{"Authorization", "Bearer inference"}}).status, 200);
}

TEST_F(ServerTest, QueueFullIs429WithRetryAfterAndDrainingIs503) {
  start();
  backend_->fail_submits_with(resource_exhausted("the waiting queue is full (256)"));
  auto r = post("/v1/completions", {{"prompt", "x"}});
  expect_error(r, 429, "rate_limit_error");
  EXPECT_EQ(r.headers[http::field::retry_after], "1");
  backend_->fail_submits_with(Status(ErrorCode::kUnavailable, "draining"));
  expect_error(post("/v1/completions", {{"prompt", "x"}}), 503, "unavailable_error");
  backend_->fail_submits_with(out_of_range("the prompt does not fit"));
  auto o = post("/v1/completions", {{"prompt", "x"}});
  expect_error(o, 400, "invalid_request_error");
  EXPECT_EQ(json::parse(o.body)["error"]["code"], "context_length_exceeded");
}

TEST_F(ServerTest, HealthIs503WhileLoading) {
  backend_ = std::make_shared<FakeBackend>();
  models_ = std::make_shared<ModelRouter>();
  ASSERT_TRUE(models_->add({"tiny", backend_, {}, 0, "tessera", {}, {}, {}, {}, {}}).is_ok());
  ServerOptions o;
  server_ = std::make_unique<Server>(o, models_);
  ASSERT_TRUE(server_->start().is_ok());
  EXPECT_EQ(get("/health").status, 503);
  expect_error(post("/v1/completions", {{"prompt", "x"}}), 503, "unavailable_error");
  server_->set_serving();
  auto h = get("/health");
  EXPECT_EQ(h.status, 200);
  EXPECT_EQ(json::parse(h.body)["status"], "ok");
}

TEST_F(ServerTest, HugeBodyIs413) {
  ServerOptions o;
  o.http.max_body_bytes = 64 << 10;
  start(o);
  auto r = post("/v1/completions", {{"prompt", std::string(100 << 10, 'a')}});
  expect_error(r, 413, "invalid_request_error");
}

TEST_F(ServerTest, DisconnectMidStreamCancelsTheEngineRequest) {
  start();
  backend_->set_token_delay(5ms);
  {
    TestClient c(server_->port());
    c.send("POST", "/v1/completions",
           json({{"prompt", "x"}, {"max_tokens", 100000}, {"stream", true}}).dump());
    http::response_parser<http::string_body> p;
    http::read_header(c.socket(), c.buffer(), p);
    ASSERT_EQ(p.get().result_int(), 200u);
    std::this_thread::sleep_for(30ms);
  }
  for (int i = 0; i < 300 && backend_->active() > 0; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(backend_->cancelled().size(), 1u);
  EXPECT_EQ(backend_->active(), 0);
  // The server is fine afterwards, and counted the cancelled request.
  EXPECT_EQ(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}}).status, 200);
  EXPECT_NE(get("/metrics").body.find(
                "tessera_requests_finished_total{model=\"tiny\",reason=\"cancelled\"} 1"),
            std::string::npos);
}

TEST_F(ServerTest, MetricsExposeRequestsLatenciesAndEngineState) {
  start();
  ASSERT_EQ(post("/v1/completions", {{"prompt", "x"}, {"max_tokens", 3}}).status, 200);
  (void)get("/nope");
  // An exchange is counted just after its last byte is written, each on its own connection's
  // thread (in either order): poll until both are in.
  auto m = get("/metrics");
  for (int i = 0; i < 100 && (m.body.find("route=\"other\"") == std::string::npos ||
                              m.body.find("route=\"/v1/completions\"") == std::string::npos);
       ++i) {
    std::this_thread::sleep_for(10ms);
    m = get("/metrics");
  }
  ASSERT_EQ(m.status, 200);
  EXPECT_TRUE(m.headers[http::field::content_type].starts_with("text/plain; version=0.0.4"));
  const std::string& t = m.body;
  EXPECT_NE(t.find("# TYPE tessera_http_requests_total counter"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_http_requests_total{code=\"200\",route=\"/v1/completions\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_http_requests_total{code=\"404\",route=\"other\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_generation_tokens_total{model=\"tiny\"} 3"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE tessera_time_to_first_token_seconds histogram"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_time_to_first_token_seconds_count{model=\"tiny\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_time_per_output_token_seconds_count{model=\"tiny\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_kv_blocks_total{model=\"tiny\"} 64"), std::string::npos) << t;
  // Ever-growing values are counters named *_total (the fake engine has looked up 4 blocks, 1 hit).
  EXPECT_NE(t.find("# TYPE tessera_prefix_cache_queries_total counter"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_prefix_cache_queries_total{model=\"tiny\"} 4"), std::string::npos) << t;
  EXPECT_NE(t.find("tessera_prefix_cache_hits_total{model=\"tiny\"} 1"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE tessera_preemptions_total counter"), std::string::npos) << t;
  EXPECT_NE(t.find("# TYPE tessera_engine_iterations_total counter"), std::string::npos) << t;
  EXPECT_EQ(t.find("tessera_prefix_cache_hit_rate"), std::string::npos) << t;
  EXPECT_EQ(t.find("tessera_preemptions{"), std::string::npos) << t;
  for (const char* name : {"tessera_http_requests_total", "tessera_generation_tokens_total"}) {
    EXPECT_NE(t.find(std::string("# TYPE ") + name + " counter"), std::string::npos) << name;
  }
  // Sub-millisecond buckets for TPOT.
  EXPECT_NE(t.find("tessera_time_per_output_token_seconds_bucket{model=\"tiny\",le=\"0.0001\"}"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("tessera_queue_depth{model=\"tiny\"} 0"), std::string::npos) << t;
}

}  // namespace server_test
}  // namespace tessera::serve
