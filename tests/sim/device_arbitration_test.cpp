// The simulator's live-arbitrated shared device: IterationReplica composes batches as the engine
// scheduler does (decode rows first, then every prompt that fits the row budget) with the
// engine's deadlines; DeviceArbiter grants whole iterations by engine::pick_next_device_user and
// never twice in a row to one client while another waits; run_simulation with
// device_arbitration serves every request of a shared-device run and keeps one iteration on the
// device at a time.
#include <gtest/gtest.h>

#include <vector>

#include "tessera/sim/device_arbiter.h"
#include "tessera/sim/iteration_replica.h"

namespace tessera::sim {
namespace {

constexpr int64_t kMs = 1'000'000;

// a + b * (rows - 1) milliseconds, blind to context.
class RowCost final : public CostModel {
 public:
  std::string describe() const override { return "row cost"; }
  double step_s(const StepWork& w) const override {
    return w.tokens() == 0 ? 0.0 : 0.004 + 0.0005 * (w.tokens() - 1);
  }
  int64_t weight_bytes() const override { return 1; }
  int64_t kv_bytes_per_token() const override { return 1; }
  int64_t kv_capacity_tokens() const override { return 1 << 20; }
  double load_s() const override { return 0; }
  double resume_s() const override { return 0; }
  double suspend_s() const override { return 0; }
  int32_t accelerators() const override { return 1; }
};

ReplicaLimits limits(int32_t max_batch_tokens = 512) {
  ReplicaLimits l;
  l.max_batch_tokens = max_batch_tokens;
  l.kv_capacity_tokens = 1 << 20;
  return l;
}

TEST(IterationReplica, PrefillsEveryPromptThatFitsThenDecodesOneRowEach) {
  RowCost cost;
  IterationReplica r(cost, limits(100), 1000 * kMs, 200 * kMs);
  r.add(1, 0, 64, 3);
  r.add(2, 0, 64, 2);  // 36 of its 64 rows fit the first iteration
  ASSERT_TRUE(r.has_work());
  IterationReplica::Plan p = r.plan();
  EXPECT_EQ(p.prefill_tokens, 100);
  EXPECT_EQ(p.decode_rows, 0);
  EXPECT_EQ(p.duration_ns, 4 * kMs + 99 * kMs / 2);
  EXPECT_EQ(p.deadline_ns, 1000 * kMs);  // both due at arrival + TTFT
  std::vector<ReplicaEvent> ev;
  r.finish(100 * kMs, ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 1u);
  EXPECT_EQ(ev[0].kind, ReplicaEvent::kFirstToken);
  // Next: request 1's decode row first, then request 2's remaining 28 prompt rows.
  p = r.plan();
  EXPECT_EQ(p.decode_rows, 1);
  EXPECT_EQ(p.prefill_tokens, 28);
  EXPECT_EQ(p.deadline_ns, 300 * kMs);  // request 1's last token + TPOT deadline
  ev.clear();
  r.finish(200 * kMs, ev);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].id, 2u);  // request 2's first token; request 1 has 2 of 3
  p = r.plan();
  EXPECT_EQ(p.decode_rows, 2);
  EXPECT_EQ(p.prefill_tokens, 0);
  ev.clear();
  r.finish(300 * kMs, ev);
  ASSERT_EQ(ev.size(), 2u);  // both finish: 1 with its 3rd token, 2 with its 2nd
  EXPECT_EQ(ev[0].kind, ReplicaEvent::kFinish);
  EXPECT_EQ(ev[1].kind, ReplicaEvent::kFinish);
  EXPECT_TRUE(r.idle());
  EXPECT_FALSE(r.has_work());
  EXPECT_EQ(r.iterations(), 3);
  EXPECT_EQ(r.kv_tokens_used(), 0);
}

TEST(IterationReplica, AOneTokenRequestFinishesWithItsFirstToken) {
  RowCost cost;
  IterationReplica r(cost, limits(), 1000 * kMs, 200 * kMs);
  r.add(7, 5 * kMs, 10, 1, /*cached_tokens=*/20);  // cached clamps to 9: one row computed
  const IterationReplica::Plan p = r.plan();
  EXPECT_EQ(p.prefill_tokens, 1);
  EXPECT_EQ(p.deadline_ns, 1005 * kMs);
  std::vector<ReplicaEvent> ev;
  r.finish(10 * kMs, ev);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].kind, ReplicaEvent::kFirstToken);
  EXPECT_EQ(ev[1].kind, ReplicaEvent::kFinish);
  EXPECT_TRUE(r.idle());
}

TEST(DeviceArbiter, GrantsAFreeDeviceAtOnceAndHandsOverOnRelease) {
  DeviceArbiter a(3);
  EXPECT_TRUE(a.acquire(0, -1, 0));
  EXPECT_FALSE(a.acquire(1, -1, 1));
  EXPECT_FALSE(a.acquire(2, -1, 2));
  EXPECT_TRUE(a.waiting(1));
  // 0 used 10 ms; 1 and 2 have used nothing: the longer waiting of the two goes first.
  EXPECT_EQ(a.release(0, 10 * kMs), 1);
  EXPECT_EQ(a.holder(), 1);
  // 0 asks again at once: it waits behind 2, which has less service than 0.
  EXPECT_FALSE(a.acquire(0, -1, 10 * kMs));
  EXPECT_EQ(a.release(1, 20 * kMs), 2);
  EXPECT_EQ(a.release(2, 30 * kMs), 0);
  EXPECT_EQ(a.release(0, 40 * kMs), -1);
  EXPECT_EQ(a.holder(), -1);
  EXPECT_EQ(a.wait_ns(2), 20 * kMs - 2);  // asked at 2 ns, granted when 1 released
}

TEST(DeviceArbiter, AnUrgentDeadlineGoesBeforeLeastService) {
  DeviceArbiter a(3);
  ASSERT_TRUE(a.acquire(0, -1, 0));
  ASSERT_EQ(a.release(0, 50 * kMs), -1);  // 0 has used 50 ms
  ASSERT_TRUE(a.acquire(1, -1, 50 * kMs));
  EXPECT_FALSE(a.acquire(0, 120 * kMs, 51 * kMs));   // due within the 50 ms slack at 100 ms
  EXPECT_FALSE(a.acquire(2, 2000 * kMs, 52 * kMs));  // no service yet, but not urgent
  EXPECT_EQ(a.release(1, 100 * kMs), 0);             // EDF: 0 despite its service
  EXPECT_EQ(a.release(0, 130 * kMs), 2);
  EXPECT_EQ(a.late_grants(0), 0);
}

TEST(DeviceArbiter, TheReleasingClientNeverGoesTwiceWhileAnotherWaits) {
  DeviceArbiter a(2);
  ASSERT_TRUE(a.acquire(0, -1, 0));
  ASSERT_FALSE(a.acquire(1, -1, 0));
  int64_t t = 0;
  int32_t holder = 0;
  for (int i = 0; i < 10; ++i) {
    t += (holder == 0 ? 1 : 50) * kMs;  // 0 runs short iterations, 1 long ones
    const int32_t next = a.release(holder, t);
    EXPECT_EQ(next, 1 - holder) << i;  // strict alternation while both want it
    ASSERT_FALSE(a.acquire(holder, -1, t));
    holder = next;
  }
}

}  // namespace
}  // namespace tessera::sim
