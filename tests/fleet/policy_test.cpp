// Fleet policies as pure functions: idle-time histogram, activity tracking, fixed keep-alive, the
// hybrid histogram policy and cold-start-cost eviction, each against hand-computed expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tessera/fleet/activity_tracker.h"
#include "tessera/fleet/eviction_policy.h"
#include "tessera/fleet/hybrid_histogram_policy.h"
#include "tessera/fleet/idle_time_histogram.h"
#include "tessera/fleet/keep_alive_policy.h"

namespace tessera::fleet {
namespace policy_test {

constexpr int64_t kSec = 1'000'000'000;
int64_t sec(double s) { return static_cast<int64_t>(std::llround(s * 1e9)); }

// Time-compressed histograms: 1-second bins over one minute.
HistogramOptions one_second_bins() { return {kSec, 60}; }

// Requests for `model` that each finish instantly, separated by the given idle times, starting
// at `start_s`. Returns the time of the last completion.
int64_t feed(ActivityTracker& t, const std::string& model, const std::vector<double>& idle_s,
             double start_s = 0.0) {
  int64_t now = sec(start_s);
  t.on_arrival(model, now);
  t.on_completion(model, now);
  for (double idle : idle_s) {
    now += sec(idle);
    t.on_arrival(model, now);
    t.on_completion(model, now);
  }
  return now;
}

ModelView view_of(std::string name, ModelState state, int64_t since_ns, int64_t bytes = 100,
                  double resume_s = 0.1, double reload_s = 1.0) {
  ModelView m;
  m.name = std::move(name);
  m.state = state;
  m.state_since_ns = since_ns;
  m.active_bytes = bytes;
  m.host_bytes = bytes * 3 / 4;  // the weights: active bytes less the KV pool
  m.resume_cost_s = resume_s;
  m.reload_cost_s = reload_s;
  return m;
}

std::vector<std::string> names(const std::vector<Decision>& ds, Action action) {
  std::vector<std::string> out;
  for (const auto& d : ds) {
    if (d.action == action) out.push_back(d.model);
  }
  return out;
}

// --- IdleTimeHistogram ---------------------------------------------------------------------

TEST(IdleTimeHistogramTest, BinsPercentilesCvAndSurvival) {
  IdleTimeHistogram h(one_second_bins());
  for (double s : {0.5, 1.2, 1.9, 5.0, 100.0}) h.add(sec(s));
  EXPECT_EQ(h.bin_count(0), 1);
  EXPECT_EQ(h.bin_count(1), 2);
  EXPECT_EQ(h.bin_count(5), 1);
  EXPECT_EQ(h.in_bounds(), 4);
  EXPECT_EQ(h.out_of_bounds(), 1);
  EXPECT_EQ(h.total(), 5);
  // ceil(0.05 * 4) = 1 sample -> bin 0; ceil(0.5 * 4) = 2 -> bin 1; ceil(0.99 * 4) = 4 -> bin 5.
  EXPECT_EQ(h.percentile_bin(0.05), 0);
  EXPECT_EQ(h.percentile_bin(0.5), 1);
  EXPECT_EQ(h.percentile_bin(0.99), 5);
  EXPECT_EQ(h.percentile_bin(1.0), 5);
  // Counts {1, 2, 1, 0 x 57}: mean 4/60, variance 6/60 - (4/60)^2.
  const double mean = 4.0 / 60.0;
  EXPECT_NEAR(h.bin_count_cv(), std::sqrt(6.0 / 60.0 - mean * mean) / mean, 1e-12);
  EXPECT_EQ(h.count_at_least(0), 5);
  EXPECT_EQ(h.count_at_least(sec(1.5)), 4);  // bins 1.. plus out-of-bounds
  EXPECT_EQ(h.count_at_least(sec(6)), 1);
  EXPECT_EQ(h.count_at_least(sec(1000)), 1);
}

TEST(IdleTimeHistogramTest, EmptyAndEdges) {
  IdleTimeHistogram h(one_second_bins());
  EXPECT_EQ(h.percentile_bin(0.5), -1);
  EXPECT_EQ(h.bin_count_cv(), 0.0);
  h.add(-5);             // clamps to bin 0
  h.add(sec(59.999));    // last bin
  h.add(sec(60));        // exactly the range: out of bounds
  EXPECT_EQ(h.bin_count(0), 1);
  EXPECT_EQ(h.bin_count(59), 1);
  EXPECT_EQ(h.out_of_bounds(), 1);
}

TEST(IdleTimeHistogramTest, FlatHistogramHasZeroCv) {
  IdleTimeHistogram h(one_second_bins());
  for (int b = 0; b < 60; ++b) h.add(sec(b + 0.5));
  EXPECT_NEAR(h.bin_count_cv(), 0.0, 1e-12);
}

// --- ActivityTracker -------------------------------------------------------------------------

TEST(ActivityTrackerTest, IdleTimesOnlyBetweenBusyPeriods) {
  ActivityTracker t(one_second_bins());
  EXPECT_EQ(t.find("m"), nullptr);
  t.on_arrival("m", sec(0));     // first request: no idle time yet
  t.on_arrival("m", sec(1));     // overlaps: busy, no idle time
  t.on_completion("m", sec(2));
  t.on_completion("m", sec(3));  // idle from 3 s
  t.on_arrival("m", sec(10.5));  // idle 7.5 s
  t.on_completion("m", sec(11));
  t.on_completion("m", sec(12)); // unmatched: ignored
  const ModelActivity* a = t.find("m");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->in_flight, 0);
  EXPECT_EQ(a->idle_since_ns, sec(11));
  EXPECT_EQ(a->n_arrivals, 3);
  EXPECT_EQ(a->first_arrival_ns, 0);
  EXPECT_EQ(a->last_arrival_ns, sec(10.5));
  EXPECT_EQ(a->idle.total(), 1);
  EXPECT_EQ(a->idle.bin_count(7), 1);
}

// A benchmark's warm-up is forgotten: no idle time, no arrival counted; an idle model's idle
// period restarts at the forgetting, and the gap to its next arrival is not an idle time. A
// model still busy then keeps its request in flight and records no idle time when the next comes.
TEST(ActivityTrackerTest, ForgetStartsAfreshAtThatMoment) {
  ActivityTracker t(one_second_bins());
  t.on_arrival("idle", sec(0));
  t.on_completion("idle", sec(1));
  t.on_arrival("idle", sec(3));  // idle 2 s
  t.on_completion("idle", sec(4));
  t.on_arrival("busy", sec(3));
  ActivityTracker::forget(t.track("idle"), sec(5));
  ActivityTracker::forget(t.track("busy"), sec(5));
  const ModelActivity* a = t.find("idle");
  EXPECT_EQ(a->idle.total(), 0);
  EXPECT_EQ(a->n_arrivals, 0);
  EXPECT_EQ(a->first_arrival_ns, -1);
  EXPECT_EQ(a->idle_since_ns, sec(5));
  EXPECT_EQ(a->in_flight, 0);
  t.on_arrival("idle", sec(8));  // not an idle time: the gap since forgotten requests
  t.on_completion("idle", sec(9));
  t.on_arrival("idle", sec(11));  // idle 2 s again
  EXPECT_EQ(a->idle.total(), 1);
  EXPECT_EQ(a->idle.bin_count(2), 1);
  EXPECT_EQ(a->n_arrivals, 2);
  const ModelActivity* b = t.find("busy");
  EXPECT_EQ(b->in_flight, 1);
  EXPECT_EQ(b->idle_since_ns, -1);
  t.on_completion("busy", sec(6));  // the forgotten request
  t.on_arrival("busy", sec(9));
  EXPECT_EQ(b->idle.total(), 0);
  t.on_completion("busy", sec(10));
  t.on_arrival("busy", sec(13));
  EXPECT_EQ(b->idle.total(), 1);
}

TEST(ActivityTrackerTest, IdleForUsesLaterOfCompletionAndStateEntry) {
  ActivityTracker t(one_second_bins());
  feed(t, "m", {}, 10.0);  // completes at 10 s
  EXPECT_EQ(idle_for_ns(view_of("m", ModelState::kActive, sec(4)), t, sec(15)), sec(5));
  EXPECT_EQ(idle_for_ns(view_of("m", ModelState::kActive, sec(12)), t, sec(15)), sec(3));
  EXPECT_EQ(idle_for_ns(view_of("new", ModelState::kActive, sec(1)), t, sec(15)), sec(14));
  t.on_arrival("m", sec(16));
  EXPECT_EQ(idle_for_ns(view_of("m", ModelState::kActive, sec(4)), t, sec(17)), -1);
}

// --- FixedKeepAlivePolicy --------------------------------------------------------------------

TEST(FixedKeepAlivePolicyTest, SuspendsActiveModelsIdleAtLeastTheKeepAlive) {
  ActivityTracker t(one_second_bins());
  feed(t, "a", {}, 94.0);   // idle 6 s at 100
  feed(t, "b", {}, 96.0);   // idle 4 s
  feed(t, "c", {}, 90.0);
  t.on_arrival("c", sec(99));  // busy
  feed(t, "d", {}, 0.0);    // suspended already
  feed(t, "e", {}, 0.0);    // pinned
  feed(t, "exact", {}, 95.0);  // idle exactly 5 s
  FleetView v;
  v.now_ns = sec(100);
  v.models = {view_of("a", ModelState::kActive, 0), view_of("b", ModelState::kActive, 0),
              view_of("c", ModelState::kActive, 0), view_of("d", ModelState::kSuspended, 0),
              view_of("e", ModelState::kActive, 0), view_of("f", ModelState::kActive, sec(90)),
              view_of("exact", ModelState::kActive, 0), view_of("g", ModelState::kLoading, 0)};
  v.models[4].pinned = true;
  FixedKeepAlivePolicy policy(5 * kSec);
  const auto ds = policy.decide(v, t);
  EXPECT_EQ(names(ds, Action::kSuspend), (std::vector<std::string>{"a", "f", "exact"}));
  EXPECT_EQ(ds.size(), 3u);
  EXPECT_NE(ds[0].reason.find("keep-alive"), std::string::npos);
  EXPECT_TRUE(FixedKeepAlivePolicy::always_on().decide(v, t).empty());
}

// --- HybridHistogramPolicy -------------------------------------------------------------------

HybridHistogramOptions test_options() {
  HybridHistogramOptions o;
  o.fallback_keep_alive_ns = 30 * kSec;
  return o;  // 5th / 99th percentiles, 10% margin, 10 samples, CV >= 2, <= 50% out of bounds
}

TEST(MakeIdlePolicyTest, BuildsEachKindByNameAndRefusesTheRest) {
  auto fixed = make_idle_policy({"fixed", 30.0});
  ASSERT_TRUE(fixed.is_ok());
  EXPECT_EQ((*fixed)->name(), "keep-alive");
  EXPECT_EQ(dynamic_cast<const FixedKeepAlivePolicy&>(**fixed).keep_alive_ns(), 30 * kSec);
  auto adaptive = make_idle_policy({"adaptive", 7.0});
  ASSERT_TRUE(adaptive.is_ok());
  EXPECT_EQ(dynamic_cast<const HybridHistogramPolicy&>(**adaptive).options().fallback_keep_alive_ns,
            7 * kSec);
  auto on = make_idle_policy({"always-on", 0.0});
  ASSERT_TRUE(on.is_ok());
  EXPECT_EQ((*on)->name(), "always-on");
  EXPECT_EQ(make_idle_policy({"lru", 1.0}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_idle_policy({"fixed", -1.0}).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(make_idle_policy({"fixed", std::nan("")}).status().code(), ErrorCode::kInvalidArgument);
}

TEST(HybridHistogramPolicyTest, WindowsFromHeadAndTail) {
  ActivityTracker t(one_second_bins());
  std::vector<double> idle(19, 10.2);  // bin 10 x 19
  idle.push_back(12.5);                // bin 12 x 1
  feed(t, "a", idle);
  HybridHistogramPolicy policy(test_options());
  const HybridWindows w = policy.windows(t.find("a"));
  // Head: ceil(0.05 * 20) = 1 -> bin 10, lower edge 10 s, less 10% -> 9 s.
  // Tail: ceil(0.99 * 20) = 20 -> bin 12, upper edge 13 s, plus 10% -> 14.3 s.
  // CV of {19, 1, 0 x 58}: mean 1/3, sqrt(362/60 - 1/9) / (1/3) = 7.30 >= 2.
  EXPECT_TRUE(w.representative) << w.reason;
  EXPECT_EQ(w.prewarm_ns, sec(9));
  EXPECT_EQ(w.keep_alive_ns, sec(14.3));
}

TEST(HybridHistogramPolicyTest, SuspendsAtOncePrewarmsAndKeepsAlive) {
  ActivityTracker t(one_second_bins());
  std::vector<double> idle(19, 10.2);
  idle.push_back(12.5);
  const int64_t c = feed(t, "a", idle);  // last completion
  HybridHistogramPolicy policy(test_options());
  auto decide = [&](ModelState state, int64_t since, double after_s) {
    FleetView v;
    v.now_ns = c + sec(after_s);
    v.models = {view_of("a", state, since)};
    return policy.decide(v, t);
  };
  // Just went idle with the next request expected after 9 s: suspend now.
  auto ds = decide(ModelState::kActive, 0, 1.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].action, Action::kSuspend);
  // Suspended: nothing before the pre-warm window, pre-warm inside it, nothing after it.
  EXPECT_TRUE(decide(ModelState::kSuspended, c, 5.0).empty());
  EXPECT_TRUE(decide(ModelState::kSuspended, c, 8.999).empty());
  ds = decide(ModelState::kSuspended, c, 9.0);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].action, Action::kPrewarm);
  EXPECT_EQ(names(decide(ModelState::kEvicted, c, 14.0), Action::kPrewarm),
            std::vector<std::string>{"a"});
  EXPECT_TRUE(decide(ModelState::kSuspended, c, 14.3).empty());
  // Pre-warmed at 9 s: the windows still count from the completion, so it stays until 14.3 s.
  EXPECT_TRUE(decide(ModelState::kActive, c + sec(9), 10.0).empty());
  EXPECT_TRUE(decide(ModelState::kActive, c + sec(9), 14.29).empty());
  EXPECT_EQ(names(decide(ModelState::kActive, c + sec(9), 14.3), Action::kSuspend),
            std::vector<std::string>{"a"});
  // Busy or pinned: never.
  t.on_arrival("a", c + sec(10));
  EXPECT_TRUE(decide(ModelState::kActive, 0, 11.0).empty());
}

