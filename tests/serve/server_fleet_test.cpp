// The Server over a FleetManager of two tiny random-weight models: /v1/models reports each
// model's state, a completion for a suspended model resumes it and answers 200 with the same
// greedy text, the admin API suspends and resumes, a model that cannot come up answers 503 +
// Retry-After, and the lifecycle metrics are exported.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "http_test_client.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/model/synth.h"
#include "tessera/serve/fleet_backend.h"
#include "tessera/serve/server.h"
#include "test_util.h"

namespace tessera::serve {
namespace server_fleet_test {

using json = nlohmann::json;
using testing::TestClient;
using namespace std::chrono_literals;

class ServerFleetTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new tessera::testing::TempDir();
    for (const char* name : {"alpha", "beta"}) {
      model::SynthOptions o;
      o.shape = *model::find_synth_shape("tiny");
      o.dtype = kernels::DType::kQ8_0;
      o.seed = name[0];
      ASSERT_TRUE(model::write_synthetic_model(o, dir_->file(std::string(name) + ".gguf")).is_ok());
    }
  }
  static void TearDownTestSuite() { delete dir_; }

  void start(fleet::FleetOptions fo = {}, const std::string& beta_path = "") {
    std::vector<fleet::FleetModelSpec> specs;
    for (const char* name : {"alpha", "beta"}) {
      fleet::FleetModelSpec s;
      s.name = name;
      s.path = dir_->file(std::string(name) + ".gguf");
      if (s.name == "beta" && !beta_path.empty()) s.path = beta_path;
      s.engine.n_threads = 1;
      s.engine.ctx_size = 256;
      s.engine.max_running = 2;
      specs.push_back(std::move(s));
    }
    auto f = fleet::FleetManager::create(std::move(specs), fo);
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    fleet_ = std::move(f).value();
    auto models = std::make_shared<ModelRouter>();
    server_ = std::make_unique<Server>(ServerOptions{}, models);
    attach_fleet_metrics(fleet_, server_->metrics());
    for (const auto& name : fleet_->names()) ASSERT_TRUE(models->add(fleet_entry(fleet_, name)).is_ok());
    ASSERT_TRUE(server_->start().is_ok());
    (void)fleet_->start();
    server_->set_serving();
  }
  void TearDown() override {
    if (server_) server_->shutdown(1s);
    if (fleet_) fleet_->stop();
  }

  static std::string completion(const std::string& model) {
    return json({{"model", model}, {"prompt", "Once upon a time"}, {"max_tokens", 6},
                 {"temperature", 0}, {"ignore_eos", true}})
        .dump();
  }
  std::string state_of(TestClient& c, const std::string& model) {
    auto r = c.request("GET", "/v1/models");
    EXPECT_EQ(r.status, 200);
    const json list = json::parse(r.body);
    for (const auto& m : list["data"]) {
      if (m["id"] == model) return m["state"];
    }
    ADD_FAILURE() << r.body;
    return "missing";
  }

