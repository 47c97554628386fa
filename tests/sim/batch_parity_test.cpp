// The simulator's IterationReplica against the engine's own Scheduler (with a KvManager over a
// tiny model config, driven as the engine drives it): the same arrivals, step by step, must give
// the same admissions (which request joins at which step), the same rows per request (prefill
// chunk sizes and decode rows) and the same first tokens and finishes. The KV pool is ample on
// both sides: the engine claims blocks as tokens come and may preempt, the simulator claims a
// request's whole lifetime and never does (replica_admission.h), so only the batching rule is
// compared. Also ReplicaSim against the engine where its simplification (one prefill chunk per
// iteration) does not matter: one request at a time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "tessera/engine/kv_manager.h"
#include "tessera/engine/scheduler.h"
#include "tessera/sim/iteration_replica.h"
#include "tessera/sim/replica_sim.h"

namespace tessera::sim {
namespace batch_parity_test {

// Every step takes 1 ms, whatever it runs.
class FlatCost final : public CostModel {
 public:
  std::string describe() const override { return "flat test cost"; }
  double step_s(const StepWork& w) const override { return w.tokens() == 0 ? 0.0 : 1e-3; }
  int64_t weight_bytes() const override { return 1; }
  int64_t kv_bytes_per_token() const override { return 1; }
  int64_t kv_capacity_tokens() const override { return 1 << 30; }
  double load_s() const override { return 0; }
  double resume_s() const override { return 0; }
  double suspend_s() const override { return 0; }
  int32_t accelerators() const override { return 1; }
};

struct Arrival {
  int64_t step;  // joins before this step is planned
  int32_t input, output;
};

// (request id, rows this step) for each running request, in admission order.
using Rows = std::vector<std::pair<uint64_t, int64_t>>;

struct Step {
  std::vector<uint64_t> admitted;
  Rows rows;
  std::vector<uint64_t> first_tokens, finished;
  bool operator==(const Step&) const = default;
};

model::ModelConfig tiny_config() {
  model::ModelConfig c;
  c.architecture = "llama";
  c.n_vocab = 512;
  c.dim = 8;
  c.n_layers = 1;
  c.n_heads = 1;
  c.n_kv_heads = 1;
  c.head_dim = 8;
  c.ffn_dim = 16;
  c.context_length = 4096;
  return c;
}

// The engine: its Scheduler and KvManager, each step completed as Engine does it (rows computed,
// a token appended where the step samples, verified blocks published, finished ones released).
std::vector<Step> run_engine(int32_t max_running, int32_t max_batch_tokens,
                             const std::vector<Arrival>& arrivals, int64_t n_steps) {
  engine::EngineOptions opt;
  opt.max_running = max_running;
  opt.max_batch_tokens = max_batch_tokens;
  opt.block_size = 16;
  opt.ctx_size = 1024;
  const engine::KvPoolSize size = engine::size_kv_pool(tiny_config(), opt).value();
  auto kv = engine::KvManager::create(tiny_config(), opt, size).value();
  engine::SchedulerOptions so;
  so.max_running = max_running;
  so.max_batch_tokens = max_batch_tokens;
  so.ctx_size = opt.ctx_size;
  engine::Scheduler sched(so, kv);
  std::vector<Step> steps;
  for (int64_t step = 0; step < n_steps; ++step) {
    for (size_t i = 0; i < arrivals.size(); ++i) {
      if (arrivals[i].step != step) continue;
      engine::Request r;
      // Prompts differ from their first token, so no prefix is ever cached.
      for (int32_t j = 0; j < arrivals[i].input; ++j) {
        r.prompt.push_back(10 + static_cast<int32_t>((i * 131 + static_cast<size_t>(j)) % 400));
      }
      r.max_tokens = arrivals[i].output;
      sched.enqueue(std::make_unique<engine::Sequence>(i, std::move(r), nullptr, 0));
    }
    const engine::StepPlan plan = sched.schedule();
    EXPECT_TRUE(plan.preempted.empty()) << "step " << step;
    Step s;
    for (const engine::Sequence* q : plan.admitted) s.admitted.push_back(q->id);
    for (const auto& q : sched.running()) {
      int64_t rows = 0;
      for (const engine::ScheduledSeq& e : plan.seqs) rows += e.seq == q.get() ? e.n_rows : 0;
      s.rows.emplace_back(q->id, rows);
    }
    for (const engine::ScheduledSeq& e : plan.seqs) {
      engine::Sequence& q = *e.seq;
      q.n_computed += e.n_rows;
      if (!e.samples) continue;
      if (q.n_generated() == 0) s.first_tokens.push_back(q.id);
      q.tokens.push_back(300);
      kv.publish_verified(q);
      kv.rollback(q);
    }
    std::vector<engine::Sequence*> done;
    for (const auto& q : sched.running()) {
      if (q->n_generated() >= q->request.max_tokens) {
        kv.release(*q);
        done.push_back(q.get());
        s.finished.push_back(q->id);
      }
    }
    sched.retire(done);
    steps.push_back(std::move(s));
  }
  EXPECT_TRUE(sched.running().empty() && sched.waiting().empty()) << "engine not drained";
  return steps;
}

// The simulator's replica, one plan() and finish() per step.
std::vector<Step> run_replica(int32_t max_running, int32_t max_batch_tokens,
                              const std::vector<Arrival>& arrivals, int64_t n_steps) {
  FlatCost cost;
  ReplicaLimits lim;
  lim.max_running = max_running;
  lim.max_batch_tokens = max_batch_tokens;
  lim.kv_capacity_tokens = int64_t{1} << 40;
  IterationReplica rep(cost, lim, 1'000'000'000, 100'000'000);
  std::vector<Step> steps;
  std::vector<uint64_t> seen;
  for (int64_t step = 0; step < n_steps; ++step) {
    const int64_t now = step * 1'000'000;
    for (size_t i = 0; i < arrivals.size(); ++i) {
      if (arrivals[i].step == step) rep.add(i, now, arrivals[i].input, arrivals[i].output);
    }
    Step s;
    if (rep.has_work()) {
      rep.plan();
      for (const IterationReplica::BatchEntry& e : rep.batch()) {
        if (std::find(seen.begin(), seen.end(), e.id) == seen.end()) {
          seen.push_back(e.id);
          s.admitted.push_back(e.id);
        }
        s.rows.emplace_back(e.id, e.rows);
      }
      std::vector<ReplicaEvent> ev;
      rep.finish(now + 1'000'000, ev);
      for (const ReplicaEvent& e : ev) {
        (e.kind == ReplicaEvent::kFirstToken ? s.first_tokens : s.finished).push_back(e.id);
      }
    }
    steps.push_back(std::move(s));
  }
  EXPECT_TRUE(rep.idle()) << "replica not drained";
  return steps;
}

// Bursty arrivals over the first steps, prompts 1 to ~300 tokens, outputs 1 to ~40.
std::vector<Arrival> random_arrivals(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<> log_input(0, 8.2), log_output(0, 5.3);
  std::vector<Arrival> out;
  int64_t step = 0;
  for (int i = 0; i < n; ++i) {
    if (rng() % 3 == 0) step += static_cast<int64_t>(rng() % 6);  // others arrive together
    out.push_back({step, static_cast<int32_t>(std::exp2(log_input(rng))),
                   static_cast<int32_t>(std::exp2(log_output(rng)))});
  }
  return out;
}

void expect_same_steps(int32_t max_running, int32_t max_batch_tokens,
                       const std::vector<Arrival>& arrivals, int64_t n_steps) {
  const std::vector<Step> e = run_engine(max_running, max_batch_tokens, arrivals, n_steps);
  const std::vector<Step> r = run_replica(max_running, max_batch_tokens, arrivals, n_steps);
  ASSERT_EQ(e.size(), r.size());
  // Events of one step happen at one instant: compared as sets (the engine lists them in its
  // plan's order, decode rows first; the replica in admission order).
  const auto sorted = [](std::vector<uint64_t> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  for (size_t k = 0; k < e.size(); ++k) {
    ASSERT_EQ(e[k].admitted, r[k].admitted) << "admissions at step " << k;
    ASSERT_EQ(e[k].rows, r[k].rows) << "rows at step " << k;
    ASSERT_EQ(sorted(e[k].first_tokens), sorted(r[k].first_tokens)) << "first tokens at step " << k;
    ASSERT_EQ(sorted(e[k].finished), sorted(r[k].finished)) << "finishes at step " << k;
  }
}

TEST(BatchParity, ChunksAcrossPromptsByHand) {
  // Budget 100: 0 takes 100 of its 150, 1 waits; then 0's last 50 and 50 of 1's 120; then 0's
  // decode row and 1's last 70 (with 2, arrived at step 1, getting the 29 rows left); ...
  const std::vector<Arrival> arrivals = {{0, 150, 3}, {0, 120, 2}, {1, 40, 1}, {1, 5, 4}};
  const std::vector<Step> e = run_engine(3, 100, arrivals, 12);
  ASSERT_EQ(e[0].admitted, (std::vector<uint64_t>{0, 1}));
  ASSERT_EQ(e[0].rows, (Rows{{0, 100}, {1, 0}}));
  ASSERT_EQ(e[1].admitted, (std::vector<uint64_t>{2}));  // 3 waits: max_running 3
  ASSERT_EQ(e[1].rows, (Rows{{0, 50}, {1, 50}, {2, 0}}));
  ASSERT_EQ(e[2].rows, (Rows{{0, 1}, {1, 70}, {2, 29}}));
  expect_same_steps(3, 100, arrivals, 12);
}

TEST(BatchParity, RandomArrivalsStepByStep) {
  struct Limits {
    int32_t max_running, max_batch_tokens;
  };
  for (const Limits& l : {Limits{4, 64}, Limits{8, 512}, Limits{32, 100}, Limits{1, 2048},
                          Limits{16, 8},  // the token budget caps the running set at 8
                          Limits{3, 1}}) {
    for (uint64_t seed : {1, 2, 3}) {
      SCOPED_TRACE(testing::Message() << "max_running " << l.max_running << " budget "
                                      << l.max_batch_tokens << " seed " << seed);
      const auto arrivals = random_arrivals(seed, 40);
      int64_t work = 0;
      for (const Arrival& a : arrivals) work += a.input + a.output;
      expect_same_steps(l.max_running, l.max_batch_tokens, arrivals,
                        arrivals.back().step + work + 1);
    }
  }
}

// ReplicaSim runs one prefill chunk per iteration (the engine fills the rest of the budget
// with the next prompts); one request at a time the two are the same rule, and with a flat 1 ms
// iteration ReplicaSim's events fall at the end of the engine's steps: its running count after
// each arrival, every first token and every finish.
TEST(BatchParity, ReplicaSimMatchesTheEngineOneRequestAtATime) {
  FlatCost cost;
  for (const int32_t budget : {1, 16, 64, 2048}) {
    SCOPED_TRACE(testing::Message() << "budget " << budget);
    const auto arrivals = random_arrivals(7, 12);
    int64_t work = 0;
    for (const Arrival& a : arrivals) work += a.input + a.output;
    const int64_t n_steps = arrivals.back().step + work + 1;
    const std::vector<Step> e = run_engine(1, budget, arrivals, n_steps);
    ReplicaSim sim(cost, {1, budget, int64_t{1} << 40});
    std::vector<ReplicaEvent> ev;
    for (int64_t step = 0; step <= arrivals.back().step; ++step) {
      const int64_t now = step * 1'000'000;
      sim.advance(now, ev);
      for (size_t i = 0; i < arrivals.size(); ++i) {
        if (arrivals[i].step == step) sim.add(i, now, arrivals[i].input, arrivals[i].output);
      }
      EXPECT_EQ(sim.running(), static_cast<int32_t>(e[static_cast<size_t>(step)].rows.size()))
          << "step " << step;
    }
    sim.advance(ReplicaSim::kNever, ev);
    std::vector<ReplicaEvent> want;
    for (size_t k = 0; k < e.size(); ++k) {
      const int64_t t = static_cast<int64_t>(k + 1) * 1'000'000;
      for (uint64_t id : e[k].first_tokens) want.push_back({id, ReplicaEvent::kFirstToken, t});
      for (uint64_t id : e[k].finished) want.push_back({id, ReplicaEvent::kFinish, t});
    }
    ASSERT_EQ(ev.size(), want.size());
    for (size_t k = 0; k < ev.size(); ++k) {
      EXPECT_EQ(ev[k].id, want[k].id) << k;
      EXPECT_EQ(ev[k].kind, want[k].kind) << k;
      EXPECT_EQ(ev[k].t_ns, want[k].t_ns) << k;
    }
  }
}

}  // namespace batch_parity_test
}  // namespace tessera::sim
