// The Server with a real Engine over a tiny random-weight model: the routes end to end, and an
// abrupt disconnect mid-stream frees the request's KV blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <regex>
#include <nlohmann/json.hpp>
#include <thread>

#include "http_test_client.h"
#include "tessera/model/architecture.h"
#include "tessera/model/synth.h"
#include "tessera/serve/server.h"
#include "test_util.h"

namespace tessera::serve {
namespace server_engine_test {

using json = nlohmann::json;
using testing::TestClient;
using namespace std::chrono_literals;
namespace http = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class ServerEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    const std::string path = dir_->file("tiny.gguf");
    auto m = model::load_model(path);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    std::shared_ptr<model::Model> model(std::move(m).value());
    auto t = model::make_tokenizer(model->file().metadata);
    ASSERT_TRUE(t.is_ok()) << t.status().to_string();
    std::shared_ptr<const model::Tokenizer> tok(std::move(t).value());
    engine::EngineOptions eo;
    eo.n_threads = 1;
    eo.ctx_size = 2048;
    eo.max_running = 2;
    eo.spec.method = engine::SpecMethod::kNgram;  // requests may switch it off
    auto e = engine::Engine::create(model, tok, eo);
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    engine_ = std::shared_ptr<engine::Engine>(std::move(e).value());
    engine_->start();

    auto models = std::make_shared<ModelRouter>();
    ASSERT_TRUE(models->add({model_name_from_path(path), engine_backend(engine_), {}, 0, "tessera", {}, {}, {}, {}, {}}).is_ok());
    server_ = std::make_unique<Server>(ServerOptions{}, models);
    ASSERT_TRUE(server_->start().is_ok());
    server_->set_serving();
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
    if (engine_) engine_->stop();
  }

  static inline tessera::testing::TempDir* dir_ = nullptr;
  std::shared_ptr<engine::Engine> engine_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerEngineTest, CompletionEndToEnd) {
  TestClient c(server_->port());
  auto r = c.request("POST", "/v1/completions",
                     json({{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 5},
                           {"temperature", 0}, {"ignore_eos", true}})
                         .dump());
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["model"], "tiny");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(j["usage"]["completion_tokens"], 5);
  EXPECT_GT(j["usage"]["prompt_tokens"].get<int>(), 1);

  // Greedy decoding gives the same text streamed.
  auto s = c.request("POST", "/v1/completions",
                     json({{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 5},
                           {"temperature", 0}, {"ignore_eos", true}, {"stream", true}})
                         .dump());
  ASSERT_EQ(s.status, 200);
  auto events = testing::sse_payloads(s.body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  for (size_t i = 0; i + 1 < events.size(); ++i) text += json::parse(events[i])["choices"][0]["text"].get<std::string>();
  EXPECT_EQ(text, j["choices"][0]["text"].get<std::string>());
}

// Speculation is invisible in the output (greedy) and visible in /metrics.
TEST_F(ServerEngineTest, SpeculationOnOrOffGivesTheSameTextAndCountsInMetrics) {
  TestClient c(server_->port());
  std::string texts[2];
  for (int on = 0; on < 2; ++on) {
    auto r = c.request("POST", "/v1/completions",
                       json({{"model", "tiny"}, {"prompt", "a b c a b c a b c a b"}, {"max_tokens", 24},
                             {"temperature", 0}, {"ignore_eos", true}, {"speculative", on == 1}})
                           .dump());
    ASSERT_EQ(r.status, 200) << r.body;
    texts[on] = json::parse(r.body)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(texts[0], texts[1]);
  EXPECT_GT(engine_->stats().spec_draft_tokens, 0);
  auto m = c.request("GET", "/metrics", "");
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("tessera_spec_draft_tokens_total{model=\"tiny\"}"), std::string::npos) << m.body;
  EXPECT_NE(m.body.find("tessera_spec_accepted_per_step_bucket"), std::string::npos);
}

