#include "tessera/serve/fleet_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tessera/fleet/hybrid_histogram_policy.h"
#include "tessera/fleet/keep_alive_policy.h"
#include "test_util.h"

namespace tessera::serve {
namespace fleet_config_test {

TEST(FleetConfigTest, ReadsPerModelSettingsOverTheDefaults) {
  engine::EngineOptions d;
  d.max_running = 4;
  d.ctx_size = 4096;
  auto r = parse_fleet_config(R"({"models": [
      {"path": "a/smol.gguf"},
      {"name": "big", "path": "/m/tiny.gguf", "ctx_size": 1024, "parallel": 2, "priority": 3,
       "ttft_slo_ms": 500, "tpot_slo_ms": 100, "kv_blocks": 64, "pinned": true}]})",
                              "/etc/fleet", d, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  const auto& a = (*r)[0];
  EXPECT_EQ(a.name, "smol");
  EXPECT_EQ(a.path, "/etc/fleet/a/smol.gguf");
  EXPECT_EQ(a.engine.max_running, 4);
  EXPECT_EQ(a.engine.ctx_size, 4096);
  EXPECT_FALSE(a.pinned);
  const auto& b = (*r)[1];
  EXPECT_EQ(b.name, "big");
  EXPECT_EQ(b.path, "/m/tiny.gguf");
  EXPECT_EQ(b.engine.ctx_size, 1024);
  EXPECT_EQ(b.engine.max_running, 2);
  EXPECT_EQ(b.engine.n_blocks, 64);
  EXPECT_DOUBLE_EQ(b.engine.device_weight, 3.0);
  EXPECT_EQ(b.engine.ttft_slo_ns, 500'000'000);
  EXPECT_EQ(b.engine.tpot_slo_ns, 100'000'000);
  EXPECT_TRUE(b.pinned);
}

// "device" puts one model on an OpenCL device; the others take the server's --device.
TEST(FleetConfigTest, ADeviceKeyOverridesTheServersDevice) {
  auto r = parse_fleet_config(R"({"models": [
      {"path": "a.gguf"}, {"path": "b.gguf", "device": "opencl:1"}, {"path": "c.gguf", "device": "cpu"}]})",
                              "", {}, {}, /*default_device=*/0);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].device, 0);
  EXPECT_EQ((*r)[1].device, 1);
  EXPECT_EQ((*r)[2].device, -1);
  auto bad = parse_fleet_config(R"({"models": [{"path": "a.gguf", "device": "gpu"}]})", "", {}, {});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("device"), std::string::npos) << bad.status().to_string();
  EXPECT_NE(bad.status().message().find("opencl:N"), std::string::npos) << bad.status().to_string();
}

TEST(FleetConfigTest, AModelsOwnIdlePolicyTakesWhatItOmitsFromTheServerFlags) {
  const engine::EngineOptions d;
  const fleet::IdlePolicySettings server{"adaptive", 120.0};
  auto r = parse_fleet_config(R"({"models": [
      {"path": "a.gguf"},
      {"path": "b.gguf", "idle_policy": "fixed"},
      {"path": "c.gguf", "keep_alive_s": 5},
      {"path": "d.gguf", "idle_policy": "always-on"}]})",
                              "", d, server);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].idle_policy, nullptr);  // the fleet's
  auto* b = dynamic_cast<const fleet::FixedKeepAlivePolicy*>((*r)[1].idle_policy.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->keep_alive_ns(), 120'000'000'000);
  auto* c = dynamic_cast<const fleet::HybridHistogramPolicy*>((*r)[2].idle_policy.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->options().fallback_keep_alive_ns, 5'000'000'000);
  ASSERT_NE((*r)[3].idle_policy, nullptr);
  EXPECT_EQ((*r)[3].idle_policy->name(), "always-on");
}

TEST(FleetConfigTest, RefusesMalformedConfigsWithTheKeyAtFault) {
  const engine::EngineOptions d;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", "not valid JSON"},
      {"[]", "\"models\" array"},
      {R"({"models": []})", "empty"},
      {R"({"models": [], "extra": 1})", "extra"},
      {R"({"models": [{"name": "x"}]})", "models[0].path"},
      {R"({"models": [{"path": "x.gguf", "parallel": 0}]})", "models[0].parallel"},
      {R"({"models": [{"path": "x.gguf", "ctx_size": "big"}]})", "models[0].ctx_size"},
      {R"({"models": [{"path": "x.gguf", "priority": -1}]})", "models[0].priority"},
      {R"({"models": [{"path": "x.gguf", "pinned": 1}]})", "models[0].pinned"},
      {R"({"models": [{"path": "x.gguf"}, {"path": "y.gguf", "ctxsize": 9}]})", "models[1].ctxsize"},
      {R"({"models": [{"path": "x.gguf", "ttft_slo_ms": 1e300}]})", "models[0].ttft_slo_ms"},
      {R"({"models": [{"path": "x.gguf", "parallel": 2.5}]})", "expected an integer"},
      {R"({"models": [{"path": "x.gguf", "ttft_slo_ms": 1e14}]})", "out of range"},
      {R"({"models": [{"path": "x.gguf", "parallel": 3000000000}]})", "out of range"},
      {R"({"models": [{"path": "x.gguf", "tokenizer": 7}]})", "models[0].tokenizer"},
      {R"({"models": [{"path": "x.gguf", "idle_policy": "lru"}]})", "models[0].idle_policy"},
      {R"({"models": [{"path": "x.gguf", "idle_policy": 1}]})", "models[0].idle_policy"},
      {R"({"models": [{"path": "x.gguf", "keep_alive_s": -5}]})", "models[0].keep_alive_s"},
      {R"({"models": [{"path": "x.gguf", "keep_alive_s": "1m"}]})", "models[0].keep_alive_s"},
  };
  for (const auto& [text, expect] : cases) {
    auto r = parse_fleet_config(text, "", d, {});
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument) << text;
    EXPECT_NE(r.status().message().find(expect), std::string::npos)
        << text << " -> " << r.status().message();
  }
  EXPECT_EQ(read_fleet_config("/nonexistent/fleet.json", d, {}).status().code(), ErrorCode::kNotFound);
}

