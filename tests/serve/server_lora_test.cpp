// LoRA adapters over HTTP with a real engine: an adapter loaded at runtime (POST /v1/adapters) is
// listed in /v1/models as "base:name", a request naming it generates what the merged model
// generates (greedy), the base keeps its own output, DELETE takes it away (404 after), and the
// routes refuse what they must (runtime loading off, bad bodies, unknown names); the adapter's
// requests are in its own metrics series and the base's, with no engine gauges under its name.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <random>

#include "http_test_client.h"
#include "tessera/model/architecture.h"
#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/lora_adapter.h"
#include "tessera/model/synth.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/serve/adapter_registry.h"
#include "tessera/serve/server.h"
#include "test_util.h"

namespace tessera::serve {
namespace server_lora_test {

using json = nlohmann::json;
using testing::TestClient;
using namespace std::chrono_literals;

class ServerLoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kF32;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
    // A GGUF LoRA on every q/v/down matrix, large enough to change greedy choices.
    model::GgufWriter w;
    w.metadata().set("general.architecture", model::GgufValue::string("llama"));
    w.metadata().set("general.type", model::GgufValue::string("adapter"));
    w.metadata().set("adapter.type", model::GgufValue::string("lora"));
    w.metadata().set("adapter.lora.alpha", model::GgufValue::f32(16.0f));
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.2f);
    const struct { const char* name; int64_t in, out; } kinds[] = {
        {"attn_q", 128, 128}, {"attn_v", 128, 64}, {"ffn_down", 384, 128}};
    for (int layer = 0; layer < 2; ++layer) {
      for (const auto& k : kinds) {
        std::vector<float> a(8 * k.in), b(k.out * 8);
        for (float& v : a) v = nd(rng);
        for (float& v : b) v = nd(rng);
        const std::string stem = fmt::format("blk.{}.{}.weight", layer, k.name);
        ASSERT_TRUE(w.add_tensor(stem + ".lora_a", kernels::DType::kF32, {k.in, 8}, std::as_bytes(std::span(a))).is_ok());
        ASSERT_TRUE(w.add_tensor(stem + ".lora_b", kernels::DType::kF32, {8, k.out}, std::as_bytes(std::span(b))).is_ok());
      }
    }
    ASSERT_TRUE(w.write(dir_->file("style.gguf")).is_ok());
    auto base = model::open_model_file(dir_->file("tiny.gguf"));
    ASSERT_TRUE(base.is_ok());
    auto lora = model::load_lora_adapter(dir_->file("style.gguf"), *base);
    ASSERT_TRUE(lora.is_ok()) << lora.status().to_string();
    ASSERT_TRUE(model::merge_lora(*base, *lora, dir_->file("merged.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }

  std::shared_ptr<engine::Engine> make_engine(const std::string& path) {
    auto m = model::load_model(path);
    EXPECT_TRUE(m.is_ok()) << m.status().to_string();
    std::shared_ptr<model::Model> model(std::move(m).value());
    auto t = model::make_tokenizer(model->file().metadata);
    EXPECT_TRUE(t.is_ok());
    std::shared_ptr<const model::Tokenizer> tok(std::move(t).value());
    engine::EngineOptions eo;
    eo.n_threads = 1;
    eo.ctx_size = 256;
    eo.max_running = 4;
    auto e = engine::Engine::create(model, tok, eo);
    EXPECT_TRUE(e.is_ok()) << e.status().to_string();
    std::shared_ptr<engine::Engine> engine(std::move(e).value());
    models_.push_back(model);
    engine->start();
    return engine;
  }

  void start(bool runtime) {
    engine_ = make_engine(dir_->file("tiny.gguf"));
    auto router = std::make_shared<ModelRouter>();
    ModelEntry base{"tiny", engine_backend(engine_), {}, 0, "tessera", {}, {}, {}, {}, {}};
    ASSERT_TRUE(router->add(base).is_ok());
    server_ = std::make_unique<Server>(ServerOptions{}, router);
    ASSERT_TRUE(server_->start().is_ok());
    auto file = std::shared_ptr<const model::ModelFile>(models_.back(), &models_.back()->file());
    registry_ = std::make_shared<AdapterRegistry>(router, base, engine_, file, runtime,
                                                  runtime ? dir_->path().string() : "");
    server_->set_adapters(registry_);
    server_->set_serving();
  }

  void TearDown() override {
    if (server_) server_->shutdown(1s);
    if (engine_) engine_->stop();
  }

  static std::string complete(TestClient& c, const std::string& model, int* status = nullptr) {
    auto r = c.request("POST", "/v1/completions",
                       json({{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 12},
                             {"temperature", 0}, {"ignore_eos", true}})
                           .dump());
    if (status != nullptr) *status = r.status;
    if (r.status != 200) return r.body;
    return json::parse(r.body)["choices"][0]["text"].get<std::string>();
  }

  static inline tessera::testing::TempDir* dir_ = nullptr;
  std::vector<std::shared_ptr<model::Model>> models_;
  std::shared_ptr<engine::Engine> engine_;
  std::shared_ptr<AdapterRegistry> registry_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerLoraTest, RuntimeLoadServeUnload) {
  start(true);
  TestClient c(server_->port());
  // The reference: the merged model served on its own.
  std::string want;
  {
    auto merged = make_engine(dir_->file("merged.gguf"));
    auto router = std::make_shared<ModelRouter>();
    ASSERT_TRUE(router->add({"merged", engine_backend(merged), {}, 0, "tessera", {}, {}, {}, {}, {}}).is_ok());
    Server s(ServerOptions{}, router);
    ASSERT_TRUE(s.start().is_ok());
    s.set_serving();
    TestClient mc(s.port());
    want = complete(mc, "merged");
    s.shutdown(1s);
    merged->stop();
  }
  const std::string base_text = complete(c, "tiny");
  ASSERT_NE(want, base_text) << "the adapter should change the greedy text";

  auto r = c.request("POST", "/v1/adapters", json({{"name", "style"}, {"path", dir_->file("style.gguf")}}).dump());
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "tiny:style");
  r = c.request("GET", "/v1/models", "");
  ASSERT_EQ(r.status, 200);
  bool listed = false;
  const json models = json::parse(r.body);
  for (const auto& m : models["data"]) {
    if (m["id"] != "tiny:style") continue;
    listed = true;
    EXPECT_EQ(m["root"], "tiny") << r.body;  // the base model, as vLLM reports it
    EXPECT_GT(m["max_model_len"].get<int64_t>(), 0) << r.body;
  }
  EXPECT_TRUE(listed) << r.body;
  r = c.request("GET", "/v1/adapters", "");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["data"][0]["rank"], 8);

  EXPECT_EQ(complete(c, "tiny:style"), want);
  EXPECT_EQ(complete(c, "tiny"), base_text);
  // The adapter's request counts for the base (its engine ran it) and in the adapter's own
  // series; the base engine's gauges are not copied under the adapter's name.
  const std::string metrics = c.request("GET", "/metrics").body;
  EXPECT_NE(metrics.find(R"(tessera_adapter_requests_finished_total{adapter="style",model="tiny",reason="length"} 1)"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(tessera_adapter_generation_tokens_total{adapter="style",model="tiny"} 12)"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(tessera_requests_finished_total{model="tiny",reason="length"} 3)"),
            std::string::npos) << metrics;
  EXPECT_NE(metrics.find(R"(tessera_kv_blocks_total{model="tiny"})"), std::string::npos) << metrics;
  EXPECT_EQ(metrics.find(R"(model="tiny:style")"), std::string::npos) << metrics;

  // Same name twice; a file that is not an adapter.
  r = c.request("POST", "/v1/adapters", json({{"name", "style"}, {"path", dir_->file("style.gguf")}}).dump());
  EXPECT_EQ(r.status, 400) << r.body;
  r = c.request("POST", "/v1/adapters", json({{"name", "x"}, {"path", dir_->file("tiny.gguf")}}).dump());
  EXPECT_EQ(r.status, 400) << r.body;
  r = c.request("POST", "/v1/adapters", "{\"name\": 3}");
  EXPECT_EQ(r.status, 400) << r.body;

  r = c.request("DELETE", "/v1/adapters/style", "");
  EXPECT_EQ(r.status, 200) << r.body;
  int status = 0;
  complete(c, "tiny:style", &status);
  EXPECT_EQ(status, 404);
  r = c.request("DELETE", "/v1/adapters/style", "");
  EXPECT_EQ(r.status, 404) << r.body;
}

// Issue 42: a client names adapter files only inside the operator's --lora-dir; what is outside
// (existing or not) answers as a missing name, and a FIFO or an oversized config fails at once
// instead of blocking a thread.
TEST_F(ServerLoraTest, ClientPathsStayInTheAdapterDirectoryAndNeverBlock) {
  start(true);
  TestClient c(server_->port());
  auto load = [&](const std::string& path) {
    return c.request("POST", "/v1/adapters", json({{"name", "n"}, {"path", path}}).dump());
  };
  auto message = [](const testing::ClientResponse& r) {
    return json::parse(r.body)["error"]["message"].get<std::string>();
  };
  EXPECT_EQ(load("../tiny.gguf").status, 400);
  EXPECT_EQ(load(dir_->file("sub/../style.gguf")).status, 400);
  // Outside: an existing file, a missing one, and a symlink out all answer alike, 404.
  std::filesystem::create_symlink("/etc/passwd", dir_->file("link-out.gguf"));
  const auto exists = load("/etc/passwd");
  const auto missing = load("/etc/no-such-file-here");
  const auto link = load("link-out.gguf");
  const auto absent = load("absent.gguf");
  for (const auto* r : {&exists, &missing, &link, &absent}) {
    EXPECT_EQ(r->status, 404) << r->body;
    EXPECT_EQ(json::parse(r->body)["error"]["code"], "adapter_not_found") << r->body;
  }
  EXPECT_EQ(message(exists), "no adapter '/etc/passwd' in the server's adapter directory");
  EXPECT_EQ(message(missing), "no adapter '/etc/no-such-file-here' in the server's adapter directory");
  EXPECT_EQ(message(link), "no adapter 'link-out.gguf' in the server's adapter directory");
  // A FIFO as the adapter, and as a PEFT directory's config: refused at once (400), nothing
  // waits for a writer.
  ASSERT_EQ(::mkfifo(dir_->file("fifo.gguf").c_str(), 0600), 0);
  std::filesystem::create_directory(dir_->file("peft-fifo"));
  ASSERT_EQ(::mkfifo(dir_->file("peft-fifo/adapter_config.json").c_str(), 0600), 0);
  { std::ofstream(dir_->file("peft-fifo/adapter_model.safetensors")) << "x"; }
  std::filesystem::create_directory(dir_->file("peft-big"));
  { std::ofstream(dir_->file("peft-big/adapter_config.json")) << std::string(2 << 20, ' '); }
  { std::ofstream(dir_->file("peft-big/adapter_model.safetensors")) << "x"; }
  for (const char* p : {"fifo.gguf", "peft-fifo", "peft-big"}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = load(p);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << p;
    EXPECT_EQ(r.status, 400) << p << ": " << r.body;
  }
  EXPECT_EQ(c.request("GET", "/health").status, 200);
  // Inside, by a relative name, the adapter loads.
  EXPECT_EQ(load("style.gguf").status, 200);
}

TEST_F(ServerLoraTest, RuntimeChangesNeedTheFlag) {
  start(false);
  ASSERT_TRUE(registry_->load("style", dir_->file("style.gguf")).is_ok());  // as --lora does
  TestClient c(server_->port());
  auto r = c.request("POST", "/v1/adapters", json({{"name", "b"}, {"path", dir_->file("style.gguf")}}).dump());
  EXPECT_EQ(r.status, 403) << r.body;
  r = c.request("DELETE", "/v1/adapters/style", "");
  EXPECT_EQ(r.status, 403) << r.body;
  int status = 0;
  complete(c, "tiny:style", &status);
  EXPECT_EQ(status, 200);
}

}  // namespace server_lora_test
}  // namespace tessera::serve