TEST(HybridHistogramPolicyTest, HeadInFirstBinMeansNoPrewarm) {
  ActivityTracker t(one_second_bins());
  std::vector<double> idle(10, 0.3);   // bin 0 x 10
  idle.push_back(3.5);                 // bin 3
  const int64_t c = feed(t, "a", idle);
  HybridHistogramPolicy policy(test_options());
  const HybridWindows w = policy.windows(t.find("a"));
  // Head bin 0 -> pre-warm 0 (stay loaded); tail: ceil(0.99 * 11) = 11 -> bin 3 -> 4 s x 1.1.
  ASSERT_TRUE(w.representative) << w.reason;
  EXPECT_EQ(w.prewarm_ns, 0);
  EXPECT_EQ(w.keep_alive_ns, sec(4.4));
  FleetView v;
  v.now_ns = c + sec(4.0);
  v.models = {view_of("a", ModelState::kActive, 0)};
  EXPECT_TRUE(policy.decide(v, t).empty());
  v.now_ns = c + sec(4.4);
  EXPECT_EQ(names(policy.decide(v, t), Action::kSuspend), std::vector<std::string>{"a"});
  v.models = {view_of("a", ModelState::kSuspended, 0)};
  EXPECT_TRUE(policy.decide(v, t).empty());  // no pre-warm without a pre-warm window
}