TEST(FleetConfigTest, AModelsAdaptersBecomeEntriesWithTheModelAsParent) {
  engine::EngineOptions d;
  d.max_running = 4;
  auto r = parse_fleet_config(R"({"models": [
      {"name": "tiny", "path": "tiny.gguf", "parallel": 2, "idle_policy": "fixed", "keep_alive_s": 90,
       "adapters": [{"name": "sql", "path": "loras/sql"},
                    {"name": "poem", "path": "/l/poem.gguf", "pinned": true, "keep_alive_s": 5}]},
      {"path": "other.gguf"}]})",
                              "/etc/fleet", d, {});
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 4u);
  const auto& sql = (*r)[1];
  EXPECT_EQ(sql.name, "tiny:sql");
  EXPECT_EQ(sql.parent, "tiny");
  EXPECT_EQ(sql.path, "/etc/fleet/loras/sql");
  EXPECT_EQ(sql.engine.max_running, 2);             // the base's engine settings
  EXPECT_EQ(sql.idle_policy, (*r)[0].idle_policy);  // and its idle policy
  const auto& poem = (*r)[2];
  EXPECT_EQ(poem.name, "tiny:poem");
  EXPECT_EQ(poem.path, "/l/poem.gguf");
  EXPECT_TRUE(poem.pinned);
  ASSERT_NE(poem.idle_policy, nullptr);
  EXPECT_NE(poem.idle_policy, (*r)[0].idle_policy);  // its own keep-alive
  EXPECT_TRUE((*r)[3].parent.empty());

  for (const char* bad : {R"({"models": [{"path": "a.gguf", "adapters": {"name": "x"}}]})",
                          R"({"models": [{"path": "a.gguf", "adapters": [{"path": "x"}]}]})",
                          R"({"models": [{"path": "a.gguf", "adapters": [{"name": "a:b", "path": "x"}]}]})",
                          R"({"models": [{"path": "a.gguf", "adapters": [{"name": "x"}]}]})",
                          R"({"models": [{"path": "a.gguf", "adapters": [{"name": "x", "path": "x", "rank": 4}]}]})"}) {
    auto e = parse_fleet_config(bad, "", d, {});
    ASSERT_FALSE(e.is_ok()) << bad;
    EXPECT_NE(e.status().message().find("adapters"), std::string::npos) << e.status().message();
  }
}

TEST(FleetConfigTest, LoraFlagsNameTheirBaseUnlessTheFleetHasOne) {
  std::vector<fleet::FleetModelSpec> one(1);
  one[0].name = "tiny";
  one[0].engine.max_running = 3;
  ASSERT_TRUE(add_lora_flags({"sql=/l/sql", "tiny:poem=/l/poem.gguf"}, &one).is_ok());
  ASSERT_EQ(one.size(), 3u);
  EXPECT_EQ(one[1].name, "tiny:sql");
  EXPECT_EQ(one[1].parent, "tiny");
  EXPECT_EQ(one[1].path, "/l/sql");
  EXPECT_EQ(one[1].engine.max_running, 3);
  EXPECT_EQ(one[2].name, "tiny:poem");

  std::vector<fleet::FleetModelSpec> two(2);
  two[0].name = "a";
  two[1].name = "b";
  Status st = add_lora_flags({"sql=/l/sql"}, &two);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("BASE:NAME"), std::string::npos) << st.message();
  EXPECT_TRUE(add_lora_flags({"b:sql=/l/sql"}, &two).is_ok());
  EXPECT_EQ(two.back().parent, "b");
  for (const char* bad : {"c:sql=/l/sql", "b:sql=/l/again", "b:s q=/x", "b:sql", "b:x="}) {
    EXPECT_FALSE(add_lora_flags({bad}, &two).is_ok()) << bad;
  }
}

TEST(FleetConfigTest, ListsTheGgufFilesOfADirectory) {
  testing::TempDir dir;
  for (const char* f : {"b.gguf", "a.gguf", "notes.txt"}) std::ofstream(dir.file(f)) << "x";
  engine::EngineOptions d;
  d.max_running = 3;
  auto r = fleet_specs_from_dir(dir.path().string(), d);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].name, "a");
  EXPECT_EQ((*r)[1].name, "b");
  EXPECT_EQ((*r)[1].engine.max_running, 3);
  std::filesystem::remove(dir.file("a.gguf"));
  std::filesystem::remove(dir.file("b.gguf"));
  EXPECT_NE(fleet_specs_from_dir(dir.path().string(), d).status().message().find("no *.gguf"),
            std::string::npos);
  EXPECT_FALSE(fleet_specs_from_dir(dir.file("missing"), d).is_ok());
}

}  // namespace fleet_config_test
}  // namespace tessera::serve
