// LoRA adapters in a fleet over HTTP: a tiny f32 base with two PEFT adapters, each a fleet entry
// ("tiny:sql", "tiny:poem") listed in /v1/models with its state and parent. An idle policy on an
// injected clock suspends the adapters, then the base (adapters first); requests to "tiny:sql"
// afterwards bring the base and the adapter back and give the same greedy text as before (and
// the base its own). /metrics has per-adapter series (state, requests, tokens, bytes) and no
// copy of the base engine's gauges under the adapter's name. An adapter suspended while a
// request of it is in flight lets the request finish.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <random>

#include "http_test_client.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/fleet/keep_alive_policy.h"
#include "tessera/model/format/safetensors.h"
#include "tessera/model/synth.h"
#include "tessera/serve/fleet_backend.h"
#include "tessera/serve/server.h"
#include "test_util.h"

namespace tessera::serve {
namespace server_fleet_lora_test {

using json = nlohmann::json;
using testing::TestClient;
using namespace std::chrono_literals;

constexpr int64_t kSecond = 1'000'000'000;

// A fake clock the fleet's control thread may read while the test advances it.
class SharedFakeClock final : public Clock {
 public:
  int64_t now_ns() const override { return now_.load(); }
  void advance_ns(int64_t dt) { now_.fetch_add(dt); }

 private:
  std::atomic<int64_t> now_{1'000 * kSecond};
};

// A PEFT adapter directory (adapter_config.json + adapter_model.safetensors) on the q, v and down
// matrices of the tiny shape, large enough to change greedy choices.
void write_peft(const std::string& dir, uint32_t seed) {
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/adapter_config.json")
      << R"({"peft_type": "LORA", "r": 8, "lora_alpha": 16, "target_modules": ["q_proj", "v_proj",
         "down_proj"], "bias": "none", "fan_in_fan_out": false, "use_rslora": false,
         "use_dora": false})";
  model::SafetensorsWriter w;
  w.add_metadata("format", "pt");
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  const struct { const char* name; int64_t in, out; } kinds[] = {
      {"self_attn.q_proj", 128, 128}, {"self_attn.v_proj", 128, 64}, {"mlp.down_proj", 384, 128}};
  for (int layer = 0; layer < 2; ++layer) {
    for (const auto& k : kinds) {
      std::vector<float> a(8 * k.in), b(k.out * 8);
      for (float& v : a) v = nd(rng);
      for (float& v : b) v = nd(rng);
      const std::string stem = fmt::format("base_model.model.model.layers.{}.{}", layer, k.name);
      ASSERT_TRUE(w.add_tensor(stem + ".lora_A.weight", kernels::DType::kF32, {8, k.in},
                               std::as_bytes(std::span(a))).is_ok());
      ASSERT_TRUE(w.add_tensor(stem + ".lora_B.weight", kernels::DType::kF32, {k.out, 8},
                               std::as_bytes(std::span(b))).is_ok());
    }
  }
  ASSERT_TRUE(w.write(dir + "/adapter_model.safetensors").is_ok());
}

class ServerFleetLoraTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kF32;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("tiny.gguf")).is_ok());
    write_peft(dir_->file("sql"), 1);
    write_peft(dir_->file("poem"), 2);
  }
  static void TearDownTestSuite() { delete dir_; }

  void start() {
    std::vector<fleet::FleetModelSpec> specs;
    fleet::FleetModelSpec base;
    base.name = "tiny";
    base.path = dir_->file("tiny.gguf");
    base.engine.n_threads = 1;
    base.engine.ctx_size = 256;
    base.engine.max_running = 4;
    for (const char* a : {"sql", "poem"}) {
      fleet::FleetModelSpec s;
      s.name = std::string("tiny:") + a;
      s.parent = "tiny";
      s.path = dir_->file(a);
      specs.push_back(std::move(s));  // before the base: create() orders them
    }
    specs.push_back(base);
    fleet::FleetOptions fo;
    fo.clock = &clock_;
    fo.tick_ns = 5'000'000;
    fo.idle_policy = std::make_shared<fleet::FixedKeepAlivePolicy>(60 * kSecond);
    auto f = fleet::FleetManager::create(std::move(specs), fo);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    fleet_ = std::move(f).value();
    fleet_->add_listener([this](const fleet::TransitionEvent& ev) {
      std::lock_guard<std::mutex> lock(events_mu_);
      events_.push_back(fmt::format("{} {}", ev.model, fleet::model_state_name(ev.to)));
    });
    auto models = std::make_shared<ModelRouter>();
    server_ = std::make_unique<Server>(ServerOptions{}, models);
    attach_fleet_metrics(fleet_, server_->metrics());
    for (const auto& name : fleet_->names()) {
      ASSERT_TRUE(models->add(fleet_entry(fleet_, name)).is_ok());
    }
    ASSERT_TRUE(server_->start().is_ok());
    ASSERT_TRUE(fleet_->start().is_ok());
    server_->set_serving();
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
    if (fleet_) fleet_->stop();
  }

  static std::string completion(const std::string& model, int max_tokens = 8) {
    return json({{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", max_tokens},
                 {"temperature", 0}, {"ignore_eos", true}})
        .dump();
  }
  static std::string text_of(const testing::ClientResponse& r) {
    return json::parse(r.body)["choices"][0]["text"].get<std::string>();
  }
  json model_json(TestClient& c, const std::string& model) {
    auto r = c.request("GET", "/v1/models");
    EXPECT_EQ(r.status, 200);
    const json list = json::parse(r.body);
    for (const auto& m : list["data"]) {
      if (m["id"] == model) return m;
    }
    ADD_FAILURE() << model << " not in " << r.body;
    return json::object();
  }
  // Waits (bounded) until `model` is in `state`: the control thread carries moves out.
  bool wait_for_state(const std::string& model, fleet::ModelState state) {
    for (int i = 0; i < 1000; ++i) {
      if (fleet_->state(model) == state) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }
  size_t event_index(const std::string& e) {
    std::lock_guard<std::mutex> lock(events_mu_);
    return static_cast<size_t>(std::find(events_.begin(), events_.end(), e) - events_.begin());
  }

  static inline tessera::testing::TempDir* dir_ = nullptr;
  SharedFakeClock clock_;
  std::shared_ptr<fleet::FleetManager> fleet_;
  std::unique_ptr<Server> server_;
  std::mutex events_mu_;
  std::vector<std::string> events_;
};

TEST_F(ServerFleetLoraTest, AnAdapterSuspendedByTheIdlePolicyGivesTheSameTextAfterItsResume) {
  start();
  TestClient c(server_->port());
  EXPECT_EQ(model_json(c, "tiny:sql")["state"], "active");
  EXPECT_EQ(model_json(c, "tiny:sql")["parent"], "tiny");
  EXPECT_FALSE(model_json(c, "tiny").contains("parent"));
  {
    const json admin = json::parse(c.request("GET", "/admin/models").body);  // tessera fleet status
    bool listed = false;
    for (const auto& m : admin["data"]) {
      listed = listed || (m["id"] == "tiny:sql" && m.value("parent", "") == "tiny");
    }
    EXPECT_TRUE(listed) << admin.dump();
  }

  auto sql = c.request("POST", "/v1/completions", completion("tiny:sql"));
  auto poem = c.request("POST", "/v1/completions", completion("tiny:poem"));
  auto base = c.request("POST", "/v1/completions", completion("tiny"));
  ASSERT_EQ(sql.status, 200) << sql.body;
  ASSERT_EQ(poem.status, 200) << poem.body;
  ASSERT_EQ(base.status, 200) << base.body;
  ASSERT_NE(text_of(sql), text_of(base)) << "the adapter must change the greedy text";
  // Embeddings come from the base model; an adapter's are refused by name (not the base's).
  auto emb = c.request("POST", "/v1/embeddings",
                       nlohmann::json({{"model", "tiny:sql"}, {"input", "hi"}}).dump());
  EXPECT_EQ(emb.status, 400) << emb.body;
  EXPECT_NE(emb.body.find("adapter"), std::string::npos) << emb.body;
  EXPECT_EQ(c.request("POST", "/v1/embeddings",
                      nlohmann::json({{"model", "tiny"}, {"input", "hi"}}).dump())
                .status,
            200);
  ASSERT_NE(text_of(poem), text_of(sql));

  // Everything idle past the keep-alive: the adapters go first, then the base.
  clock_.advance_ns(61 * kSecond);
  fleet_->tick();
  ASSERT_TRUE(wait_for_state("tiny", fleet::ModelState::kSuspended)) << model_state_name(fleet_->state("tiny"));
  EXPECT_EQ(fleet_->state("tiny:sql"), fleet::ModelState::kSuspended);
  EXPECT_EQ(fleet_->state("tiny:poem"), fleet::ModelState::kSuspended);
  EXPECT_EQ(model_json(c, "tiny:sql")["state"], "suspended");
  EXPECT_LT(event_index("tiny:sql suspended"), event_index("tiny suspending"));
  EXPECT_LT(event_index("tiny:poem suspended"), event_index("tiny suspending"));

  // A request for the adapter brings the base, then the adapter back: same text.
  auto again = c.request("POST", "/v1/completions", completion("tiny:sql"));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(text_of(again), text_of(sql));
  EXPECT_EQ(fleet_->state("tiny:sql"), fleet::ModelState::kActive);
  EXPECT_EQ(fleet_->state("tiny"), fleet::ModelState::kActive);
  EXPECT_EQ(fleet_->state("tiny:poem"), fleet::ModelState::kSuspended);  // not asked for
  EXPECT_LT(event_index("tiny active"), event_index("tiny:sql resuming"));
  auto base_again = c.request("POST", "/v1/completions", completion("tiny"));
  ASSERT_EQ(base_again.status, 200) << base_again.body;
  EXPECT_EQ(text_of(base_again), text_of(base));
  auto poem_again = c.request("POST", "/v1/completions", completion("tiny:poem"));
  ASSERT_EQ(poem_again.status, 200) << poem_again.body;
  EXPECT_EQ(text_of(poem_again), text_of(poem));

  const std::string m = c.request("GET", "/metrics").body;
  EXPECT_NE(m.find(R"(tessera_adapter_state{adapter="sql",model="tiny",state="active"} 1)"),
            std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_adapter_requests_finished_total{adapter="sql",model="tiny",reason="length"} 2)"),
            std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_adapter_generation_tokens_total{adapter="sql",model="tiny"} 16)"),
            std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_adapter_time_to_first_token_seconds_count{adapter="poem",model="tiny"} 2)"),
            std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_adapter_resumes{adapter="sql",model="tiny"} 1)"), std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_adapter_active_bytes{adapter="sql",model="tiny"})"), std::string::npos);
  // The base counts every request its engine ran; the adapters have no engine gauges or
  // model-level series of their own.
  EXPECT_NE(m.find(R"(tessera_requests_finished_total{model="tiny",reason="length"} 6)"),
            std::string::npos) << m;
  EXPECT_NE(m.find(R"(tessera_queue_depth{model="tiny"})"), std::string::npos);
  EXPECT_EQ(m.find(R"(model="tiny:sql")"), std::string::npos) << m;
  EXPECT_EQ(m.find(R"(model="tiny:poem")"), std::string::npos) << m;
}

TEST_F(ServerFleetLoraTest, SuspendingAnAdapterLetsItsRequestInFlightFinish) {
  start();
  TestClient c(server_->port());
  auto running = std::async(std::launch::async, [this] {
    TestClient c2(server_->port());
    return c2.request("POST", "/v1/completions", completion("tiny:sql", 200));
  });
  // Suspend once the request is in flight (or, if it already finished, anyway).
  for (int i = 0; i < 400 && fleet_->status("tiny:sql")->in_flight == 0; ++i) {
    std::this_thread::sleep_for(1ms);
  }
  auto s = c.request("POST", "/admin/models/tiny:sql/suspend");
  EXPECT_EQ(s.status, 200) << s.body;
  const auto r = running.get();
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 200);
  EXPECT_EQ(fleet_->state("tiny:sql"), fleet::ModelState::kSuspended);
  EXPECT_EQ(fleet_->state("tiny"), fleet::ModelState::kActive);
  auto after = c.request("POST", "/v1/completions", completion("tiny:sql"));
  EXPECT_EQ(after.status, 200) << after.body;
}

}  // namespace server_fleet_lora_test
}  // namespace tessera::serve
