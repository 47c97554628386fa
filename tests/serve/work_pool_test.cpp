// WorkPool: keys take turns, one key never holds more than its share of the threads (so a
// model's slow or hostile work leaves threads for the others), a full queue refuses, and stop()
// cancels, drops what waits and joins.
#include "tessera/serve/work_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace tessera::serve {
namespace work_pool_test {

using namespace std::chrono_literals;

// A gate the blocked items wait on.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock lock(mu);
    cv.wait(lock, [this] { return open; });
  }
  void release() {
    {
      std::lock_guard lock(mu);
      open = true;
    }
    cv.notify_all();
  }
};

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = 5000ms) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(WorkPool, OneKeyNeverTakesEveryThread) {
  WorkPool pool({.n_threads = 4, .max_running_per_key = 2, .max_queued_per_key = 64});
  Gate gate;
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(pool.submit("hostile", [&] {
                int now = ++running;
                int seen = most.load();
                while (now > seen && !most.compare_exchange_weak(seen, now)) {
                }
                gate.wait();
                --running;
              }),
              WorkPool::Submit::kQueued);
  }
  ASSERT_TRUE(eventually([&] { return running.load() == 2; }));
  // Another key runs at once, though "hostile" has six more items waiting.
  std::atomic<bool> other_ran{false};
  ASSERT_EQ(pool.submit("other", [&] { other_ran = true; }), WorkPool::Submit::kQueued);
  EXPECT_TRUE(eventually([&] { return other_ran.load(); }));
  EXPECT_EQ(most.load(), 2);
  gate.release();
  EXPECT_TRUE(eventually([&] { return pool.pending() == 0; }));
  EXPECT_EQ(most.load(), 2);
}

TEST(WorkPool, AFullQueueRefusesAndAStoppedPoolToo) {
  WorkPool pool({.n_threads = 1, .max_running_per_key = 1, .max_queued_per_key = 2});
  Gate gate;
  std::atomic<bool> started{false};
  ASSERT_EQ(pool.submit("k", [&] {
              started = true;
              gate.wait();
            }),
            WorkPool::Submit::kQueued);
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  std::atomic<int> ran{0};
  EXPECT_EQ(pool.submit("k", [&] { ++ran; }), WorkPool::Submit::kQueued);
  EXPECT_EQ(pool.submit("k", [&] { ++ran; }), WorkPool::Submit::kQueued);
  EXPECT_EQ(pool.submit("k", [&] { ++ran; }), WorkPool::Submit::kFull);
  gate.release();
  EXPECT_TRUE(eventually([&] { return ran.load() == 2; }));
  pool.stop();
  EXPECT_EQ(pool.submit("k", [&] { ++ran; }), WorkPool::Submit::kStopped);
}

TEST(WorkPool, StopCancelsRunningWorkAndDropsQueuedWork) {
  WorkPool pool({.n_threads = 1, .max_running_per_key = 1, .max_queued_per_key = 8});
  const std::atomic<bool>* cancel = pool.cancel_flag();
  std::atomic<bool> started{false};
  ASSERT_EQ(pool.submit("k", [&] {
              started = true;
              while (!cancel->load()) std::this_thread::sleep_for(1ms);  // a render checking it
            }),
            WorkPool::Submit::kQueued);
  auto token = std::make_shared<int>(0);
  std::atomic<int> ran{0};
  ASSERT_EQ(pool.submit("k", [&, token] { ++ran; }), WorkPool::Submit::kQueued);
  ASSERT_TRUE(eventually([&] { return started.load(); }));
  const auto t0 = std::chrono::steady_clock::now();
  pool.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(token.use_count(), 1);  // the dropped item (and what it held) is gone
}

}  // namespace work_pool_test
}  // namespace tessera::serve
