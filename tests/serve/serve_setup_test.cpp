// `tessera serve`'s start-up decisions as library functions: sizes as operators write them, the
// KV budget, the server's options (work threads, template limits, keys and their environment
// fallbacks), the KV type, the adapter folder, the engine options, and the fleet's options.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tessera/serve/byte_size.h"
#include "tessera/serve/fleet_service.h"
#include "tessera/serve/server_setup.h"
#include "test_util.h"

namespace tessera::serve {
namespace serve_setup_test {

TEST(ByteSize, ParsesSuffixes) {
  EXPECT_EQ(*parse_byte_size("1073741824"), int64_t{1} << 30);
  EXPECT_EQ(*parse_byte_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(*parse_byte_size("8G"), int64_t{8} << 30);
  EXPECT_EQ(*parse_byte_size("2k"), 2048);
  EXPECT_EQ(*parse_byte_size("1.5GiB"), int64_t{3} << 29);
  EXPECT_EQ(*parse_byte_size("64MB"), int64_t{64} << 20);
  EXPECT_EQ(*parse_byte_size("1T"), int64_t{1} << 40);
  EXPECT_EQ(*parse_byte_size("0"), 0);
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  EXPECT_EQ(parse_byte_size("lots").status().message(),
            "'lots' is not a size (e.g. 8G, 512M, 1073741824)");
  EXPECT_EQ(parse_byte_size("8X").status().message(), "'8X': unknown suffix (K, M, G or T)");
  EXPECT_EQ(parse_byte_size("-1G").status().code(), ErrorCode::kInvalidArgument);
}

TEST(ByteSize, KvMemoryTakesBytesOrAPercentage) {
  EXPECT_EQ(*parse_kv_memory("", 0), 0);
  EXPECT_EQ(*parse_kv_memory("4G", 0), int64_t{4} << 30);
  EXPECT_EQ(parse_kv_memory("0", 0).status().message(), "the KV memory must be > 0");
  EXPECT_EQ(parse_kv_memory("150%", 0).status().message(), "'150%' is not a percentage in (0, 100]");
  EXPECT_EQ(parse_kv_memory("x%", 0).status().code(), ErrorCode::kInvalidArgument);
}

TEST(ServerSetup, BuildsTheServerOptions) {
  ServeSettings s;
  s.host = "0.0.0.0";
  s.port = 9000;
  s.io_threads = 3;
  s.work_threads = 6;
  s.template_memory = "2M";
  s.template_timeout_ms = 250;
  s.api_key = "user";
  s.admin_api_key = "admin";
  auto setup = make_server_setup(s);
  ASSERT_TRUE(setup.is_ok()) << setup.status().to_string();
  EXPECT_EQ(setup->options.http.host, "0.0.0.0");
  EXPECT_EQ(setup->options.http.port, 9000);
  EXPECT_EQ(setup->options.http.n_threads, 3);
  EXPECT_EQ(setup->options.work.n_threads, 6);
  EXPECT_EQ(setup->options.work.max_running_per_key, 3);  // half the pool per model
  EXPECT_EQ(setup->render_limits.max_memory_bytes, size_t{2} << 20);
  EXPECT_EQ(setup->render_limits.max_time_ms, 250);
  EXPECT_EQ(setup->options.api_key, "user");
  EXPECT_EQ(setup->options.admin_api_key, "admin");
}

TEST(ServerSetup, RefusesBadLimitsAndKeys) {
  ServeSettings s;
  s.work_threads = 0;
  EXPECT_EQ(make_server_setup(s).status().message(), "--work-threads must be >= 1");
  s = ServeSettings{};
  s.template_memory = "512K";
  EXPECT_EQ(make_server_setup(s).status().message(), "--template-memory must be at least 1M");
  s = ServeSettings{};
  s.template_timeout_ms = 0;
  EXPECT_EQ(make_server_setup(s).status().message(), "--template-timeout-ms must be >= 1");
  s = ServeSettings{};
  s.api_key = "same";
  s.admin_api_key = "same";
  EXPECT_EQ(make_server_setup(s).status().message(), "--admin-api-key must differ from --api-key");
}

TEST(ServerSetup, KeysFallBackToTheEnvironment) {
  ::setenv("TESSERA_API_KEY", "from-env", 1);
  ServeSettings s;
  auto setup = make_server_setup(s);
  ::unsetenv("TESSERA_API_KEY");
  ASSERT_TRUE(setup.is_ok());
  EXPECT_EQ(setup->options.api_key, "from-env");
  EXPECT_EQ(setup->options.admin_api_key, "");
}

TEST(ServerSetup, KvTypeAndEngineOptions) {
  EXPECT_EQ(*parse_kv_type("f16"), kernels::DType::kF16);
  EXPECT_EQ(*parse_kv_type("f32"), kernels::DType::kF32);
  EXPECT_EQ(parse_kv_type("q8_0").status().message(), "--kv-type must be f16 or f32");
  ServeSettings s;
  s.ctx_size = 4096;
  s.parallel = 3;
  s.no_prefix_cache = true;
  s.spec_tokens = 7;
  const engine::EngineOptions eo = engine_options(s, kernels::DType::kF32, 2048);
  EXPECT_EQ(eo.ctx_size, 2048);  // capped at the model's context
  EXPECT_EQ(eo.max_running, 3);
  EXPECT_FALSE(eo.prefix_cache);
  EXPECT_EQ(eo.kv_dtype, kernels::DType::kF32);
  EXPECT_EQ(eo.spec.max_draft, 7);
}

TEST(ServerSetup, LoraDirMustBeAFolderAndImpliesRuntimeLoading) {
  testing::TempDir dir;
  ServeSettings s;
  s.lora_dir = dir.path().string();
  ASSERT_TRUE(resolve_lora_dir(s).is_ok());
  EXPECT_TRUE(s.lora_runtime);
  s.lora_dir = dir.file("missing");
  EXPECT_NE(resolve_lora_dir(s).message().find("is not a directory"), std::string::npos);
  ServeSettings runtime_only;
  runtime_only.lora_runtime = true;
  EXPECT_NE(resolve_lora_dir(runtime_only).message().find("--lora-runtime needs --lora-dir"),
            std::string::npos);
}

TEST(FleetService, OptionsFromTheSettings) {
  ServeSettings s;
  s.mem_budget = "8G";
  s.host_budget = "4G";
  s.keep_prefix = "0";
  s.idle_policy = "adaptive";
  s.resume_deadline_s = 2.5;
  s.threads = 2;
  auto fo = fleet_options(s);
  ASSERT_TRUE(fo.is_ok()) << fo.status().to_string();
  EXPECT_EQ(fo->active_budget_bytes, int64_t{8} << 30);
  EXPECT_EQ(fo->host_budget_bytes, int64_t{4} << 30);
  EXPECT_EQ(fo->keep_prefix_bytes, 0);
  EXPECT_NE(fo->idle_policy, nullptr);
  EXPECT_EQ(fo->request_deadline_ns, 2'500'000'000);
  ASSERT_NE(fo->device, nullptr);
  EXPECT_EQ(fo->device->n_threads(), 2);
  s.mem_budget = "much";
  EXPECT_EQ(fleet_options(s).status().message().rfind("--mem-budget: ", 0), 0u);
  s.mem_budget.clear();
  s.idle_policy = "sometimes";
  EXPECT_EQ(fleet_options(s).status().message().rfind("--idle-policy/--keep-alive: ", 0), 0u);
}

}  // namespace serve_setup_test
}  // namespace tessera::serve
