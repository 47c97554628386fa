// ReplicaSim against a plain reference written here: one loop turn per engine iteration with the
// same rules (replica_sim.h), on random request mixes and limits. With a cost that ignores
// context the two must agree to the nanosecond; with a roofline cost (context changes every
// iteration, ReplicaSim takes a segment's middle) within a small tolerance. Also hand-worked
// single requests, the state accessors, and the speed that makes it usable in a fleet simulator.
#include "tessera/sim/replica_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <random>

namespace tessera::sim {
namespace {

constexpr int64_t kMs = 1'000'000;

// Step time affine in rows, blind to context, with awkward constants so rounding to whole
// nanoseconds is exercised.
class ContextFreeCost final : public CostModel {
 public:
  std::string describe() const override { return "context-free test cost"; }
  double step_s(const StepWork& w) const override {
    if (w.tokens() == 0) return 0.0;
    return 0.0123456789 + 1.7e-5 * w.prefill_tokens + 3.1e-4 * w.decode_rows;
  }
  int64_t weight_bytes() const override { return 1; }
  int64_t kv_bytes_per_token() const override { return 1; }
  int64_t kv_capacity_tokens() const override { return 1 << 30; }
  double load_s() const override { return 0; }
  double resume_s() const override { return 0; }
  double suspend_s() const override { return 0; }
  int32_t accelerators() const override { return 1; }
};

int64_t step_ns(const CostModel& c, StepWork w) {
  return std::max<int64_t>(1, std::llround(c.step_s(w) * 1e9));
}

struct Req {
  uint64_t id;
  int64_t arrival_ns;
  int32_t input, output, cached;
};

struct Times {
  int64_t first = -1;
  int64_t finish = -1;
  bool operator==(const Times&) const = default;
};

// The reference: iteration by iteration, the rules of replica_sim.h written the obvious way.
std::map<uint64_t, Times> reference(const CostModel& cost, const ReplicaLimits& lim,
                                    const std::vector<Req>& reqs, int64_t* longest_step = nullptr) {
  struct Run {
    const Req* r;
    int64_t claim, position;
    int32_t prefill_left, generated;
  };
  std::map<uint64_t, Times> out;
  std::deque<const Req*> waiting;
  std::vector<Run> running;  // admission order
  int64_t kv = 0, t = 0;
  size_t next = 0;
  while (true) {
    if (running.empty() && waiting.empty()) {
      if (next == reqs.size()) break;
      t = std::max(t, reqs[next].arrival_ns);
    }
    while (next < reqs.size() && reqs[next].arrival_ns <= t) waiting.push_back(&reqs[next++]);
    while (!waiting.empty() && static_cast<int32_t>(running.size()) < lim.max_running) {
      const Req* r = waiting.front();
      const int64_t claim = std::min<int64_t>(r->input + r->output, lim.kv_capacity_tokens);
      if (kv + claim > lim.kv_capacity_tokens) break;
      waiting.pop_front();
      kv += claim;
      const int32_t cached = std::min(r->cached, r->input - 1);
      running.push_back({r, claim, cached, r->input - cached, 0});
    }
    StepWork w;
    Run* prefill = nullptr;
    for (Run& x : running) {
      if (x.prefill_left == 0) {
        ++w.decode_rows;
        w.context_tokens += x.r->input + x.generated;
        w.kv_read_tokens += x.r->input + x.generated;
      } else if (prefill == nullptr) {
        prefill = &x;
      }
    }
    const int32_t budget = lim.max_batch_tokens - w.decode_rows;
    int32_t chunk = 0;
    if (prefill != nullptr && budget > 0) {
      chunk = std::min(prefill->prefill_left, budget);
      const int64_t s = prefill->position, c = chunk;
      w.prefill_tokens = chunk;
      w.context_tokens += c * s + c * (c + 1) / 2;
      w.kv_read_tokens += s + c;
    }
    const int64_t dt = step_ns(cost, w);
    if (longest_step != nullptr) *longest_step = std::max(*longest_step, dt);
    t += dt;
    for (Run& x : running) {
      if (x.prefill_left == 0) {
        if (++x.generated == x.r->output) out[x.r->id].finish = t;
      } else if (&x == prefill && chunk > 0) {
        x.prefill_left -= chunk;
        x.position += chunk;
        if (x.prefill_left == 0) {
          out[x.r->id].first = t;
          x.generated = 1;
          if (x.r->output == 1) out[x.r->id].finish = t;
        }
      }
    }
    for (size_t i = 0; i < running.size();) {
      if (running[i].generated == running[i].r->output) {
        kv -= running[i].claim;
        running.erase(running.begin() + static_cast<ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
  }
  return out;
}

enum class Driver {
  kAdvanceThenAdd,  // advance(arrival) before each add
  kEventByEvent,    // advance to each next_event_ns() (and stray times) between arrivals
  kAddOnly,         // adds only, one advance(kNever) at the end
};

std::map<uint64_t, Times> run_sim(const CostModel& cost, const ReplicaLimits& lim,
                                  const std::vector<Req>& reqs, Driver driver,
                                  ReplicaSim* keep = nullptr) {
  ReplicaSim local(cost, lim);
  ReplicaSim& sim = keep != nullptr ? *keep : local;
  std::vector<ReplicaEvent> events;
  std::mt19937_64 rng(99);
  for (const Req& r : reqs) {
    if (driver == Driver::kAdvanceThenAdd) {
      sim.advance(r.arrival_ns, events);
    } else if (driver == Driver::kEventByEvent) {
      while (sim.next_event_ns() <= r.arrival_ns) {
        const int64_t e = sim.next_event_ns();
        // Now and then a stray look at a time between events; it must change nothing.
        if (rng() % 4 == 0) sim.advance(std::max<int64_t>(0, e - 1), events);
        sim.advance(e, events);
      }
    }
    sim.add(r.id, r.arrival_ns, r.input, r.output, r.cached);
  }
  if (driver == Driver::kEventByEvent) {
    while (sim.next_event_ns() != ReplicaSim::kNever) sim.advance(sim.next_event_ns(), events);
  }
  sim.advance(ReplicaSim::kNever, events);
  EXPECT_TRUE(sim.idle());
  EXPECT_EQ(sim.kv_tokens_used(), 0);
  EXPECT_EQ(sim.running(), 0);

  std::map<uint64_t, Times> out;
  int64_t last = 0;
  for (const ReplicaEvent& e : events) {
    EXPECT_GE(e.t_ns, last) << "events out of time order";
    last = e.t_ns;
    Times& t = out[e.id];
    if (e.kind == ReplicaEvent::kFirstToken) {
      EXPECT_EQ(t.first, -1) << "two first tokens for " << e.id;
      t.first = e.t_ns;
    } else {
      EXPECT_NE(t.first, -1) << "finish before first token for " << e.id;
      EXPECT_EQ(t.finish, -1) << "two finishes for " << e.id;
      t.finish = e.t_ns;
    }
  }
  return out;
}

// Bursty arrivals (some at the same instant), prompts from 1 to ~4k, outputs 1 to ~600, a third
// with a cached prefix.
std::vector<Req> random_mix(uint64_t seed, int n, int64_t mean_gap_ns) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> gap(1.0 / static_cast<double>(mean_gap_ns));
  std::vector<Req> reqs;
  int64_t t = static_cast<int64_t>(rng() % 1000);
  for (int i = 0; i < n; ++i) {
    if (rng() % 5 != 0) t += static_cast<int64_t>(gap(rng));  // 1 in 5 arrive together
    std::uniform_real_distribution<> log_input(0, 12), log_output(0, 9.3);
    const int32_t input = 1 + static_cast<int32_t>(std::exp2(log_input(rng)));
    const int32_t output = 1 + static_cast<int32_t>(std::exp2(log_output(rng)));
    const int32_t cached = rng() % 3 == 0 ? static_cast<int32_t>(rng() % (input + 1)) : 0;
    reqs.push_back({static_cast<uint64_t>(i), t, input, output, cached});
  }
  return reqs;
}

std::vector<ReplicaLimits> limit_sets() {
  return {
      {256, 2048, int64_t{1} << 40},  // defaults, unlimited KV
      {64, 512, 20000},               // small chunks, moderate KV
      {8, 4096, 3000},                // tight KV: many claims (up to ~4.6k) exceed it
      {1, 2048, int64_t{1} << 40},    // one at a time
      {32, 16, 50000},                // decode rows can use the whole token budget
  };
}

TEST(ReplicaSim, MatchesPerIterationReferenceExactlyWithoutContext) {
  ContextFreeCost cost;
  for (const ReplicaLimits& lim : limit_sets()) {
    for (uint64_t seed : {1, 2, 3, 4}) {
      for (int64_t gap : {2 * kMs, 50 * kMs, 400 * kMs}) {
        const auto reqs = random_mix(seed, 250, gap);
        const auto want = reference(cost, lim, reqs);
        ASSERT_EQ(want.size(), reqs.size());
        for (Driver d : {Driver::kAdvanceThenAdd, Driver::kEventByEvent, Driver::kAddOnly}) {
          const auto got = run_sim(cost, lim, reqs, d);
          ASSERT_EQ(got.size(), reqs.size());
          for (const Req& r : reqs) {
            ASSERT_EQ(got.at(r.id).first, want.at(r.id).first)
                << "first token of " << r.id << " seed " << seed << " gap " << gap
                << " max_running " << lim.max_running << " driver " << static_cast<int>(d);
            ASSERT_EQ(got.at(r.id).finish, want.at(r.id).finish)
                << "finish of " << r.id << " seed " << seed << " gap " << gap << " max_running "
                << lim.max_running << " driver " << static_cast<int>(d);
          }
        }
      }
    }
  }
}

// With context in the cost, per-iteration times drift inside a segment and ReplicaSim charges the
// middle one. That moves iteration boundaries by a little, and an arrival near a boundary can
// then join one iteration earlier or later than in the reference, so a request may differ by a
// couple of whole iterations and by a small fraction of its latency; no more. The drivers must
// still agree with each other exactly.
TEST(ReplicaSim, MatchesReferenceWithinToleranceWithContext) {
  for (const char* shape_name : {"llama-3-8b", "llama-2-13b"}) {
    auto shape = find_model_shape(shape_name, "bf16");
    ASSERT_TRUE(shape.is_ok());
    auto h100 = find_accelerator("h100");
    ASSERT_TRUE(h100.is_ok());
    auto cost = make_roofline_cost(*shape, *h100);
    ASSERT_TRUE(cost.is_ok()) << cost.status().to_string();
    for (ReplicaLimits lim : limit_sets()) {
      lim.kv_capacity_tokens = std::min(lim.kv_capacity_tokens, (*cost)->kv_capacity_tokens());
      for (uint64_t seed : {5, 6, 7}) {
        const auto reqs = random_mix(seed, 250, 20 * kMs);
        int64_t longest = 0;
        const auto want = reference(**cost, lim, reqs, &longest);
        const auto got = run_sim(**cost, lim, reqs, Driver::kAdvanceThenAdd);
        EXPECT_TRUE(run_sim(**cost, lim, reqs, Driver::kEventByEvent) == got);
        EXPECT_TRUE(run_sim(**cost, lim, reqs, Driver::kAddOnly) == got);
        double worst_rel = 0.0, sum_rel = 0.0;
        int64_t worst_abs = 0;
        for (const Req& r : reqs) {
          for (bool first : {true, false}) {
            const int64_t w = first ? want.at(r.id).first : want.at(r.id).finish;
            const int64_t g = first ? got.at(r.id).first : got.at(r.id).finish;
            const double latency = static_cast<double>(w - r.arrival_ns);
            const int64_t diff = std::abs(g - w);
            worst_rel = std::max(worst_rel, static_cast<double>(diff) / latency);
            sum_rel += static_cast<double>(diff) / latency;
            worst_abs = std::max(worst_abs, diff);
            const double allowed = 0.01 * latency + 2.0 * static_cast<double>(longest);
            ASSERT_LE(static_cast<double>(diff), allowed)
                << shape_name << (first ? " first token" : " finish") << " of " << r.id << ": "
                << g << " vs reference " << w << " (arrival " << r.arrival_ns << ") seed "
                << seed << " max_running " << lim.max_running;
          }
        }
        // On average the two agree far more closely than the per-request bound.
        EXPECT_LT(sum_rel / (2.0 * reqs.size()), 0.01);
        std::printf("%s max_running %d batch %d kv %lld seed %llu: latency error mean %.2e, "
                    "worst %.2e relative, worst %.2f ms (longest iteration %.2f ms)\n",
                    shape_name, lim.max_running, lim.max_batch_tokens,
                    static_cast<long long>(lim.kv_capacity_tokens),
                    static_cast<unsigned long long>(seed), sum_rel / (2.0 * reqs.size()),
                    worst_rel, worst_abs / 1e6, longest / 1e6);
      }
    }
  }
}

TEST(ReplicaSim, SingleRequestByHand) {
  ContextFreeCost cost;
  const ReplicaLimits lim{256, 2048, 1 << 20};
  ReplicaSim sim(cost, lim);
  EXPECT_TRUE(sim.idle());
  EXPECT_EQ(sim.next_event_ns(), ReplicaSim::kNever);
  const int64_t t0 = 5 * kMs;
  sim.add(7, t0, 5000, 10);
  EXPECT_EQ(sim.running(), 1);
  EXPECT_EQ(sim.kv_tokens_used(), 5010);
  // ceil(5000 / 2048) = 3 prefill iterations: 2048, 2048, 904 tokens; then 9 one-row decodes.
  const int64_t ttft = 2 * step_ns(cost, {2048, 0, 0, 0}) + step_ns(cost, {904, 0, 0, 0});
  const int64_t decode = step_ns(cost, {0, 1, 0, 0});
  EXPECT_EQ(sim.next_event_ns(), t0 + ttft);
  std::vector<ReplicaEvent> ev;
  sim.advance(t0 + ttft - 1, ev);
  EXPECT_TRUE(ev.empty());
  sim.advance(t0 + ttft, ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 7u);
  EXPECT_EQ(ev[0].kind, ReplicaEvent::kFirstToken);
  EXPECT_EQ(ev[0].t_ns, t0 + ttft);
  EXPECT_EQ(sim.next_event_ns(), t0 + ttft + 9 * decode);
  sim.advance(t0 + ttft + 9 * decode, ev);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].kind, ReplicaEvent::kFinish);
  EXPECT_EQ(ev[1].t_ns, t0 + ttft + 9 * decode);
  EXPECT_TRUE(sim.idle());
  EXPECT_EQ(sim.kv_tokens_used(), 0);
  EXPECT_EQ(sim.iterations(), 12);
  EXPECT_NEAR(sim.busy_s(), (ttft + 9 * decode) * 1e-9, 1e-15);

  // Cached prefix: 4,096 of 5,000 tokens cached leaves one 904-token chunk; a fully cached
  // prompt still computes one token; one output token finishes with the first.
  const int64_t t1 = 10'000 * kMs;
  sim.add(8, t1, 5000, 1, 4096);
  sim.advance(t1 + step_ns(cost, {904, 0, 0, 0}), ev);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[2].kind, ReplicaEvent::kFirstToken);
  EXPECT_EQ(ev[3].kind, ReplicaEvent::kFinish);
  EXPECT_EQ(ev[2].t_ns, ev[3].t_ns);
  const int64_t t2 = 20'000 * kMs;
  sim.add(9, t2, 300, 1, 300);
  EXPECT_EQ(sim.next_event_ns(), t2 + step_ns(cost, {1, 0, 0, 0}));
}

TEST(ReplicaSim, AdmissionWaitsForKvAndJoinsAtIterationBoundaries) {
  ContextFreeCost cost;
  const ReplicaLimits lim{256, 2048, 1000};
  ReplicaSim sim(cost, lim);
  std::vector<ReplicaEvent> ev;
  sim.add(1, 0, 100, 500);   // claims 600
  sim.add(2, 0, 100, 300);   // 400: fits exactly
  sim.add(3, 0, 10, 10);     // 20: waits for KV
  sim.add(4, 0, 1, 1);       // 2: waits behind 3 (FCFS)
  EXPECT_EQ(sim.running(), 2);
  EXPECT_EQ(sim.waiting(), 2);
  EXPECT_EQ(sim.kv_tokens_used(), 1000);
  // Iteration 1 prefills request 1 (100 tokens), iteration 2 decodes it and prefills request 2.
  const int64_t it1 = step_ns(cost, {100, 0, 0, 0});
  const int64_t it2 = step_ns(cost, {100, 1, 0, 0});
  sim.advance(it1 + it2, ev);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].id, 1u);
  EXPECT_EQ(ev[1].id, 2u);
  EXPECT_EQ(ev[1].t_ns, it1 + it2);
  // Request 2 finishes after 299 more two-row decodes, then 3 and 4 are admitted.
  const int64_t two = step_ns(cost, {0, 2, 0, 0});
  EXPECT_EQ(sim.next_event_ns(), it1 + it2 + 299 * two);
  sim.advance(it1 + it2 + 299 * two, ev);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[2].id, 2u);
  EXPECT_EQ(ev[2].kind, ReplicaEvent::kFinish);
  EXPECT_EQ(sim.running(), 3);
  EXPECT_EQ(sim.waiting(), 0);
  EXPECT_EQ(sim.kv_tokens_used(), 600 + 20 + 2);

  // A request arriving mid-iteration starts at the next boundary.
  ReplicaSim s2(cost, lim);
  s2.add(1, 0, 10, 100);
  const int64_t p = step_ns(cost, {10, 0, 0, 0});
  const int64_t d1 = step_ns(cost, {0, 1, 0, 0});
  const int64_t arrive = p + 3 * d1 + d1 / 2;  // during the 4th decode iteration
  s2.add(2, arrive, 5, 3);
  const int64_t boundary = p + 4 * d1;
  // Request 1's first token (at p) was reached by that add() but not handed out: it comes first.
  EXPECT_EQ(s2.next_event_ns(), p);
  s2.advance(arrive, ev);
  EXPECT_EQ(s2.next_event_ns(), boundary + step_ns(cost, {5, 1, 0, 0}));
  s2.advance(ReplicaSim::kNever, ev);
}

