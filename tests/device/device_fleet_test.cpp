// A fleet of two models on the OpenCL device (FleetModelSpec::device): device memory is the top
// tier. Suspending one frees the device memory its weights and KV pool held (as the device
// layer counts it), resuming uploads it again and gives the same greedy tokens, and a prompt's
// prefix blocks kept across the suspension come back out of and into the device KV pool; a
// device budget with room for one model suspends the idle one for the other.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>

#include "device_fixture.h"
#include "tessera/device/device.h"
#include "tessera/fleet/fleet_manager.h"
#include "tessera/model/synth.h"
#include "event_collector.h"
#include "test_util.h"

namespace tessera::fleet {
namespace device_fleet_test {

using testing::Collector;

// 45 prompt tokens: two full blocks of 16 before the block of the last one.
engine::Request warm_prompt() {
  engine::Request r;
  r.prompt = {1, 17, 42, 99, 7};
  for (int i = 0; i < 40; ++i) r.prompt.push_back(3 + (i * 37) % 400);
  r.sampling.temperature = 0.0f;
  r.max_tokens = 8;
  r.ignore_eos = true;
  return r;
}

std::shared_ptr<Collector> run(FleetManager& f, const std::string& name) {
  auto c = std::make_shared<Collector>();
  auto id = f.submit(name, warm_prompt(), Collector::sink(c));
  EXPECT_TRUE(id.is_ok()) << id.status().to_string();
  EXPECT_TRUE(c->wait(std::chrono::seconds(120)));
  return c;
}

// Two tiny f32 models of different weights on device `index`, written into `dir`.
std::vector<FleetModelSpec> two_tiny_models(const testing::TempDir& dir, int index) {
  std::vector<FleetModelSpec> specs;
  for (int i = 0; i < 2; ++i) {
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kF32;
    o.seed = 21 + i;
    const std::string path = dir.file(fmt::format("d{}.gguf", i));
    TS_CHECK(model::write_synthetic_model(o, path).is_ok());
    FleetModelSpec s;
    s.name = fmt::format("d{}", i);
    s.path = path;
    s.device = index;
    s.engine.n_threads = 1;
    s.engine.ctx_size = 128;
    s.engine.max_running = 2;
    specs.push_back(std::move(s));
  }
  return specs;
}

TEST(DeviceFleet, SuspendFreesDeviceMemoryAndResumeGivesTheSameTokens) {
  TS_DEVICE_OR_SKIP();
  int index = 0;
  if (const char* env = std::getenv("TESSERA_TEST_OPENCL_DEVICE")) index = std::atoi(env);
  testing::TempDir dir;
  std::vector<FleetModelSpec> specs = two_tiny_models(dir, index);
  auto dev = device::Device::shared(index);
  ASSERT_TRUE(dev.is_ok()) << dev.status().to_string();
  const uint64_t before_fleet = dev->memory().bytes_in_use;
  auto created = FleetManager::create(std::move(specs), FleetOptions{});
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  FleetManager& f = **created;
  // Unloaded models hold no device memory.
  EXPECT_EQ(dev->memory().bytes_in_use, before_fleet);
  ASSERT_TRUE(f.start().is_ok());
  const auto first = run(f, "d0");
  ASSERT_EQ(first->finish.reason, engine::FinishReason::kLength);
  ASSERT_EQ(first->tokens.size(), 8u);
  const auto other = run(f, "d1");
  EXPECT_NE(other->tokens, first->tokens);  // different weights
  const uint64_t both = dev->memory().bytes_in_use;
  // Each tiny f32 model: ~2.2 MB of weights, plus its KV pool and step scratch.
  EXPECT_GT(both, before_fleet + 4'000'000);

  ASSERT_TRUE(f.suspend("d0").is_ok());
  const uint64_t one = dev->memory().bytes_in_use;
  EXPECT_LT(one, both - 2'000'000) << "suspending d0 freed " << both - one << " bytes";
  EXPECT_GT(one, before_fleet + 2'000'000);  // d1 is still up
  EXPECT_GT(f.status("d0")->kept_prefix_blocks, 0);  // read back out of the device pool

  ASSERT_TRUE(f.resume("d0").is_ok());
  EXPECT_GT(dev->memory().bytes_in_use, one + 2'000'000);
  const auto again = run(f, "d0");
  EXPECT_EQ(again->tokens, first->tokens);
  EXPECT_EQ(again->finish.usage.cached_tokens, 32);  // the kept blocks, written into the pool
  f.stop();
}

// With --device-mem-budget room for one of the two, the fleet brings up the first and, when the
// second is asked for, suspends the idle first to make room on the device.
TEST(DeviceFleet, ADeviceBudgetSuspendsAnIdleModelOnTheDevice) {
  TS_DEVICE_OR_SKIP();
  int index = 0;
  if (const char* env = std::getenv("TESSERA_TEST_OPENCL_DEVICE")) index = std::atoi(env);
  testing::TempDir dir;
  std::vector<FleetModelSpec> specs = two_tiny_models(dir, index);
  int64_t one_model = 0;
  {
    auto probe = FleetManager::create(specs, FleetOptions{});
    ASSERT_TRUE(probe.is_ok()) << probe.status().to_string();
    one_model = (*probe)->status("d0")->active_bytes;
  }
  ASSERT_GT(one_model, 0);
  FleetOptions o;
  o.device_budget_bytes = one_model + one_model / 2;
  auto created = FleetManager::create(specs, o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  FleetManager& f = **created;
  ASSERT_TRUE(f.start().is_ok());
  EXPECT_EQ(f.state("d0"), ModelState::kActive);
  EXPECT_NE(f.state("d1"), ModelState::kActive);  // no room on the device
  const auto first = run(f, "d1");                  // d0 idle: suspended for it
  EXPECT_EQ(first->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(f.state("d1"), ModelState::kActive);
  EXPECT_EQ(f.state("d0"), ModelState::kSuspended);
  f.stop();
}

}  // namespace device_fleet_test
}  // namespace tessera::fleet
