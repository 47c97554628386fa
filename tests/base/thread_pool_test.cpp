#include "tessera/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "test_util.h"

namespace tessera {
namespace thread_pool_test {

TEST(ThreadPool, RunCallsEveryThreadOnce) {
  for (int n : {1, 2, 3, 4}) {
    ThreadPool pool(n);
    std::vector<std::atomic<int>> calls(n);
    for (int rep = 0; rep < 100; ++rep) {
      pool.run([&](int t, int nt) {
        EXPECT_EQ(nt, n);
        calls[t].fetch_add(1);
      });
    }
    for (auto& c : calls) EXPECT_EQ(c.load(), 100);
  }
}

TEST(ThreadPool, ParallelForCoversRangeExactlyOnce) {
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 7, 16, 17, 1000, 1001}) {
    for (int64_t grain : {1, 4, 16, 5000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      pool.parallel_for(n, grain, [&](int64_t b, int64_t e) {
        EXPECT_LE(b, e);
        for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)].fetch_add(1);
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1) << "n=" << n << " grain=" << grain;
    }
  }
}

TEST(ThreadPool, ManyShortRegionsDoNotDeadlock) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int i = 0; i < 2000; ++i) pool.run([&](int t, int) { sum.fetch_add(t); });
  EXPECT_EQ(sum.load(), 2000 * (0 + 1 + 2 + 3));
}

#if defined(__linux__)
using testing::affinity_of_this_thread;

TEST(ThreadPool, PinnedPoolKeepsEachThreadOnItsCpuAndGivesTheCallerItsMaskBack) {
  const std::vector<int> before = affinity_of_this_thread();
  const auto n = static_cast<int>(before.size());
  ThreadPool pool(n, /*pin=*/true);
  ASSERT_TRUE(pool.pinned());
  std::vector<std::vector<int>> seen(static_cast<size_t>(n));
  pool.pin_caller();
  for (int i = 0; i < 50; ++i) {
    pool.run([&](int t, int) { seen[static_cast<size_t>(t)] = affinity_of_this_thread(); });
  }
  for (int t = 0; t < n; ++t) {
    EXPECT_EQ(seen[static_cast<size_t>(t)], std::vector<int>{before[static_cast<size_t>(t)]})
        << "thread " << t;
  }
  pool.unpin_caller();
  EXPECT_EQ(affinity_of_this_thread(), before);
  // More threads than CPUs, or fewer (which CPUs would be free?): nothing is pinned, the
  // caller's mask is left alone.
  ThreadPool over(n + 1, /*pin=*/true);
  EXPECT_FALSE(over.pinned());
  over.pin_caller();
  EXPECT_EQ(affinity_of_this_thread(), before);
  if (n > 1) {
    ThreadPool under(n - 1, /*pin=*/true);
    EXPECT_FALSE(under.pinned());
  }
}
#endif

}  // namespace thread_pool_test
}  // namespace tessera