// A cost whose pace changes under the replica (a shared device getting busier): reprice() lets
// the iteration running finish at the old pace and runs the rest at the new one.
class ScaledCost final : public CostModel {
 public:
  double scale = 1.0;
  std::string describe() const override { return "scaled test cost"; }
  double step_s(const StepWork& w) const override { return scale * base_.step_s(w); }
  int64_t weight_bytes() const override { return 1; }
  int64_t kv_bytes_per_token() const override { return 1; }
  int64_t kv_capacity_tokens() const override { return 1 << 30; }
  double load_s() const override { return 0; }
  double resume_s() const override { return 0; }
  double suspend_s() const override { return 0; }
  int32_t accelerators() const override { return 1; }

 private:
  ContextFreeCost base_;
};

TEST(ReplicaSim, RepriceKeepsTheRunningIterationAndRetimesTheRest) {
  ScaledCost cost;
  ReplicaLimits lim;
  lim.kv_capacity_tokens = 1 << 20;
  ReplicaSim sim(cost, lim);
  std::vector<ReplicaEvent> ev;
  sim.add(1, 0, 10, 11);  // one prefill iteration, then 10 decodes
  const int64_t p = step_ns(cost, {10, 0, 0, 0});
  const int64_t d1 = step_ns(cost, {0, 1, 0, 0});
  sim.advance(p, ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(sim.next_event_ns(), p + 10 * d1);
  // The device gets three times busier during the 3rd decode: it ends on time, 7 slower follow.
  cost.scale = 3.0;
  const int64_t t = p + 2 * d1 + d1 / 3;
  sim.reprice(t);
  const int64_t d3 = step_ns(cost, {0, 1, 0, 0});
  EXPECT_EQ(sim.next_event_ns(), p + 3 * d1 + 7 * d3);
  // Quieter again at an exact boundary: the iteration starting there takes the new pace.
  cost.scale = 1.0;
  sim.reprice(p + 3 * d1 + 2 * d3);
  EXPECT_EQ(sim.next_event_ns(), p + 3 * d1 + 2 * d3 + 5 * d1);
  ev.clear();
  sim.advance(ReplicaSim::kNever, ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].t_ns, p + 3 * d1 + 2 * d3 + 5 * d1);
  EXPECT_EQ(sim.iterations(), 11);
  EXPECT_TRUE(sim.idle());
  // Repricing an idle replica, or in its last iteration, changes nothing.
  sim.reprice(sim.busy_s() > 0 ? ev[0].t_ns + 1 : 0);
  EXPECT_EQ(sim.next_event_ns(), ReplicaSim::kNever);
}