// n > 1 over the real engine: the other choices reuse choice 0's prompt blocks through the prefix
// cache, and choice i is exactly what a single request with seed + i generates.
TEST_F(ServerEngineTest, SeveralChoicesShareThePromptAndUseSuccessiveSeeds) {
  TestClient c(server_->port());
  std::string prompt;
  for (int i = 0; i < 40; ++i) prompt += "word" + std::to_string(i) + " ";
  auto body = [&](int n, int seed) {
    return json({{"model", "tiny"}, {"prompt", prompt}, {"max_tokens", 6}, {"temperature", 1.0},
                 {"ignore_eos", true}, {"n", n}, {"seed", seed}, {"speculative", false}})
        .dump();
  };
  const engine::EngineStats before = engine_->stats();
  auto r = c.request("POST", "/v1/completions", body(3, 7));
  ASSERT_EQ(r.status, 200) << r.body;
  const engine::EngineStats after = engine_->stats();
  const json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 3u);
  const int prompt_tokens = j["usage"]["prompt_tokens"];
  const int64_t block = engine_->options().block_size;
  ASSERT_GE(prompt_tokens, 2 * block) << "the prompt should fill whole KV blocks";
  // Choices 1 and 2 each find the prompt's full blocks that choice 0 published.
  EXPECT_GE(after.prefix_hits - before.prefix_hits, 2 * ((prompt_tokens - 1) / block));
  for (int i = 0; i < 3; ++i) {
    auto single = c.request("POST", "/v1/completions", body(1, 7 + i));
    ASSERT_EQ(single.status, 200) << single.body;
    EXPECT_EQ(j["choices"][i]["text"], json::parse(single.body)["choices"][0]["text"]) << "choice " << i;
  }
}

// logit_bias goes through the engine's sampler: -100 on the greedy token changes it, +100 forces
// a token, and ids outside the vocabulary are refused.
TEST_F(ServerEngineTest, LogitBiasBansAndForcesTokens) {
  TestClient c(server_->port());
  auto first_pieces = [&](const json& bias) {
    json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 3},
                 {"temperature", 0}, {"ignore_eos", true}, {"logprobs", 0}};
    if (!bias.is_null()) body["logit_bias"] = bias;
    auto r = c.request("POST", "/v1/completions", body.dump());
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::string> out;
    if (r.status != 200) return out;
    const json j = json::parse(r.body);
    for (const auto& t : j["choices"][0]["logprobs"]["tokens"]) out.push_back(t);
    return out;
  };
  const auto greedy = first_pieces(nullptr);
  ASSERT_EQ(greedy.size(), 3u);
  // Ban every id whose piece is the greedy first token's (a vocabulary may repeat pieces).
  const auto& tok = engine_->tokenizer();
  json ban = json::object();
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.token_to_piece(id) == greedy[0]) ban[std::to_string(id)] = -100;
  }
  ASSERT_FALSE(ban.empty());
  const auto banned = first_pieces(ban);
  ASSERT_EQ(banned.size(), 3u);
  EXPECT_NE(banned[0], greedy[0]);
  // +100 forces a token the model would not pick: every step generates it.
  int32_t forced = -1;
  for (int32_t id = tok.n_vocab() - 1; id > 0 && forced < 0; --id) {
    const std::string piece = tok.token_to_piece(id);
    if (!piece.empty() && piece != greedy[0] && piece != greedy[1] && piece != greedy[2] &&
        !tok.is_end_of_generation(id)) {
      forced = id;
    }
  }
  ASSERT_GE(forced, 0);
  const auto forced_pieces = first_pieces(json{{std::to_string(forced), 100}});
  EXPECT_EQ(forced_pieces, std::vector<std::string>(3, tok.token_to_piece(forced)));
  // Unknown ids, bad keys and out-of-range biases are 400s naming the field.
  for (const json& bad : {json{{std::to_string(tok.n_vocab()), 5}}, json{{"abc", 5}},
                          json{{"3", 101}}, json{{"3", "x"}}, json(5)}) {
    auto r = c.request("POST", "/v1/chat/completions",
                       json({{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                             {"logit_bias", bad}})
                           .dump());
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
    if (r.status == 400) {
      EXPECT_EQ(json::parse(r.body)["error"]["param"], "logit_bias") << r.body;
    }
    r = c.request("POST", "/v1/completions",
                  json({{"prompt", "hi"}, {"logit_bias", bad}}).dump());
    EXPECT_EQ(r.status, 400) << bad.dump() << " " << r.body;
  }
}

