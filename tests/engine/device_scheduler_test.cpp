#include "tessera/engine/device_scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "test_util.h"

namespace tessera::engine {
namespace device_scheduler_test {

constexpr int64_t kMs = 1'000'000;

TEST(DevicePolicyTest, LeastWeightedServiceWinsWithoutDeadlines) {
  const DevicePolicyOptions o;
  std::vector<DeviceCandidate> c = {{30 * kMs, -1, 0}, {10 * kMs, -1, 5}, {20 * kMs, -1, 1}};
  EXPECT_EQ(pick_next_device_user(c, 10, o), 1u);
  c[0].vtime_ns = 10 * kMs;  // tie on service: the one that has waited longer
  EXPECT_EQ(pick_next_device_user(c, 10, o), 0u);
}

TEST(DevicePolicyTest, UrgentDeadlineBeatsFairShare) {
  DevicePolicyOptions o;
  o.urgent_slack_ns = 50 * kMs;
  const int64_t now = 1000 * kMs;
  // Candidate 0 has had the least service, candidate 1's deadline is 40 ms away (urgent),
  // candidate 2's is 30 ms away (more urgent), candidate 3's is far (not urgent).
  std::vector<DeviceCandidate> c = {{0, -1, now},
                                    {50 * kMs, now + 40 * kMs, now},
                                    {90 * kMs, now + 30 * kMs, now},
                                    {1, now + 500 * kMs, now}};
  EXPECT_EQ(pick_next_device_user(c, now, o), 2u);
  // A deadline already missed is the most urgent of all.
  c[3].deadline_ns = now - 5 * kMs;
  EXPECT_EQ(pick_next_device_user(c, now, o), 3u);
  // With no deadline near, fairness decides.
  o.urgent_slack_ns = 0;
  c[3].deadline_ns = now + 500 * kMs;
  EXPECT_EQ(pick_next_device_user(c, now, o), 0u);
}

TEST(DevicePolicyTest, StarvationGuardBeatsDeadlines) {
  DevicePolicyOptions o;
  o.max_wait_ns = 100 * kMs;
  const int64_t now = 1000 * kMs;
  std::vector<DeviceCandidate> c = {{0, now, now - 10 * kMs},           // urgent, fresh
                                    {99 * kMs, -1, now - 150 * kMs},    // starved
                                    {99 * kMs, -1, now - 300 * kMs}};   // starved longer
  EXPECT_EQ(pick_next_device_user(c, now, o), 2u);
}

TEST(DeviceSchedulerTest, ChargesHeldTimeAndKeepsStatsAcrossReRegistration) {
  FakeClock clock(0);
  DeviceSchedulerOptions o;
  o.n_threads = 2;
  o.clock = &clock;
  DeviceScheduler s(o);
  EXPECT_EQ(s.n_threads(), 2);
  const auto a = s.add_client("a", 2.0);
  {
    DeviceScheduler::Lease l = s.acquire(a, -1);
    ASSERT_NE(l.pool(), nullptr);
    EXPECT_EQ(l.pool()->size(), 2);
    clock.advance_ns(10 * kMs);
  }
  {
    DeviceScheduler::Lease l = s.acquire(a, 5 * kMs);  // granted after its deadline: late
    clock.advance_ns(4 * kMs);
    l.release();
    EXPECT_EQ(l.pool(), nullptr);
  }
  s.remove_client(a);
  EXPECT_EQ(s.add_client("a", 1.0), a);  // same name, same id and stats
  const auto st = s.stats();
  ASSERT_EQ(st.size(), 1u);
  EXPECT_EQ(st[0].grants, 2);
  EXPECT_EQ(st[0].busy_ns, 14 * kMs);
  EXPECT_EQ(st[0].late_grants, 1);
  EXPECT_EQ(st[0].wait_ns, 0);
  EXPECT_EQ(st[0].prefill_grants + st[0].decode_grants, 0);  // no rows noted
}

#if defined(__linux__)
using testing::affinity_of_this_thread;

TEST(DeviceSchedulerTest, TheHolderRunsOnThePoolsFirstCpuAndGetsItsMaskBackOnRelease) {
  const std::vector<int> before = affinity_of_this_thread();
  DeviceSchedulerOptions o;
  o.n_threads = static_cast<int32_t>(before.size());  // the pool owns every CPU it may use
  DeviceScheduler s(o);
  const auto a = s.add_client("a");
  for (int i = 0; i < 3; ++i) {
    DeviceScheduler::Lease l = s.acquire(a, -1);
    EXPECT_EQ(affinity_of_this_thread(), std::vector<int>{before[0]});
    l.release();
    EXPECT_EQ(affinity_of_this_thread(), before);
  }
  o.pin_threads = false;
  DeviceScheduler unpinned(o);
  const auto b = unpinned.add_client("b");
  DeviceScheduler::Lease l = unpinned.acquire(b, -1);
  EXPECT_EQ(affinity_of_this_thread(), before);
}
#endif

TEST(DeviceSchedulerTest, RecordsEachIterationsTimeline) {
  FakeClock clock(0);
  DeviceSchedulerOptions o;
  o.n_threads = 1;
  o.clock = &clock;
  o.record_iterations = true;
  DeviceScheduler s(o);
  const auto a = s.add_client("a");
  const auto b = s.add_client("b");
  {
    DeviceScheduler::Lease l = s.acquire(a, -1);
    l.note_rows(64, 1);
    clock.advance_ns(3 * kMs);
  }
  clock.advance_ns(1 * kMs);
  {
    DeviceScheduler::Lease l = s.acquire(b, -1);
    clock.advance_ns(2 * kMs);
    l.note_rows(0, 2);
  }
  const std::vector<DeviceIteration> it = s.iterations();
  ASSERT_EQ(it.size(), 2u);
  EXPECT_EQ(it[0].client, a);
  EXPECT_EQ(it[0].asked_ns, 0);
  EXPECT_EQ(it[0].granted_ns, 0);
  EXPECT_EQ(it[0].acquired_ns, 0);
  EXPECT_EQ(it[0].released_ns, 3 * kMs);
  EXPECT_EQ(it[0].prefill_rows, 64);
  EXPECT_EQ(it[0].decode_rows, 1);
  EXPECT_EQ(it[1].client, b);
  EXPECT_EQ(it[1].asked_ns, 4 * kMs);
  EXPECT_EQ(it[1].released_ns, 6 * kMs);
  EXPECT_EQ(it[1].prefill_rows, 0);
  EXPECT_EQ(it[1].decode_rows, 2);
  DeviceSchedulerOptions off;
  off.n_threads = 1;
  DeviceScheduler quiet(off);
  const auto c = quiet.add_client("c");
  { DeviceScheduler::Lease l = quiet.acquire(c, -1); }
  EXPECT_TRUE(quiet.iterations().empty());
}

TEST(DeviceSchedulerTest, SplitsDeviceTimeByWhatTheIterationsRan) {
  FakeClock clock(0);
  DeviceSchedulerOptions o;
  o.n_threads = 1;
  o.clock = &clock;
  DeviceScheduler s(o);
  const auto a = s.add_client("a");
  const auto run = [&](int64_t prefill, int64_t decode, int64_t ms) {
    DeviceScheduler::Lease l = s.acquire(a, -1);
    l.note_rows(prefill, decode);
    DeviceScheduler::Lease moved = std::move(l);  // the note travels with the lease
    clock.advance_ns(ms * kMs);
  };
  run(64, 1, 40);  // a prompt chunk beside a decode row
  run(0, 2, 5);
  run(0, 1, 4);
  run(0, 0, 7);    // nothing noted: neither class
  const DeviceClientStats st = s.stats()[0];
  EXPECT_EQ(st.grants, 4);
  EXPECT_EQ(st.busy_ns, 56 * kMs);
  EXPECT_EQ(st.prefill_grants, 1);
  EXPECT_EQ(st.prefill_rows, 65);
  EXPECT_EQ(st.prefill_held_ns, 40 * kMs);
  EXPECT_EQ(st.decode_grants, 2);
  EXPECT_EQ(st.decode_rows, 3);
  EXPECT_EQ(st.decode_held_ns, 9 * kMs);
}

// Holds the device with `holder` until `n` other clients are queued, then releases it and
// returns the order in which the waiters were granted.
std::vector<std::string> grant_order(DeviceScheduler& s, DeviceScheduler::ClientId holder,
                                     const std::vector<std::pair<DeviceScheduler::ClientId,
                                                                 int64_t>>& waiters) {
  std::mutex mu;
  std::vector<std::string> order;
  DeviceScheduler::Lease held = s.acquire(holder, -1);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < waiters.size(); ++i) {
    threads.emplace_back([&, i] {
      DeviceScheduler::Lease l = s.acquire(waiters[i].first, waiters[i].second);
      std::lock_guard lk(mu);
      order.push_back(s.stats()[static_cast<size_t>(waiters[i].first)].name);
    });
    // Queue them one by one so enqueue times are ordered.
    while (s.waiting() < static_cast<int>(i + 1)) std::this_thread::yield();
  }
  held.release();
  for (auto& t : threads) t.join();
  return order;
}

TEST(DeviceSchedulerTest, HandsOffToTheUrgentThenTheLeastServed) {
  FakeClock clock(1000 * kMs);
  DeviceSchedulerOptions o;
  o.n_threads = 1;
  o.clock = &clock;
  o.policy.urgent_slack_ns = 50 * kMs;
  DeviceScheduler s(o);
  const auto h = s.add_client("holder");
  const auto lazy = s.add_client("lazy");
  const auto busy = s.add_client("busy");
  const auto late = s.add_client("late");
  // Give "busy" some service first, so "lazy" is owed more.
  {
    DeviceScheduler::Lease l = s.acquire(busy, -1);
    clock.advance_ns(20 * kMs);
  }
  const int64_t now = clock.now_ns();
  const auto order =
      grant_order(s, h, {{busy, -1}, {lazy, -1}, {late, now + 10 * kMs}});
  EXPECT_EQ(order, (std::vector<std::string>{"late", "lazy", "busy"}));
  EXPECT_EQ(s.waiting(), 0);
}

TEST(DeviceSchedulerTest, ManyThreadsNeverOverlap) {
  DeviceSchedulerOptions o;
  o.n_threads = 2;
  DeviceScheduler s(o);
  std::atomic<int> inside{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < 4; ++c) {
    const auto id = s.add_client("c" + std::to_string(c), 1.0 + c);
    threads.emplace_back([&, id] {
      for (int i = 0; i < 200; ++i) {
        DeviceScheduler::Lease l = s.acquire(id, -1);
        if (inside.fetch_add(1) != 0) overlap = true;
        l.pool()->run([](int, int) {});
        inside.fetch_sub(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_FALSE(overlap.load());
  int64_t grants = 0;
  for (const auto& st : s.stats()) grants += st.grants;
  EXPECT_EQ(grants, 800);
}

}  // namespace device_scheduler_test
}  // namespace tessera::engine