TEST(ReplicaSim, HundredThousandRequestsQuickly) {
  auto shape = find_model_shape("llama-3-8b", "bf16");
  auto h100 = find_accelerator("h100");
  ASSERT_TRUE(shape.is_ok() && h100.is_ok());
  auto cost = make_roofline_cost(*shape, *h100);
  ASSERT_TRUE(cost.is_ok());
  ReplicaLimits lim;
  lim.kv_capacity_tokens = (*cost)->kv_capacity_tokens();
  ReplicaSim sim(**cost, lim);
  // ~1,000-token prompts and ~200-token outputs at 12 requests/s keep ~100 running.
  std::mt19937_64 rng(42);
  std::exponential_distribution<double> gap(12.0);
  constexpr int kN = 100'000;
  std::vector<ReplicaEvent> ev;
  ev.reserve(2 * kN);
  double t = 0;
  int64_t max_running = 0;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kN; ++i) {
    t += gap(rng);
    const int64_t now = static_cast<int64_t>(t * 1e9);
    while (sim.next_event_ns() <= now) sim.advance(sim.next_event_ns(), ev);
    sim.add(static_cast<uint64_t>(i), now, 200 + static_cast<int32_t>(rng() % 1600),
            10 + static_cast<int32_t>(rng() % 380));
    max_running = std::max<int64_t>(max_running, sim.running());
  }
  sim.advance(ReplicaSim::kNever, ev);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(ev.size(), 2u * kN);
  EXPECT_TRUE(sim.idle());
  std::printf("%d requests, %lld iterations, peak %lld running, busy %.0f of %.0f simulated s: "
              "%.3f s wall, %.0f requests/s\n",
              kN, static_cast<long long>(sim.iterations()), static_cast<long long>(max_running),
              sim.busy_s(), t, wall, kN / wall);
}

}  // namespace
}  // namespace tessera::sim
