// FleetManager over small synthetic models: load, suspend (memory really released), resume
// (identical greedy output), request-triggered resume, deadlines, keep-alive under a FakeClock,
// budget pressure, and concurrent requests during a resume.
#include "tessera/fleet/fleet_manager.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "tessera/fleet/keep_alive_policy.h"
#include "tessera/fleet/process_memory.h"
#include "tessera/model/synth.h"
#include "event_collector.h"
#include "test_util.h"

namespace tessera::fleet {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

using testing::Collector;

engine::Request greedy(int32_t max_tokens = 8) {
  engine::Request r;
  r.prompt = {1, 17, 42, 99, 7};
  r.sampling.temperature = 0.0f;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

class FleetManagerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir();
    for (int i = 0; i < 3; ++i) {
      model::SynthOptions o;
      o.shape = *model::find_synth_shape("tiny");
      o.dtype = kernels::DType::kQ8_0;
      o.seed = 11 + i;
      ASSERT_TRUE(model::write_synthetic_model(o, path(i)).is_ok());
    }
    // Big enough (f32, ~18 MiB) for the resident set to show the weights leave.
    model::SynthOptions o;
    o.shape = model::SynthShape{"small", 256, 4, 4, 2, 768, 2048, 512};
    o.dtype = kernels::DType::kF32;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("big.gguf")).is_ok());
    // Q4_0 (~10 MiB): repacked at load into a memfd image on CPUs with the packed kernel.
    o.shape = model::SynthShape{"q4", 512, 4, 8, 2, 2048, 2048, 512};
    o.dtype = kernels::DType::kQ4_0;
    ASSERT_TRUE(model::write_synthetic_model(o, dir_->file("big-q4_0.gguf")).is_ok());
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string name(int i) { return fmt::format("m{}", i); }
  static std::string path(int i) { return dir_->file(fmt::format("m{}.gguf", i)); }

  static FleetModelSpec spec(const std::string& name, const std::string& file) {
    FleetModelSpec s;
    s.name = name;
    s.path = file;
    s.engine.n_threads = 1;
    s.engine.ctx_size = 128;
    s.engine.max_running = 4;
    return s;
  }

  std::unique_ptr<FleetManager> make(int n_models, FleetOptions o = {}) {
    if (o.clock == nullptr) o.clock = &clock_;
    std::vector<FleetModelSpec> specs;
    for (int i = 0; i < n_models; ++i) specs.push_back(spec(name(i), path(i)));
    auto f = FleetManager::create(std::move(specs), o);
    EXPECT_TRUE(f.is_ok()) << f.status().to_string();
    return f.is_ok() ? std::move(f).value() : nullptr;
  }

  // Submits and waits; returns the collector.
  static std::shared_ptr<Collector> run(FleetManager& f, const std::string& name,
                                        engine::Request r = greedy()) {
    auto c = std::make_shared<Collector>();
    auto id = f.submit(name, std::move(r), Collector::sink(c));
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    EXPECT_TRUE(c->wait());
    return c;
  }

  static testing::TempDir* dir_;
  FakeClock clock_{1'000 * kSecond};
};

testing::TempDir* FleetManagerTest::dir_ = nullptr;

TEST_F(FleetManagerTest, CreateRejectsDuplicateNamesAndNoModels) {
  EXPECT_FALSE(FleetManager::create({}, {}).is_ok());
  auto dup = FleetManager::create({spec("a", path(0)), spec("a", path(1))}, {});
  ASSERT_FALSE(dup.is_ok());
  EXPECT_NE(dup.status().message().find("'a'"), std::string::npos);
}