TEST(HybridHistogramPolicyTest, FallsBackWhenNotRepresentative) {
  ActivityTracker t(one_second_bins());
  feed(t, "few", {10.2, 10.2, 10.2});                   // 3 samples < 10
  std::vector<double> flat;
  for (int b = 0; b < 60; ++b) flat.push_back(b + 0.5);  // CV 0 < 2
  feed(t, "flat", flat);
  feed(t, "far", std::vector<double>(10, 100.0));       // all out of bounds
  HybridHistogramPolicy policy(test_options());
  for (const char* name : {"few", "flat", "far", "never-seen"}) {
    SCOPED_TRACE(name);
    const HybridWindows w = policy.windows(t.find(name));
    EXPECT_FALSE(w.representative);
    EXPECT_EQ(w.prewarm_ns, 0);
    EXPECT_EQ(w.keep_alive_ns, 30 * kSec);
  }
  EXPECT_NE(policy.windows(t.find("few")).reason.find("3 idle times < 10"), std::string::npos);
  EXPECT_NE(policy.windows(t.find("flat")).reason.find("CV 0.00"), std::string::npos);
  EXPECT_NE(policy.windows(t.find("far")).reason.find("100%"), std::string::npos);
  // Fallback behaves as a fixed 30 s keep-alive.
  FleetView v;
  v.now_ns = sec(10'000);
  v.models = {view_of("never-seen", ModelState::kActive, v.now_ns - sec(29.9)),
              view_of("idle", ModelState::kActive, v.now_ns - sec(30))};
  EXPECT_EQ(names(policy.decide(v, t), Action::kSuspend), std::vector<std::string>{"idle"});
}

// --- ColdStartCostEviction -------------------------------------------------------------------

EvictionOptions eviction_options() {
  EvictionOptions o;
  o.window_ns = 10 * kSec;
  o.min_conditional_samples = 5;
  o.prior_probability = 0.5;
  return o;
}

TEST(ColdStartCostEvictionTest, RequestProbability) {
  ActivityTracker t(one_second_bins());
  // "bimodal": idle 2 s x5 and 30 s x5.
  const int64_t cb = feed(t, "bimodal", {2, 2, 2, 2, 2, 30, 30, 30, 30, 30});
  // "poisson": arrivals at 0, 10, 20 s (2 idle times: too few for the histogram).
  const int64_t cp = feed(t, "poisson", {10, 10});
  ColdStartCostEviction ev(eviction_options());
  auto p = [&](const std::string& name, int64_t now) {
    return ev.request_probability(view_of(name, ModelState::kActive, 0), t, now);
  };
  // Idle 0 s: all 10 survived; 5 end within 10 s (the 2 s ones) -> 0.5.
  EXPECT_DOUBLE_EQ(p("bimodal", cb), 0.5);
  // Idle 5 s: 5 survived (the 30 s ones), none end by 15 s -> 0.
  EXPECT_DOUBLE_EQ(p("bimodal", cb + sec(5)), 0.0);
  // Idle 25 s: 5 survived, all end by 35 s -> 1.
  EXPECT_DOUBLE_EQ(p("bimodal", cb + sec(25)), 1.0);
  // Poisson: 2 gaps over 20 s -> 0.1/s; P = 1 - exp(-0.1 x 10).
  EXPECT_NEAR(p("poisson", cp + sec(1)), 1.0 - std::exp(-1.0), 1e-12);
  EXPECT_DOUBLE_EQ(p("never-seen", 0), 0.5);
  t.on_arrival("poisson", cp + sec(2));
  EXPECT_DOUBLE_EQ(p("poisson", cp + sec(3)), 1.0);  // busy
}

TEST(ColdStartCostEvictionTest, CheapestExpectedCostPerByteFirstNotLru) {
  ActivityTracker t(one_second_bins());
  // "medium" was used most recently but its next request is far away (P = 0);
  // "hot" was used longest ago but comes back every 2 s (P = 1); "big" is unknown (prior 0.5).
  const int64_t base = sec(1000);
  feed(t, "hot", {2, 2, 2, 2, 2}, 982.0);  // last completion at 992 s: idle 8 s
  feed(t, "medium", {2, 2, 2, 2, 2, 30, 30, 30, 30, 30}, 995.0 - 160.0);
  FleetView v;
  v.now_ns = base;
  v.models = {
      view_of("big", ModelState::kActive, base - sec(1), 1000, /*resume_s=*/1.0),
      view_of("hot", ModelState::kActive, 0, 100, 0.1),
      view_of("medium", ModelState::kActive, 0, 500, 0.5),
      view_of("busy", ModelState::kActive, 0, 5000, 0.0),
      view_of("pinned", ModelState::kActive, 0, 5000, 0.0),
      view_of("asleep", ModelState::kSuspended, 0, 5000, 0.0),
  };
  v.models[4].pinned = true;
  t.on_arrival("busy", base - sec(1));
  ColdStartCostEviction ev(eviction_options());
  // hot: idle 8 s; its 5 idle times of 2 s are all < 8 s, so fewer than 5 survive and the
  // Poisson estimate applies: 5 gaps over 10 s -> 0.5/s, P = 1 - e^-5 ~ 0.993, cost 0.0993 s
  // per 100 bytes. medium: idle 5 s, P = 0, cost 0. big: prior 0.5 x 1 s per 1000 bytes.
  EvictionPlan plan = ev.choose(v, t, PressureTier::kActive, 400);
  EXPECT_EQ(names(plan.decisions, Action::kSuspend), std::vector<std::string>{"medium"});
  EXPECT_EQ(plan.bytes_freed, 500);
  plan = ev.choose(v, t, PressureTier::kActive, 600);
  EXPECT_EQ(names(plan.decisions, Action::kSuspend),
            (std::vector<std::string>{"medium", "big"}));
  EXPECT_EQ(plan.bytes_freed, 1500);
  plan = ev.choose(v, t, PressureTier::kActive, 1'000'000);  // more than can be had
  EXPECT_EQ(names(plan.decisions, Action::kSuspend),
            (std::vector<std::string>{"medium", "big", "hot"}));
  EXPECT_EQ(plan.bytes_freed, 1600);
  EXPECT_TRUE(ev.choose(v, t, PressureTier::kActive, 0).decisions.empty());
  // Host pressure evicts Suspended models only, costed at their reload (disk) time.
  plan = ev.choose(v, t, PressureTier::kHost, 1);
  EXPECT_EQ(names(plan.decisions, Action::kEvict), std::vector<std::string>{"asleep"});
  EXPECT_EQ(plan.bytes_freed, 3750);  // its host bytes (weights), not its active bytes
}

}  // namespace policy_test
}  // namespace tessera::fleet