// response_format through the whole server: on random weights (which prefer anything but JSON),
// every choice of a json_schema completion parses and satisfies the schema (no free-text field,
// so the value closes within the limit) and finishes "stop"; json_object gives an object; a
// schema keyword that is not enforced is a 400 naming it.
TEST_F(ServerEngineTest, ResponseFormatGivesJsonThatValidates) {
  TestClient c(server_->port());
  const json schema = json::parse(R"({"type": "object", "properties": {
      "ok": {"type": "boolean"}, "size": {"enum": ["S", "M", "L"]},
      "n": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}},
      "required": ["ok", "size"], "additionalProperties": false})");
  json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 1500},
               {"temperature", 0.9}, {"seed", 3}, {"n", 2},
               {"response_format", {{"type", "json_schema"},
                                    {"json_schema", {{"name", "item"}, {"schema", schema}}}}}};
  auto r = c.request("POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 2u);
  for (const auto& choice : j["choices"]) {
    EXPECT_EQ(choice["finish_reason"], "stop") << choice.dump();
    json v;
    ASSERT_NO_THROW(v = json::parse(choice["text"].get<std::string>())) << choice.dump();
    ASSERT_TRUE(v.is_object()) << v.dump();
    EXPECT_TRUE(v["ok"].is_boolean()) << v.dump();
    EXPECT_TRUE(v["size"] == "S" || v["size"] == "M" || v["size"] == "L") << v.dump();
    for (const auto& [k, x] : v.items()) {
      EXPECT_TRUE(k == "ok" || k == "size" || k == "n") << v.dump();
      if (k == "n") {
        ASSERT_TRUE(x.is_array());
        EXPECT_LE(x.size(), 3u);
        for (const auto& e : x) EXPECT_TRUE(e.is_number_integer()) << v.dump();
      }
    }
  }
  // json_object: some JSON object (the text may end at the limit inside a string: then it is
  // "length", and a prefix of one).
  body.erase("n");
  body["max_tokens"] = 64;
  body["response_format"] = {{"type", "json_object"}};
  r = c.request("POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json o = json::parse(r.body)["choices"][0];
  const std::string text = o["text"];
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find_first_not_of(" \n\r\t"), text.find('{')) << text;
  if (o["finish_reason"] == "stop") {
    EXPECT_TRUE(json::parse(text).is_object()) << text;
  }
  // Keywords that are not enforced are refused by name.
  body["response_format"] = {{"type", "json_schema"},
                             {"json_schema", {{"name", "x"}, {"schema", {{"type", "string"},
                                                                        {"propertyNames", {{"maxLength", 3}}}}}}}};
  r = c.request("POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "response_format");
  EXPECT_NE(r.body.find("propertyNames"), std::string::npos) << r.body;
}

// llama-server's `grammar` through the whole server (the chat route parses it the same way:
// openai_request_test; this model has no chat template): on random weights every
// choice is a complete text of the grammar (checked with std::regex: the grammar is regular) and
// finishes "stop" (nothing may follow its end); a grammar the parser refuses is a 400 naming the
// field with the parser's message.
TEST_F(ServerEngineTest, GrammarFieldConstrainsTheText) {
  TestClient c(server_->port());
  const std::string grammar = "root ::= (\"yes\" | \"no\") \", \" word (\" \" word){0,2} \".\"\n"
                              "word ::= [a-z]{1,6}\n";
  const std::regex re("(yes|no), [a-z]{1,6}( [a-z]{1,6}){0,2}\\.");
  json body = {{"model", "tiny"}, {"prompt", "Once upon a time"}, {"max_tokens", 40},
               {"temperature", 0.9}, {"seed", 5}, {"n", 2}, {"grammar", grammar}};
  auto r = c.request("POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json answer = json::parse(r.body);  // (ranging over a temporary's member would dangle)
  for (const auto& choice : answer["choices"]) {
    EXPECT_EQ(choice["finish_reason"], "stop") << choice.dump();
    EXPECT_TRUE(std::regex_match(choice["text"].get<std::string>(), re)) << choice.dump();
  }
  body["grammar"] = "root ::= item+";
  r = c.request("POST", "/v1/completions", body.dump());
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(json::parse(r.body)["error"]["param"], "grammar");
  EXPECT_NE(r.body.find("rule 'item' is used but never defined"), std::string::npos) << r.body;
}

TEST_F(ServerEngineTest, EmbeddingsHaveOpenAIShapeAndAreConsistent) {
  TestClient c(server_->port());
  auto r = c.request("POST", "/v1/embeddings",
                     json({{"model", "tiny"}, {"input", {"the cat sat", "a dog ran", "the cat sat"}}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "tiny");
  ASSERT_EQ(j["data"].size(), 3u);
  std::vector<std::vector<float>> v;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(j["data"][i]["object"], "embedding");
    EXPECT_EQ(j["data"][i]["index"], i);
    v.push_back(j["data"][i]["embedding"].get<std::vector<float>>());
    ASSERT_EQ(static_cast<int64_t>(v.back().size()), engine_->config().dim);
    double n2 = 0;
    for (float x : v.back()) n2 += double{x} * x;
    EXPECT_NEAR(n2, 1.0, 1e-4);
  }
  EXPECT_EQ(v[0], v[2]);  // same text, same vector
  EXPECT_NE(v[0], v[1]);
  const auto& tok = engine_->tokenizer();
  const auto ids = tok.encode("the cat sat", true, true);
  const auto ids2 = tok.encode("a dog ran", true, true);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2 * ids.size() + ids2.size());
  EXPECT_EQ(j["usage"]["total_tokens"], j["usage"]["prompt_tokens"]);
  // Token ids give the same vector as the text they encode; base64 carries the same floats.
  r = c.request("POST", "/v1/embeddings", json({{"input", ids}, {"encoding_format", "base64"}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string b64 = json::parse(r.body)["data"][0]["embedding"];
  std::string bytes;
  auto val = [](char ch) -> uint32_t {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    return ch == '+' ? 62 : 63;
  };
  for (size_t i = 0; i + 3 < b64.size(); i += 4) {
    const uint32_t n = val(b64[i]) << 18 | val(b64[i + 1]) << 12 |
                       (b64[i + 2] == '=' ? 0 : val(b64[i + 2]) << 6) | (b64[i + 3] == '=' ? 0 : val(b64[i + 3]));
    bytes += static_cast<char>(n >> 16);
    if (b64[i + 2] != '=') bytes += static_cast<char>(n >> 8 & 0xff);
    if (b64[i + 3] != '=') bytes += static_cast<char>(n & 0xff);
  }
  ASSERT_EQ(bytes.size(), v[0].size() * sizeof(float));
  std::vector<float> decoded(v[0].size());
  std::memcpy(decoded.data(), bytes.data(), bytes.size());
  EXPECT_EQ(decoded, v[0]);
  // Errors name the field.
  for (const auto& [body, param] : std::vector<std::pair<json, std::string>>{
           {json{{"model", "tiny"}}, "input"},
           {json{{"input", json::array()}}, "input"},
           {json{{"input", {1, "x"}}}, "input"},
           {json{{"input", 5}}, "input"},
           {json{{"input", {tok.n_vocab()}}}, "input"},
           {json{{"input", "x"}, {"encoding_format", "int8"}}, "encoding_format"},
           {json{{"input", "x"}, {"dimensions", 3}}, "dimensions"},
           {json{{"input", "x"}, {"truncate", true}}, "truncate"}}) {
    auto e = c.request("POST", "/v1/embeddings", body.dump());
    EXPECT_EQ(e.status, 400) << body.dump() << " " << e.body;
    if (e.status == 400) {
      EXPECT_EQ(json::parse(e.body)["error"]["param"], param) << e.body;
    }
  }
  auto e = c.request("POST", "/v1/embeddings", json({{"input", std::vector<int>(2049, 5)}}).dump());
  EXPECT_EQ(e.status, 400) << e.body;
  e = c.request("POST", "/v1/embeddings", json({{"input", "x"}, {"model", "nope"}}).dump());
  EXPECT_EQ(e.status, 404) << e.body;
}

TEST_F(ServerEngineTest, PromptTooLongIs400AndChatWithoutTemplateIs400) {
  TestClient c(server_->port());
  std::vector<int> prompt(2100, 5);
  auto r = c.request("POST", "/v1/completions", json({{"prompt", prompt}, {"max_tokens", 4}}).dump());
  EXPECT_EQ(r.status, 400) << r.body;
  auto chat = c.request("POST", "/v1/chat/completions",
                        json({{"messages", {{{"role", "user"}, {"content", "hi"}}}}}).dump());
  EXPECT_EQ(chat.status, 400) << chat.body;
}

TEST_F(ServerEngineTest, DisconnectMidStreamFreesKvBlocks) {
  {
    TestClient c(server_->port());
    c.send("POST", "/v1/completions",
           json({{"prompt", "Once upon a time"}, {"max_tokens", 2000}, {"ignore_eos", true},
                 {"stream", true}})
               .dump());
    http::response_parser<http::string_body> p;
    http::read_header(c.socket(), c.buffer(), p);
    ASSERT_EQ(p.get().result_int(), 200u);
    // Wait until it is generating and holds blocks.
    for (int i = 0; i < 200 && engine_->stats().kv_blocks_used == 0; ++i) std::this_thread::sleep_for(5ms);
    EXPECT_GT(engine_->stats().kv_blocks_used, 0);
  }  // abrupt close
  engine::EngineStats s;
  for (int i = 0; i < 300; ++i) {
    s = engine_->stats();
    if (s.kv_blocks_used == 0 && s.running == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(s.running, 0);
  EXPECT_EQ(s.kv_blocks_used, 0);
}

// 500 clients at once, each with a generation request, over one client thread: every one gets an
// answer (200, or 429 with Retry-After once the waiting queue is full), nothing hangs, and the
// server serves normally afterwards with every KV block back in the pool.
TEST_F(ServerEngineTest, FiveHundredConcurrentRequestsAreAnsweredAndServingContinues) {
  constexpr int kClients = 500;
  net::io_context ioc;
  struct Conn {
    explicit Conn(net::io_context& io) : socket(io) {}
    tcp::socket socket;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    http::response<http::string_body> res;
    boost::system::error_code ec;
    bool done = false;
  };
  const tcp::endpoint ep(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(server_->port()));
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < kClients; ++i) {
    auto c = std::make_unique<Conn>(ioc);
    c->socket.connect(ep);
    c->req = {http::verb::post, "/v1/completions", 11};
    c->req.set(http::field::host, "127.0.0.1");
    c->req.set(http::field::content_type, "application/json");
    c->req.body() = json({{"prompt", "request " + std::to_string(i)}, {"max_tokens", 2},
                          {"ignore_eos", true}, {"temperature", 0}})
                        .dump();
    c->req.prepare_payload();
    conns.push_back(std::move(c));
  }
  for (auto& up : conns) {
    Conn* c = up.get();
    http::async_write(c->socket, c->req, [c](boost::system::error_code ec, size_t) {
      if (ec) {
        c->ec = ec;
        c->done = true;
        return;
      }
      http::async_read(c->socket, c->buffer, c->res, [c](boost::system::error_code ec2, size_t) {
        c->ec = ec2;
        c->done = true;
      });
    });
  }
  ioc.run_for(120s);
  int ok = 0, busy = 0;
  for (const auto& c : conns) {
    ASSERT_TRUE(c->done) << "a client got no answer";
    ASSERT_FALSE(c->ec) << c->ec.message();
    const int status = c->res.result_int();
    if (status == 200) {
      ++ok;
    } else {
      ASSERT_EQ(status, 429) << c->res.body();
      EXPECT_NE(c->res.find(http::field::retry_after), c->res.end());
      ++busy;
    }
  }
  EXPECT_EQ(ok + busy, kClients);
  std::printf("%d answered 200, %d answered 429\n", ok, busy);
  EXPECT_GT(ok, 0);
  TestClient after(server_->port());
  auto r = after.request("POST", "/v1/completions",
                         json({{"prompt", "still serving"}, {"max_tokens", 3}}).dump());
  EXPECT_EQ(r.status, 200) << r.body;
  engine::EngineStats s;
  for (int i = 0; i < 300; ++i) {
    s = engine_->stats();
    if (s.kv_blocks_used == 0 && s.running == 0) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(s.kv_blocks_used, 0);
  EXPECT_EQ(s.running, 0);
}

}  // namespace server_engine_test
}  // namespace tessera::serve