TEST_F(FleetManagerTest, CreateRejectsAnAdapterWithoutABaseModel) {
  FleetModelSpec adapter = spec("m0:x", dir_->file("no-such-adapter"));
  for (const char* parent : {"nope", "m0:y"}) {
    adapter.parent = parent;
    FleetModelSpec other = spec("m0:y", dir_->file("no-such-adapter"));
    other.parent = "m0";
    auto f = FleetManager::create({spec("m0", path(0)), other, adapter}, {});
    ASSERT_FALSE(f.is_ok()) << parent;
    EXPECT_NE(f.status().message().find(std::string("'") + parent + "'"), std::string::npos)
        << f.status().message();
  }
}

// An adapter whose file does not load is Failed with the loader's error; its base serves.
TEST_F(FleetManagerTest, AnAdapterThatDoesNotLoadIsFailedAndItsBaseServes) {
  FleetModelSpec adapter = spec("m0:x", dir_->file("no-such-adapter"));
  adapter.parent = "m0";
  FleetOptions o;
  o.clock = &clock_;
  auto f = FleetManager::create({adapter, spec("m0", path(0))}, o);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ((*f)->names(), (std::vector<std::string>{"m0", "m0:x"}));  // bases first
  EXPECT_EQ((*f)->state("m0:x"), ModelState::kFailed);
  EXPECT_NE((*f)->status("m0:x")->last_error.find("no-such-adapter"), std::string::npos)
      << (*f)->status("m0:x")->last_error;
  EXPECT_EQ((*f)->status("m0:x")->parent, "m0");
  ASSERT_TRUE((*f)->load("m0").is_ok());
  run(**f, "m0");
  auto refused = (*f)->submit("m0:x", greedy(), [](engine::Event&&) {});
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
}

