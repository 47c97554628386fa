// The simulator: the live fleet and the simulator make the same lifecycle decisions on one
// scripted scenario (they run the same FleetController and policy objects); accounting of
// accelerator-hours and SLO attainment on hand-checkable workloads; determinism; pooled nodes
// keep within their memory.
#include "tessera/sim/simulator.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>

#include "tessera/fleet/fleet_manager.h"
#include "tessera/fleet/keep_alive_policy.h"
#include "tessera/model/synth.h"
#include "test_util.h"

namespace tessera::sim {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

// A workload from a fixed list of requests.
class ScriptedWorkload final : public Workload {
 public:
  ScriptedWorkload(int n_models, std::vector<SimRequest> requests, double duration_s)
      : requests_(std::move(requests)), duration_s_(duration_s) {
    for (int i = 0; i < n_models; ++i) {
      WorkloadModel m;
      m.name = fmt::format("m{}", i);
      m.peak_rps = 1.0;
      models_.push_back(m);
    }
  }
  const std::vector<WorkloadModel>& models() const override { return models_; }
  bool next(SimRequest& out) override {
    if (i_ >= requests_.size()) return false;
    out = requests_[i_++];
    return true;
  }
  double duration_s() const override { return duration_s_; }
  std::string describe() const override { return "scripted"; }

 private:
  std::vector<WorkloadModel> models_;
  std::vector<SimRequest> requests_;
  size_t i_ = 0;
  double duration_s_;
};

// A cost model whose steps take `step_s` and whose moves take the given times.
class FixedCost final : public CostModel {
 public:
  FixedCost(double step_s, double load_s, double resume_s, int64_t weight_bytes = 1 << 20)
      : step_(step_s), load_(load_s), resume_(resume_s), weights_(weight_bytes) {}
  std::string describe() const override { return "fixed"; }
  double step_s(const StepWork&) const override { return step_; }
  int64_t weight_bytes() const override { return weights_; }
  int64_t kv_bytes_per_token() const override { return 1024; }
  int64_t kv_capacity_tokens() const override { return 1 << 16; }
  double load_s() const override { return load_; }
  double resume_s() const override { return resume_; }
  double suspend_s() const override { return 0.0; }
  int32_t accelerators() const override { return 1; }