  static inline tessera::testing::TempDir* dir_ = nullptr;
  std::shared_ptr<fleet::FleetManager> fleet_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServerFleetTest, SuspendedModelResumesOnRequestWithIdenticalOutput) {
  start();
  TestClient c(server_->port());
  EXPECT_EQ(state_of(c, "alpha"), "active");
  auto first = c.request("POST", "/v1/completions", completion("alpha"));
  ASSERT_EQ(first.status, 200) << first.body;

  auto s = c.request("POST", "/admin/models/alpha/suspend");
  ASSERT_EQ(s.status, 200) << s.body;
  EXPECT_EQ(json::parse(s.body)["state"], "suspended");
  EXPECT_EQ(state_of(c, "alpha"), "suspended");
  EXPECT_EQ(state_of(c, "beta"), "active");

  auto again = c.request("POST", "/v1/completions", completion("alpha"));
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(json::parse(again.body)["choices"][0]["text"],
            json::parse(first.body)["choices"][0]["text"]);
  EXPECT_EQ(state_of(c, "alpha"), "active");

  auto admin = c.request("GET", "/admin/models");
  ASSERT_EQ(admin.status, 200);
  EXPECT_EQ(json::parse(admin.body)["data"].size(), 2u);
  auto bad = c.request("POST", "/admin/models/alpha/resume");  // already active: nothing to do
  EXPECT_EQ(bad.status, 200) << bad.body;
  auto wrong = c.request("POST", "/admin/models/alpha/explode");
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  auto unknown = c.request("POST", "/admin/models/gamma/suspend");
  EXPECT_EQ(unknown.status, 404) << unknown.body;

  auto metrics = c.request("GET", "/metrics");
  EXPECT_NE(metrics.body.find(R"(tessera_model_state{model="alpha",state="active"} 1)"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(R"(tessera_model_resumes_total{model="alpha"} 1)"), std::string::npos);
  EXPECT_NE(metrics.body.find("tessera_model_resume_seconds_count"), std::string::npos);
  EXPECT_NE(metrics.body.find(R"(tessera_model_cold_starts_total{model="alpha"} 1)"), std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find(R"(tessera_model_idle_memory_byte_seconds_total{model="alpha"})"),
            std::string::npos);
  EXPECT_NE(metrics.body.find(R"(tessera_model_ttft_slo_met_total{model="alpha"})"), std::string::npos);
  EXPECT_NE(metrics.body.find("# TYPE tessera_model_cold_starts_total counter"), std::string::npos);
}

// /v1/embeddings for fleet models: admitted like a completion, so a suspended model is brought up
// for it (a cold start) and answers the same vector it gave while active; a model that cannot
// come up answers 503.
TEST_F(ServerFleetTest, EmbeddingsResumeASuspendedModelAndGiveTheSameVector) {
  start();
  TestClient c(server_->port());
  auto embed = [&](const std::string& model) {
    auto r = c.request("POST", "/v1/embeddings",
                       json({{"model", model}, {"input", {"the cat sat", "a dog ran"}}}).dump());
    EXPECT_EQ(r.status, 200) << r.body;
    std::vector<std::vector<float>> v;
    if (r.status != 200) return v;
    const json j = json::parse(r.body);
    EXPECT_EQ(j["model"], model);
    for (const auto& d : j["data"]) v.push_back(d["embedding"].get<std::vector<float>>());
    return v;
  };
  const auto before = embed("alpha");
  ASSERT_EQ(before.size(), 2u);
  EXPECT_EQ(static_cast<int64_t>(before[0].size()), model::find_synth_shape("tiny")->dim);
  double n2 = 0;
  for (float x : before[0]) n2 += double{x} * x;
  EXPECT_NEAR(n2, 1.0, 1e-4);
  EXPECT_NE(before[0], before[1]);
  EXPECT_NE(embed("beta")[0], before[0]);  // another model, another vector

  ASSERT_EQ(c.request("POST", "/admin/models/alpha/suspend").status, 200);
  EXPECT_EQ(state_of(c, "alpha"), "suspended");
  EXPECT_EQ(embed("alpha"), before);
  EXPECT_EQ(state_of(c, "alpha"), "active");
  auto st = fleet_->status("alpha");
  ASSERT_TRUE(st.is_ok());
  // Each input is one embedding of the model, submitted one after the other: the first found it
  // suspended; the second did too unless the resume finished in between (a loaded machine can
  // stall the handler that long), so 1 or 2 - never 0, never more.
  EXPECT_GE(st->cold_starts, 1);
  EXPECT_LE(st->cold_starts, 2);
  EXPECT_EQ(st->in_flight, 0);

  // Bad input is refused before a cold start is spent on it.
  ASSERT_EQ(c.request("POST", "/admin/models/alpha/suspend").status, 200);
  auto bad = c.request("POST", "/v1/embeddings",
                       json({{"model", "alpha"}, {"input", std::vector<int>(300, 5)}}).dump());
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(state_of(c, "alpha"), "suspended");
}

TEST_F(ServerFleetTest, ModelThatCannotComeUpAnswers503WithRetryAfter) {
  fleet::FleetOptions fo;
  fo.active_budget_bytes = 4096;  // neither model fits
  start(fo);
  TestClient c(server_->port());
  EXPECT_EQ(state_of(c, "beta"), "unloaded");
  auto r = c.request("POST", "/v1/completions", completion("beta"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.headers.find("Retry-After"), r.headers.end());
  auto emb = c.request("POST", "/v1/embeddings", json({{"model", "beta"}, {"input", "hi"}}).dump());
  EXPECT_EQ(emb.status, 503) << emb.body;
}

// A model whose file is truncated does not stop the fleet: it is listed as failed with its error,
// its requests answer 503 naming the cause, and the other model serves.
TEST_F(ServerFleetTest, ATruncatedModelIsListedFailedAndTheOtherServes) {
  const std::string bad = dir_->file("truncated.gguf");
  {
    std::ifstream in(dir_->file("beta.gguf"), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 3));
  }
  start({}, bad);
  TestClient c(server_->port());
  EXPECT_EQ(state_of(c, "alpha"), "active");
  EXPECT_EQ(state_of(c, "beta"), "failed");
  const json list = json::parse(c.request("GET", "/v1/models").body);
  for (const auto& m : list["data"]) {
    if (m["id"] == "beta") {
      EXPECT_NE(m.value("error", "").find("truncated.gguf"), std::string::npos) << m.dump();
    } else {
      EXPECT_FALSE(m.contains("error")) << m.dump();
    }
  }
  auto r = c.request("POST", "/v1/completions", completion("beta"));
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("truncated.gguf"), std::string::npos) << r.body;
  EXPECT_NE(r.headers.find("Retry-After"), r.headers.end());
  auto chat = c.request("POST", "/v1/chat/completions",
                        json({{"model", "beta"},
                              {"messages", {{{"role", "user"}, {"content", "hi"}}}}})
                            .dump());
  EXPECT_EQ(chat.status, 503) << chat.body;
  auto emb = c.request("POST", "/v1/embeddings", json({{"model", "beta"}, {"input", "hi"}}).dump());
  EXPECT_EQ(emb.status, 503) << emb.body;
  auto ok = c.request("POST", "/v1/completions", completion("alpha"));
  EXPECT_EQ(ok.status, 200) << ok.body;
  auto admin = json::parse(c.request("GET", "/admin/models").body);
  bool seen = false;
  for (const auto& m : admin["data"]) {
    if (m["id"] == "beta") seen = m.value("error", "").find("truncated.gguf") != std::string::npos;
  }
  EXPECT_TRUE(seen) << admin.dump();
}

}  // namespace server_fleet_test
}  // namespace tessera::serve