// One bad model does not stop the fleet: it is Failed with its error, its requests are refused
// at once naming the cause while the retry backs off, the others serve, and once the file is
// good a request after the back-off brings it up.
TEST_F(FleetManagerTest, AModelThatDoesNotOpenIsFailedAndTheOthersServe) {
  const std::string bad = dir_->file("truncated.gguf");
  {
    std::ifstream in(path(0), std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream out(bad, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  }
  FleetOptions o;
  o.clock = &clock_;
  auto created = FleetManager::create({spec("good", path(1)), spec("bad", bad)}, o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  auto f = std::move(created).value();
  EXPECT_FALSE(f->start().is_ok());  // start() reports the bad model...
  EXPECT_EQ(f->state("good"), ModelState::kActive);  // ...and serves the good one
  EXPECT_EQ(f->state("bad"), ModelState::kFailed);
  const ModelStatus st = *f->status("bad");
  EXPECT_NE(st.last_error.find("truncated.gguf"), std::string::npos) << st.last_error;
  EXPECT_EQ(f->opened("bad").code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(f->opened("good").is_ok());
  EXPECT_EQ(f->shared_tokenizer("bad"), nullptr);

  auto refused = f->submit("bad", greedy(), [](engine::Event&&) { FAIL() << "refused: no events"; });
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("failed to load"), std::string::npos);
  EXPECT_EQ(run(*f, "good")->finish.reason, engine::FinishReason::kLength);

  // The file is repaired; after the back-off a request retries the load and is served.
  std::filesystem::copy_file(path(2), bad, std::filesystem::copy_options::overwrite_existing);
  clock_.advance_ns(6 * kSecond);
  auto served = run(*f, "bad");
  EXPECT_EQ(served->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(f->state("bad"), ModelState::kActive);
  EXPECT_TRUE(f->opened("bad").is_ok());
  EXPECT_GT(f->status("bad")->active_bytes, 0);
  EXPECT_TRUE(f->status("bad")->last_error.empty());
}

// Consecutive failures double the back-off.
TEST_F(FleetManagerTest, RetriesOfAFailedModelBackOff) {
  FleetOptions o;
  o.clock = &clock_;
  o.load_on_start = false;
  auto created = FleetManager::create({spec("gone", dir_->file("vanished.gguf"))}, o);
  ASSERT_TRUE(created.is_ok());
  auto f = std::move(created).value();
  EXPECT_EQ(f->state("gone"), ModelState::kFailed);
  auto refuse = [&] { return f->submit("gone", greedy(), [](engine::Event&&) {}); };
  EXPECT_FALSE(refuse().is_ok());  // within the first back-off (5 s)
  clock_.advance_ns(6 * kSecond);
  auto c = std::make_shared<Collector>();
  ASSERT_TRUE(f->submit("gone", greedy(), Collector::sink(c)).is_ok());  // queued: retry
  f->tick();
  ASSERT_TRUE(c->wait(std::chrono::seconds(5)));
  EXPECT_EQ(c->finish.error.code(), ErrorCode::kUnavailable);
  EXPECT_NE(c->finish.error.message().find("vanished.gguf"), std::string::npos);
  clock_.advance_ns(6 * kSecond);  // the second back-off is 10 s
  EXPECT_FALSE(refuse().is_ok());
  clock_.advance_ns(5 * kSecond);
  auto again = std::make_shared<Collector>();
  EXPECT_TRUE(f->submit("gone", greedy(), Collector::sink(again)).is_ok());
  f->tick();
  ASSERT_TRUE(again->wait(std::chrono::seconds(5)));
  EXPECT_EQ(f->status("gone")->loads, 3);
}

TEST_F(FleetManagerTest, SuspendReleasesEngineAndBudgetAndResumeGivesIdenticalTokens) {
  auto f = make(2);
  ASSERT_TRUE(f->start().is_ok());
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
  EXPECT_EQ(f->state("m1"), ModelState::kActive);
  const int64_t both = f->budget().used();
  auto before = run(*f, "m0");
  ASSERT_EQ(before->finish.reason, engine::FinishReason::kLength);
  ASSERT_EQ(before->tokens.size(), 8u);
  EXPECT_GT(f->stats("m0").kv_blocks_total, 0);

  ASSERT_TRUE(f->suspend("m0").is_ok());
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);
  EXPECT_EQ(f->stats("m0").kv_blocks_total, 0);  // no engine, no KV pool
  EXPECT_EQ(f->budget().used(), both - f->status("m0")->active_bytes);
  EXPECT_FALSE(f->suspend("m0").is_ok());  // not Active any more

  ASSERT_TRUE(f->resume("m0").is_ok());
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
  EXPECT_EQ(f->status("m0")->resumes, 1);
  auto after = run(*f, "m0");
  EXPECT_EQ(after->tokens, before->tokens);
  // Different weights give different tokens (the fleet routes by name).
  auto other = run(*f, "m1");
  EXPECT_NE(other->tokens, before->tokens);
}

// A 45-token prompt: two full blocks of 16 before the block holding its last token.
engine::Request long_prompt(int32_t max_tokens) {
  engine::Request r = greedy(max_tokens);
  for (int i = 0; i < 40; ++i) r.prompt.push_back(3 + (i * 37) % 400);
  return r;
}

TEST_F(FleetManagerTest, AWarmPromptStaysWarmAcrossSuspendResumeAndEviction) {
  const engine::Request warm = long_prompt(6);
  FleetOptions o;
  o.clock = &clock_;
  o.host_budget_bytes = 0;
  auto f = make(1, o);
  ASSERT_TRUE(f->start().is_ok());
  auto before = run(*f, "m0", warm);
  EXPECT_EQ(before->finish.usage.cached_tokens, 0);

  ASSERT_TRUE(f->suspend("m0").is_ok());
  const ModelStatus suspended = *f->status("m0");
  // 45 + 6 - 1 = 50 positions computed: 3 full blocks of 16.
  EXPECT_EQ(suspended.kept_prefix_blocks, 3);
  EXPECT_GT(suspended.kept_prefix_bytes, 0);
  ASSERT_TRUE(f->resume("m0").is_ok());
  EXPECT_EQ(f->status("m0")->kept_prefix_blocks, 0);  // back in the engine's pool
  EXPECT_EQ(f->stats("m0").kv_blocks_cached, 3);
  auto resumed = run(*f, "m0", warm);
  EXPECT_EQ(resumed->tokens, before->tokens);
  EXPECT_EQ(resumed->finish.usage.cached_tokens, 32);  // the prompt's two full blocks

  // Through the disk tier too.
  ASSERT_TRUE(f->suspend("m0").is_ok());
  ASSERT_TRUE(f->evict("m0").is_ok());
  EXPECT_EQ(f->status("m0")->kept_prefix_blocks, 3);
  ASSERT_TRUE(f->load("m0").is_ok());
  auto reloaded = run(*f, "m0", warm);
  EXPECT_EQ(reloaded->tokens, before->tokens);
  EXPECT_EQ(reloaded->finish.usage.cached_tokens, 32);
}

TEST_F(FleetManagerTest, KeepingNoPrefixBlocksMakesTheWarmPromptCold) {
  const engine::Request warm = long_prompt(4);
  FleetOptions o;
  o.clock = &clock_;
  o.keep_prefix_bytes = 0;
  auto f = make(1, o);
  ASSERT_TRUE(f->start().is_ok());
  auto before = run(*f, "m0", warm);
  ASSERT_TRUE(f->suspend("m0").is_ok());
  EXPECT_EQ(f->status("m0")->kept_prefix_blocks, 0);
  ASSERT_TRUE(f->resume("m0").is_ok());
  auto after = run(*f, "m0", warm);
  EXPECT_EQ(after->tokens, before->tokens);
  EXPECT_EQ(after->finish.usage.cached_tokens, 0);
}

TEST_F(FleetManagerTest, SuspendDropsTheWeightsFromTheResidentSet) {
  FleetOptions o;
  o.clock = &clock_;
  auto created = FleetManager::create({spec("big", dir_->file("big.gguf"))}, o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  auto f = std::move(created).value();
  ASSERT_TRUE(f->load("big").is_ok());
  auto before = run(*f, "big", greedy(4));
  const int64_t weights = f->status("big")->weight_bytes;
  ASSERT_GT(weights, 16 << 20);
  const int64_t rss_active = *resident_bytes();
  ASSERT_TRUE(f->suspend("big").is_ok());
  const int64_t rss_suspended = *resident_bytes();
  EXPECT_GE(rss_active - rss_suspended, weights * 3 / 4)
      << "active " << rss_active << " suspended " << rss_suspended << " weights " << weights;
  ASSERT_TRUE(f->resume("big").is_ok());
  EXPECT_GE(*resident_bytes() - rss_suspended, weights * 3 / 4);  // prefaulted
  EXPECT_EQ(run(*f, "big", greedy(4))->tokens, before->tokens);
}

// The same for a model whose weights live in a repacked image (anonymous memfd region): suspend
// releases it, resume maps it back, and so does a round trip through the disk tier.
TEST_F(FleetManagerTest, SuspendAndEvictReleaseARepackedImage) {
  FleetOptions o;
  o.clock = &clock_;
  auto created = FleetManager::create({spec("q4", dir_->file("big-q4_0.gguf"))}, o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  auto f = std::move(created).value();
  ASSERT_TRUE(f->load("q4").is_ok());
  auto before = run(*f, "q4", greedy(4));
  const int64_t weights = f->status("q4")->weight_bytes;
  ASSERT_GT(weights, 8 << 20);
  const int64_t rss_active = *resident_bytes();
  ASSERT_TRUE(f->suspend("q4").is_ok());
  const int64_t rss_suspended = *resident_bytes();
  EXPECT_GE(rss_active - rss_suspended, weights * 3 / 4)
      << "active " << rss_active << " suspended " << rss_suspended << " weights " << weights;
  ASSERT_TRUE(f->resume("q4").is_ok());
  EXPECT_GE(*resident_bytes() - rss_suspended, weights * 3 / 4);  // prefaulted
  EXPECT_EQ(run(*f, "q4", greedy(4))->tokens, before->tokens);
  ASSERT_TRUE(f->suspend("q4").is_ok());
  ASSERT_TRUE(f->evict("q4").is_ok());
  EXPECT_EQ(f->state("q4"), ModelState::kEvicted);
  ASSERT_TRUE(f->resume("q4").is_ok());
  EXPECT_EQ(run(*f, "q4", greedy(4))->tokens, before->tokens);
}

TEST_F(FleetManagerTest, RequestForSuspendedModelResumesIt) {
  auto f = make(2);
  ASSERT_TRUE(f->start().is_ok());
  auto before = run(*f, "m1");
  ASSERT_TRUE(f->suspend("m1").is_ok());
  auto after = run(*f, "m1");  // the control thread resumes it
  EXPECT_EQ(after->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(after->tokens, before->tokens);
  EXPECT_EQ(f->state("m1"), ModelState::kActive);
  EXPECT_EQ(f->status("m1")->resumes, 1);
}

TEST_F(FleetManagerTest, QueuedRequestPastItsDeadlineFailsUnavailable) {
  FleetOptions o;
  o.load_on_start = false;
  o.request_deadline_ns = 30 * kSecond;
  auto f = make(1, o);  // no control thread: the test ticks
  ASSERT_TRUE(f->load("m0").is_ok());
  ASSERT_TRUE(f->suspend("m0").is_ok());
  auto c = std::make_shared<Collector>();
  ASSERT_TRUE(f->submit("m0", greedy(), Collector::sink(c)).is_ok());
  EXPECT_EQ(f->status("m0")->queued, 1);
  clock_.advance_ns(31 * kSecond);
  f->tick();
  ASSERT_TRUE(c->wait(std::chrono::seconds(1)));
  EXPECT_EQ(c->finish.reason, engine::FinishReason::kError);
  EXPECT_EQ(c->finish.error.code(), ErrorCode::kUnavailable);
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);  // nobody waits for it any more
}

TEST_F(FleetManagerTest, CancelOfAQueuedRequestFinishesItCancelled) {
  FleetOptions o;
  o.load_on_start = false;
  auto f = make(1, o);
  auto c = std::make_shared<Collector>();
  auto id = f->submit("m0", greedy(), Collector::sink(c));
  ASSERT_TRUE(id.is_ok());
  f->cancel("m0", *id);
  ASSERT_TRUE(c->wait(std::chrono::seconds(1)));
  EXPECT_EQ(c->finish.reason, engine::FinishReason::kCancelled);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kUnloaded);  // nothing waits: no load
}

TEST_F(FleetManagerTest, KeepAlivePolicySuspendsAnIdleModelOnTheFakeClock) {
  FleetOptions o;
  o.load_on_start = false;
  o.idle_policy = std::make_shared<FixedKeepAlivePolicy>(300 * kSecond);
  auto f = make(2, o);
  ASSERT_TRUE(f->load("m0").is_ok());
  ASSERT_TRUE(f->load("m1").is_ok());
  run(*f, "m0");
  clock_.advance_ns(200 * kSecond);
  run(*f, "m1");  // m1 was used 100 s later
  clock_.advance_ns(99 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kActive);  // idle 299 s
  clock_.advance_ns(2 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);  // idle 301 s
  EXPECT_EQ(f->state("m1"), ModelState::kActive);     // idle 101 s
  clock_.advance_ns(200 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);
  // A request brings m0 back (the test ticks instead of the control thread).
  auto c = std::make_shared<Collector>();
  ASSERT_TRUE(f->submit("m0", greedy(), Collector::sink(c)).is_ok());
  f->tick();
  ASSERT_TRUE(c->wait());
  EXPECT_EQ(c->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
}

// The control thread ticks when a keep-alive expires, not at its next period: here the period
// is a minute and the keep-alive 200 ms (real clock), so only a wake-up planned from the policy's
// next decision (re-planned when the request finishes) suspends the model in time.
TEST_F(FleetManagerTest, TheControlThreadWakesWhenTheKeepAliveExpires) {
  FleetOptions o;
  o.clock = real_clock();
  o.tick_ns = 60 * kSecond;
  o.idle_policy = std::make_shared<FixedKeepAlivePolicy>(200'000'000);
  auto f = make(1, o);
  ASSERT_TRUE(f->start().is_ok());
  ASSERT_EQ(f->state("m0"), ModelState::kActive);
  run(*f, "m0");
  const auto t0 = std::chrono::steady_clock::now();
  while (f->state("m0") != ModelState::kSuspended &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);
}

TEST_F(FleetManagerTest, EachModelFollowsItsOwnIdlePolicyElseTheFleets) {
  FleetOptions o;
  o.load_on_start = false;
  o.clock = &clock_;
  o.idle_policy = std::make_shared<FixedKeepAlivePolicy>(300 * kSecond);  // m0 follows it
  std::vector<FleetModelSpec> specs = {spec("m0", path(0)), spec("m1", path(1)),
                                       spec("m2", path(2))};
  specs[1].idle_policy = std::make_shared<FixedKeepAlivePolicy>(30 * kSecond);
  specs[2].idle_policy = std::make_shared<FixedKeepAlivePolicy>(FixedKeepAlivePolicy::always_on());
  auto created = FleetManager::create(std::move(specs), o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  auto f = std::move(created).value();
  for (const char* n : {"m0", "m1", "m2"}) {
    ASSERT_TRUE(f->load(n).is_ok());
    run(*f, n);
  }
  EXPECT_EQ(f->status("m0")->idle_policy, "keep-alive");
  EXPECT_EQ(f->status("m2")->idle_policy, "always-on");
  clock_.advance_ns(31 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kActive);     // the fleet's 300 s
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);  // its own 30 s
  EXPECT_EQ(f->state("m2"), ModelState::kActive);
  clock_.advance_ns(300 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);
  clock_.advance_ns(100'000 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m2"), ModelState::kActive);     // always on, whatever the fleet's policy
}

TEST_F(FleetManagerTest, WithoutAFleetPolicyOnlyModelsWithTheirOwnAreSuspended) {
  FleetOptions o;
  o.load_on_start = false;
  o.clock = &clock_;
  std::vector<FleetModelSpec> specs = {spec("m0", path(0)), spec("m1", path(1))};
  specs[1].idle_policy = std::make_shared<FixedKeepAlivePolicy>(10 * kSecond);
  auto created = FleetManager::create(std::move(specs), o);
  ASSERT_TRUE(created.is_ok()) << created.status().to_string();
  auto f = std::move(created).value();
  ASSERT_TRUE(f->load("m0").is_ok());
  ASSERT_TRUE(f->load("m1").is_ok());
  EXPECT_EQ(f->status("m0")->idle_policy, "none");
  clock_.advance_ns(1000 * kSecond);
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);
}

TEST_F(FleetManagerTest, BudgetPressureSuspendsAnIdleModelToMakeRoom) {
  FleetOptions o;
  o.load_on_start = false;
  auto probe = make(1, o);
  const int64_t one = probe->status("m0")->active_bytes;
  probe.reset();
  o.active_budget_bytes = one + one / 2;  // room for one tiny model
  o.load_on_start = true;
  auto f = make(2, o);
  ASSERT_TRUE(f->start().is_ok());
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
  EXPECT_EQ(f->state("m1"), ModelState::kUnloaded);  // did not fit
  auto c = run(*f, "m1");
  EXPECT_EQ(c->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(f->state("m1"), ModelState::kActive);
  EXPECT_EQ(f->state("m0"), ModelState::kSuspended);
  EXPECT_LE(f->budget().used(), f->budget().capacity());
}

// Models without their own KV size share what the budget leaves after the weights, through the
// engine's sizing rule (engine::size_kv_pool), and serve with the pool that gives them.
TEST_F(FleetManagerTest, ModelsShareTheKvBudgetLeftAfterTheWeights) {
  FleetOptions o;
  o.load_on_start = false;
  auto probe = make(2, o);
  const ModelStatus p0 = *probe->status("m0");
  const ModelStatus p1 = *probe->status("m1");
  // Unbudgeted, a tiny model's 4 x 128 positions are far below its share of available memory.
  const int64_t full = p0.active_bytes - p0.weight_bytes;
  EXPECT_EQ(p1.active_bytes - p1.weight_bytes, full);
  probe.reset();
  o.active_budget_bytes = p0.weight_bytes + p1.weight_bytes + full;  // half a full pool each
  o.load_on_start = true;
  auto f = make(2, o);
  ASSERT_TRUE(f->start().is_ok());
  int64_t used = 0;
  for (const char* m : {"m0", "m1"}) {
    const ModelStatus s = *f->status(m);
    EXPECT_EQ(s.active_bytes - s.weight_bytes, full / 2) << m;
    EXPECT_EQ(s.state, ModelState::kActive) << m;
    used += s.active_bytes;
    EXPECT_EQ(run(*f, m)->finish.reason, engine::FinishReason::kLength) << m;
  }
  EXPECT_LE(used, o.active_budget_bytes);
}

TEST_F(FleetManagerTest, ModelThatCannotFitFailsItsRequestsInsteadOfHanging) {
  FleetOptions o;
  o.active_budget_bytes = 1024;  // nothing fits
  auto f = make(1, o);
  ASSERT_TRUE(f->start().is_ok());
  EXPECT_EQ(f->state("m0"), ModelState::kUnloaded);
  auto c = run(*f, "m0");
  EXPECT_EQ(c->finish.reason, engine::FinishReason::kError);
  EXPECT_EQ(c->finish.error.code(), ErrorCode::kUnavailable);
  EXPECT_NE(c->finish.error.message().find("budget"), std::string::npos);
}

TEST_F(FleetManagerTest, ConcurrentRequestsDuringAResumeAllComplete) {
  auto f = make(3);
  ASSERT_TRUE(f->start().is_ok());
  auto reference = run(*f, "m2");
  ASSERT_TRUE(f->suspend("m2").is_ok());
  constexpr int kClients = 12;
  std::vector<std::shared_ptr<Collector>> results(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.emplace_back([&, i] {
      auto c = std::make_shared<Collector>();
      auto id = f->submit(i % 3 == 0 ? "m0" : "m2", greedy(), Collector::sink(c));
      EXPECT_TRUE(id.is_ok());
      EXPECT_TRUE(c->wait());
      results[i] = c;
    });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < kClients; ++i) {
    ASSERT_TRUE(results[i]);
    EXPECT_EQ(results[i]->finish.reason, engine::FinishReason::kLength) << i;
    if (i % 3 != 0) {
      EXPECT_EQ(results[i]->tokens, reference->tokens) << i;
    }
  }
  EXPECT_EQ(f->status("m2")->resumes, 1);
  EXPECT_EQ(f->status("m2")->queued, 0);
}

// Memory-seconds, idle memory-seconds, cold starts and TTFT SLO attainment, on the fake clock
// (which stands still while a request runs, so the request's own time adds nothing).
TEST_F(FleetManagerTest, AccountsMemorySecondsColdStartsAndSlo) {
  FleetOptions o;
  o.load_on_start = false;
  auto f = make(1, o);  // no control thread: the test ticks
  ASSERT_TRUE(f->load("m0").is_ok());
  const double bytes = static_cast<double>(f->status("m0")->active_bytes);
  clock_.advance_ns(10 * kSecond);  // active and idle for 10 s
  run(*f, "m0");                    // served at once: not a cold start, within the SLO
  clock_.advance_ns(5 * kSecond);   // idle 5 s more
  ASSERT_TRUE(f->suspend("m0").is_ok());
  clock_.advance_ns(100 * kSecond);  // suspended: holds no active memory
  auto c = std::make_shared<Collector>();
  ASSERT_TRUE(f->submit("m0", greedy(), Collector::sink(c)).is_ok());  // a cold start
  clock_.advance_ns(3 * kSecond);  // the resume waits for the tick: misses a 1 s SLO
  f->tick();
  ASSERT_TRUE(c->wait());
  const ModelStatus st = *f->status("m0");
  EXPECT_EQ(st.cold_starts, 1);
  EXPECT_EQ(st.finished, 2);
  EXPECT_EQ(st.slo_met, 1);
  EXPECT_EQ(st.in_flight, 0);
  EXPECT_DOUBLE_EQ(st.ttft_slo_s, 1.0);
  EXPECT_NEAR(st.memory_seconds, 15.0 * bytes, 1e-6 * bytes);
  EXPECT_NEAR(st.idle_memory_seconds, 15.0 * bytes, 1e-6 * bytes);
}

// Models sharing one DeviceScheduler run on its pool and give the tokens they give alone.
TEST_F(FleetManagerTest, ModelsShareOneDevice) {
  auto alone = make(2);
  ASSERT_TRUE(alone->start().is_ok());
  auto want0 = run(*alone, "m0");
  auto want1 = run(*alone, "m1");
  alone.reset();

  FleetOptions o;
  engine::DeviceSchedulerOptions so;
  so.n_threads = 2;
  o.device = std::make_shared<engine::DeviceScheduler>(so);
  auto f = make(2, o);
  ASSERT_TRUE(f->start().is_ok());
  std::vector<std::thread> clients;
  std::vector<std::shared_ptr<Collector>> got(4);
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&, i] { got[i] = run(*f, name(i % 2)); });
  }
  for (auto& t : clients) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(got[i]->tokens, (i % 2 == 0 ? want0 : want1)->tokens) << i;
  }
  const auto st = o.device->stats();
  ASSERT_EQ(st.size(), 2u);
  EXPECT_EQ(st[0].name, "m0");
  EXPECT_GE(st[0].grants, 8);  // at least one iteration per token (the two may batch)
  EXPECT_GE(st[1].grants, 8);
  f.reset();
}

// Over the host budget, suspended models go to disk: the one least likely to be asked for soon
// (here the one never requested) first, until the rest fit.
TEST_F(FleetManagerTest, HostBudgetEvictsSuspendedModelsToDisk) {
  FleetOptions o;
  o.load_on_start = false;
  auto probe = make(1, o);
  const int64_t weights = probe->status("m0")->weight_bytes;
  probe.reset();
  o.host_budget_bytes = weights + weights / 2;  // room for one suspended model, not two
  auto f = make(3, o);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(f->load(name(i)).is_ok());
  for (int k = 0; k < 5; ++k) {  // m1 is used often, m0 and m2 never
    run(*f, "m1");
    clock_.advance_ns(2 * kSecond);
  }
  ASSERT_TRUE(f->suspend("m1").is_ok());
  f->tick();
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);  // alone within the budget
  ASSERT_TRUE(f->suspend("m0").is_ok());
  f->tick();
  EXPECT_EQ(f->state("m0"), ModelState::kEvicted);
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);
  ASSERT_TRUE(f->suspend("m2").is_ok());
  f->tick();
  EXPECT_EQ(f->state("m2"), ModelState::kEvicted);
  EXPECT_EQ(f->state("m1"), ModelState::kSuspended);
  auto again = std::make_shared<Collector>();  // an evicted model still serves: reloaded
  ASSERT_TRUE(f->submit("m0", greedy(), Collector::sink(again)).is_ok());
  f->tick();
  ASSERT_TRUE(again->wait());
  EXPECT_EQ(again->finish.reason, engine::FinishReason::kLength);
  EXPECT_EQ(f->state("m0"), ModelState::kActive);
}

}  // namespace
}  // namespace tessera::fleet