 private:
  double step_, load_, resume_;
  int64_t weights_;
};

std::vector<SimModel> models_with(int n, std::shared_ptr<const CostModel> cost, int replicas = 1,
                                  int tp = 1) {
  std::vector<SimModel> out;
  for (int i = 0; i < n; ++i) {
    SimModel m;
    m.name = fmt::format("m{}", i);
    m.deployment.config.tp = tp;
    m.deployment.config.max_running = 4;
    m.deployment.config.cost = cost;
    m.deployment.replicas = replicas;
    out.push_back(m);
  }
  return out;
}

AcceleratorSpec test_accelerator() {
  AcceleratorSpec a = *find_accelerator("h100");
  return a;
}

SimRequest req(double t_s, int model, int in = 8, int out = 4) {
  SimRequest r;
  r.t_ns = static_cast<int64_t>(t_s * 1e9);
  r.model = model;
  r.input_tokens = in;
  r.output_tokens = out;
  return r;
}

// The scenario: two models under a 60 s keep-alive, requests at these times (s).
const std::vector<std::pair<double, int>> kScenario = {
    {0, 0}, {30, 1}, {100, 0}, {130, 0}, {200, 1}, {205, 1}, {400, 0}, {420, 1}};

std::vector<std::string> live_decisions() {
  testing::TempDir dir;
  std::vector<fleet::FleetModelSpec> specs;
  for (int i = 0; i < 2; ++i) {
    model::SynthOptions o;
    o.shape = *model::find_synth_shape("tiny");
    o.dtype = kernels::DType::kQ8_0;
    o.seed = 7 + i;
    const std::string path = dir.file(fmt::format("m{}.gguf", i));
    EXPECT_TRUE(model::write_synthetic_model(o, path).is_ok());
    fleet::FleetModelSpec s;
    s.name = fmt::format("m{}", i);
    s.path = path;
    s.engine.n_threads = 1;
    s.engine.ctx_size = 64;
    s.engine.max_running = 4;
    specs.push_back(s);
  }
  FakeClock clock(0);
  fleet::FleetOptions fo;
  fo.clock = &clock;
  fo.load_on_start = false;
  fo.idle_policy = std::make_shared<fleet::FixedKeepAlivePolicy>(60 * kSecond);
  auto f = std::move(fleet::FleetManager::create(std::move(specs), fo)).value();
  std::vector<std::string> out;
  std::mutex mu;
  f->add_listener([&](const fleet::TransitionEvent& ev) {
    std::lock_guard<std::mutex> lock(mu);
    out.push_back(fmt::format("{} {}->{}", ev.model, fleet::model_state_name(ev.from),
                              fleet::model_state_name(ev.to)));
  });
  EXPECT_TRUE(f->load("m0").is_ok());
  EXPECT_TRUE(f->load("m1").is_ok());
  size_t next = 0;
  for (int64_t t = 0; t <= 600; ++t) {  // the control thread's ticks, one a second
    clock.set_ns(t * kSecond);
    f->tick();
    while (next < kScenario.size() && kScenario[next].first <= static_cast<double>(t)) {
      struct Done {
        std::mutex mu;
        std::condition_variable cv;
        bool done = false;
      };
      auto d = std::make_shared<Done>();
      engine::Request r;
      r.prompt = {1, 5, 9, 13, 2, 3, 4, 6};
      r.sampling.temperature = 0.0f;
      r.max_tokens = 4;
      r.ignore_eos = true;
      auto id = f->submit(fmt::format("m{}", kScenario[next].second), r, [d](engine::Event&& ev) {
        if (!ev.is_finish()) return;
        std::lock_guard<std::mutex> lock(d->mu);
        d->done = true;
        d->cv.notify_all();
      });
      EXPECT_TRUE(id.is_ok());
      f->tick();  // brings a suspended model back (the control thread would)
      std::unique_lock<std::mutex> lock(d->mu);
      EXPECT_TRUE(d->cv.wait_for(lock, std::chrono::seconds(30), [&] { return d->done; }));
      lock.unlock();
      f->tick();  // the finish is seen
      ++next;
    }
  }
  f->stop();
  return out;
}

std::vector<std::string> sim_decisions() {
  std::vector<SimRequest> rs;
  for (const auto& [t, m] : kScenario) rs.push_back(req(t, m));
  ScriptedWorkload w(2, rs, 600);
  SimOptions o;
  o.policy = "keep-alive";
  o.keep_alive_s = 60;
  o.warmup_s = 0;
  o.record_transitions = true;
  auto cost = std::make_shared<FixedCost>(1e-9, 0.0, 0.0);
  auto r = run_simulation(w, models_with(2, cost), test_accelerator(), o);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  std::vector<std::string> out;
  for (const SimTransition& t : r->transitions) {
    std::string name = t.slot.substr(0, t.slot.find('#'));
    out.push_back(fmt::format("{} {}->{}", name, t.from, t.to));
  }
  return out;
}

// The decisions: transitions that start a move, in order. (When moves complete depends on the
// host: the live fleet carries out one move at a time, the simulator's moves overlap.)
std::vector<std::string> decisions(const std::vector<std::string>& transitions) {
  std::vector<std::string> out;
  for (const auto& t : transitions) {
    for (const char* to : {"->loading", "->suspending", "->resuming", "->evicted", "->failed"}) {
      if (t.size() >= std::strlen(to) && t.compare(t.size() - std::strlen(to), std::string::npos, to) == 0) {
        out.push_back(t);
      }
    }
  }
  return out;
}

TEST(SimulatorTest, LiveFleetAndSimulatorMakeTheSameLifecycleDecisions) {
  const std::vector<std::string> live = live_decisions();
  const std::vector<std::string> simulated = sim_decisions();
  EXPECT_EQ(decisions(live), decisions(simulated));
  EXPECT_EQ(live.size(), simulated.size());
  // It is not a trivial sequence: both models were suspended and resumed.
  int resumes = 0;
  for (const auto& d : live) resumes += d.find("suspended->resuming") != std::string::npos;
  EXPECT_GE(resumes, 3) << ::testing::PrintToString(live);
}

TEST(SimulatorTest, DedicatedHoldsEveryReplicaAllDay) {
  ScriptedWorkload w(3, {req(10, 0), req(20, 1), req(30, 2)}, 3600);
  SimOptions o;
  o.policy = "dedicated";
  auto cost = std::make_shared<FixedCost>(0.01, 5.0, 1.0);
  auto r = run_simulation(w, models_with(3, cost, /*replicas=*/2, /*tp=*/2), test_accelerator(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->dedicated_accelerators, 3 * 2 * 2);
  EXPECT_NEAR(r->accelerator_hours, 12.0, 1e-6);  // 12 accelerators x 1 h
  EXPECT_NEAR(r->dedicated_accelerator_hours, 12.0, 1e-9);
  EXPECT_EQ(r->requests, 3);
  EXPECT_EQ(r->served, 3);
  EXPECT_EQ(r->slo_met, 3);
  EXPECT_EQ(r->cold_starts, 0);
}

// One model, one replica, keep-alive 100 s, requests at 1000 s and 5000 s of a 10,000 s day: it
// holds its accelerator for the warm start (suspended at 100 s: idle since its load), then from
// each cold start for one keep-alive; each cold start waits for a resume (3 s) and so misses a
// 2 s TTFT SLO.
TEST(SimulatorTest, KeepAliveHoldsTheAcceleratorOnlyAroundRequests) {
  ScriptedWorkload w(1, {req(1000, 0), req(5000, 0)}, 10000);
  SimOptions o;
  o.policy = "keep-alive";
  o.keep_alive_s = 100;
  o.warmup_s = 0;
  auto cost = std::make_shared<FixedCost>(0.001, 10.0, 3.0);
  auto r = run_simulation(w, models_with(1, cost), test_accelerator(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // Held: load 10 s + keep-alive 100 s; then twice resume 3 s + service ~0 + keep-alive 100 s.
  const double held_s = 110.0 + 2 * (3.0 + 100.0);
  EXPECT_NEAR(r->accelerator_hours * 3600.0, held_s, 0.1);
  EXPECT_EQ(r->cold_starts, 2);
  EXPECT_EQ(r->resumes, 2);
  EXPECT_EQ(r->served, 2);
  EXPECT_EQ(r->slo_met, 0);
  EXPECT_NEAR(r->ttft_p50_s, 3.0, 0.1);
}

TEST(SimulatorTest, ScalingBringsUpReplicasUnderLoadAndReleasesThemAfter) {
  // 40 requests at once for a model of 4 replicas with a batch limit of 4: all four come up.
  std::vector<SimRequest> rs;
  for (int i = 0; i < 40; ++i) rs.push_back(req(100.0, 0, 64, 64));
  ScriptedWorkload w(1, rs, 2000);
  SimOptions o;
  o.policy = "scaling";
  o.keep_alive_s = 60;
  o.warmup_s = 0;
  auto cost = std::make_shared<FixedCost>(0.01, 1.0, 0.5);
  auto r = run_simulation(w, models_with(1, cost, /*replicas=*/4), test_accelerator(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->served, 40);
  EXPECT_EQ(r->loads, 4);  // the warm replica, then three more on demand
  EXPECT_LT(r->accelerator_hours, 4 * 2000.0 / 3600.0 * 0.25);
  EXPECT_GT(r->accelerator_hours, 0.0);
}

// The cluster router's SLO rule, run by the simulator (fleet/replica_routing.h): while a model
// misses its TTFT SLO, a replica takes half as many requests before another comes up.
TEST(SimulatorTest, SloWindowHalvesTheReplicaCapAsTheClusterRouterDoes) {
  auto loads = [](int32_t window) -> int64_t {
    std::vector<SimRequest> rs;
    rs.push_back(req(50.0, 0, 64, 8));  // its answer misses the 1 ms TTFT SLO
    for (int i = 0; i < 4; ++i) rs.push_back(req(100.0, 0, 64, 64));
    ScriptedWorkload w(1, rs, 400);
    SimOptions o;
    o.policy = "scaling";
    o.keep_alive_s = 60;
    o.warmup_s = 0;
    o.slo.ttft_ns = 1'000'000;
    o.slo_window = window;
    auto models = models_with(1, std::make_shared<FixedCost>(0.01, 1.0, 0.5), /*replicas=*/4);
    models[0].deployment.config.target_in_flight = 4;
    auto r = run_simulation(w, models, test_accelerator(), o);
    EXPECT_TRUE(r.is_ok()) << r.status().to_string();
    return r.is_ok() ? r->loads : -1;
  };
  const int64_t plain = loads(0), capped = loads(8);
  EXPECT_EQ(plain, 1);   // cap 4: the warm replica takes all four
  EXPECT_EQ(capped, 2);  // cap halved to 2: a second replica comes up
}

TEST(SimulatorTest, PooledNodesStayWithinTheirMemory) {
  // Ten models of 30 GB on nodes of two 80 GB accelerators: at most five fit a node's memory.
  std::vector<SimRequest> rs;
  for (int i = 0; i < 200; ++i) rs.push_back(req(10.0 + i * 5.0, i % 10));
  ScriptedWorkload w(10, rs, 1200);
  SimOptions o;
  o.policy = "pooled";
  o.pool_accelerators = 2;
  o.pool_max_models = 10;
  o.pool_overcommit = 10.0;  // all ten on one node
  o.keep_alive_s = 30;
  o.warmup_s = 0;
  o.record_transitions = true;
  auto cost = std::make_shared<FixedCost>(0.01, 2.0, 0.5, int64_t{30} << 30);
  auto models = models_with(10, cost);
  auto r = run_simulation(w, models, test_accelerator(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->served + r->refused, 200);
  EXPECT_GT(r->served, 190);
  EXPECT_LE(r->accelerator_hours, 2.0 * 1200.0 / 3600.0 + 1e-9);
  // Never more than the memory allows Active at once on the node.
  int active = 0, most = 0;
  for (const SimTransition& t : r->transitions) {
    if (t.to == "loading" || t.to == "resuming") ++active;
    if (t.to == "suspended" || t.to == "failed") --active;
    most = std::max(most, active);
  }
  const int64_t per = cost->weight_bytes() + cost->kv_capacity_tokens() * cost->kv_bytes_per_token();
  EXPECT_LE(most, static_cast<int>(2 * static_cast<int64_t>(test_accelerator().memory_bytes) / per));
}

// Three always-on models on one shared device, a request each at the same instant (8 prompt
// tokens, 4 generated; every step 10 ms). With the live arbitration the device runs one
// iteration at a time, round robin by least service (the one that released never goes again
// while another waits): first tokens at 10, 20 and 30 ms, 12 iterations of 10 ms on the device.
// With the processor-sharing stretch the replicas' steps stretch by the number busy (the first,
// begun alone, ends at 10 ms, the second's at 20, the third's at 30) and each replica counts its
// stretched time as busy: 0.33 s of replica time for the same 0.12 s of device time.
TEST(SimulatorTest, SharedDeviceWithTheLiveArbitrationRunsOneIterationAtATime) {
  for (bool arbitration : {true, false}) {
    ScriptedWorkload w(3, {req(10, 0), req(10, 1), req(10, 2)}, 60);
    SimOptions o;
    o.policy = "dedicated";
    o.shared_device = true;
    o.device_arbitration = arbitration;
    o.record_requests = true;
    auto cost = std::make_shared<FixedCost>(0.01, 1.0, 1.0);
    auto r = run_simulation(w, models_with(3, cost), test_accelerator(), o);
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_EQ(r->served, 3);
    ASSERT_EQ(r->request_log.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      const double want = 0.01 * (i + 1);
      EXPECT_NEAR(r->request_log[static_cast<size_t>(i)].ttft_s, want, 1e-6) << arbitration << " " << i;
    }
    EXPECT_NEAR(r->device_busy_s, 0.12, 1e-6) << arbitration;
    EXPECT_NEAR(r->busy_accelerator_hours * 3600.0, arbitration ? 0.12 : 0.33, 1e-6) << arbitration;
  }
}

// A hand-off (--switch-s) and measured variability (--step-multipliers): an iteration granted to
// another replica than the one that ran the device's previous iteration takes the switch cost
// more, and each iteration's time is then multiplied by a draw from the pool of its kind - here
// 1 when the same replica ran before it and 2 after a switch. Model 0 runs alone for three
// iterations, then model 1 arrives: they alternate while both have work (m1, m0, m1), and model 1
// finishes alone. The iteration log (--iterations-out) shows each one's ask, grant, release and
// rows.
TEST(SimulatorTest, HandOffsCostTheSwitchAndDrawFromTheirOwnPool) {
  ScriptedWorkload w(2, {req(10, 0), req(10.025, 1)}, 60);
  SimOptions o;
  o.policy = "dedicated";
  o.shared_device = true;
  o.device_arbitration = true;
  o.record_iterations = true;
  o.device_switch_ns = 5'000'000;
  for (int prompt = 0; prompt < 2; ++prompt) {
    o.step_multipliers[prompt][0] = {1.0};
    o.step_multipliers[prompt][1] = {2.0};
  }
  auto cost = std::make_shared<FixedCost>(0.01, 1.0, 1.0);
  auto r = run_simulation(w, models_with(2, cost), test_accelerator(), o);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->served, 2);
  ASSERT_EQ(r->iteration_log.size(), 8u);  // 2 requests x 4 tokens, one row per iteration
  double busy = 0.0;
  int switches = 0, same = 0;
  for (size_t i = 0; i < r->iteration_log.size(); ++i) {
    const SimIterationRecord& it = r->iteration_log[i];
    const bool handoff = i > 0 && r->iteration_log[i - 1].model != it.model;
    const double length = it.released_s - it.granted_s;
    EXPECT_NEAR(length, handoff ? (0.01 + 0.005) * 2.0 : 0.01, 1e-9) << i;
    EXPECT_EQ(it.prefill_rows + it.decode_rows, 1 + (it.prefill_rows > 0 ? 7 : 0));
    busy += length;
    (handoff ? switches : same) += 1;
  }
  EXPECT_EQ(switches, 3);  // m0 m0 m0 | m1 m0 m1 | m1 m1
  EXPECT_EQ(same, 5);      // the first (the device's first iteration: no hand-off) included
  EXPECT_NEAR(r->device_busy_s, busy, 1e-9);
  // Model 1 waited for model 0's third iteration (to 10.03 s), then ran its prompt after a switch.
  EXPECT_NEAR(r->iteration_log[3].granted_s, 10.03, 1e-9);
}

TEST(SimulatorTest, SameInputsSameResult) {
  auto once = [] {
    std::vector<SimRequest> rs;
    for (int i = 0; i < 300; ++i) rs.push_back(req(i * 7.3, i % 5, 100 + i, 20 + i % 7));
    ScriptedWorkload w(5, rs, 2400);
    SimOptions o;
    o.policy = "adaptive";
    o.keep_alive_s = 50;
    auto cost = std::make_shared<FixedCost>(0.02, 4.0, 1.0);
    return *run_simulation(w, models_with(5, cost, 2), test_accelerator(), o);
  };
  const SimResult a = once(), b = once();
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.slo_met, b.slo_met);
  EXPECT_DOUBLE_EQ(a.accelerator_hours, b.accelerator_hours);
  EXPECT_DOUBLE_EQ(a.ttft_p99_s, b.ttft_p99_s);
}

TEST(SimulatorTest, RejectsUnknownPolicyAndMismatchedModels) {
  ScriptedWorkload w(2, {}, 100);
  SimOptions o;
  o.policy = "magic";
  auto cost = std::make_shared<FixedCost>(0.01, 1, 1);
  EXPECT_FALSE(run_simulation(w, models_with(2, cost), test_accelerator(), o).is_ok());
  o.policy = "dedicated";
  EXPECT_FALSE(run_simulation(w, models_with(3, cost), test_accelerator(), o).is_ok());
}

}  // namespace
}  // namespace tessera::sim
