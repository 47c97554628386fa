#include "tessera/base/thread_pool.h"

#include <algorithm>

#include "tessera/base/check.h"

namespace tessera {
namespace {
constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// Spins briefly (the other threads are usually about to finish), then sleeps on the atomic
// (futex) until it holds `want`; the thread that makes it so calls notify_one.
template <typename T>
void wait_until_equal(std::atomic<T>& a, T want) {
  for (int i = 0; i < kSpinIterations; ++i) {
    if (a.load(std::memory_order_acquire) == want) return;
    cpu_relax();
  }
  for (T v = a.load(std::memory_order_acquire); v != want; v = a.load(std::memory_order_acquire)) {
    a.wait(v, std::memory_order_acquire);
  }
}
}  // namespace

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  workers_.reserve(n_threads_ - 1);
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::run(const std::function<void(int, int)>& fn) {
  if (n_threads_ == 1) {
    fn(0, 1);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    job_ = &fn;
    chunk_fn_ = nullptr;
    pending_.store(n_threads_ - 1);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  fn(0, n_threads_);
  wait_until_equal(pending_, 0);
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    // Spin (regions follow each other closely), then sleep on the condition variable. No
    // sched_yield: on a busy machine it hands the core to other processes for a whole slice.
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      cpu_relax();
      ++spins;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
    }
    const std::function<void(int, int)>* job;
    bool chunked = false;
    uint32_t n_chunks = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = generation_.load();
      if (stop_.load()) return;
      job = job_;
      chunked = chunk_fn_ != nullptr;
      n_chunks = chunk_count_;
    }
    if (chunked) {
      run_chunks(seen, n_chunks);  // no check-in: the caller waits for chunks, not for workers
      continue;
    }
    (*job)(index, n_threads_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::run_chunks(uint64_t gen, uint32_t n_chunks) {
  const uint64_t tag = gen << 32;
  for (;;) {
    uint64_t t = ticket_.load(std::memory_order_acquire);
    for (;;) {
      // Another job's ticket (this one is over) or no chunks left: done here.
      if ((t & ~uint64_t{0xffffffff}) != tag) return;
      if ((t & 0xffffffff) >= n_chunks) return;
      if (ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel,
                                        std::memory_order_acquire)) {
        break;
      }
    }
    // The claim keeps the job alive: the caller returns only after every chunk is done.
    const int64_t c = static_cast<int64_t>(t & 0xffffffff);
    const int64_t begin = c * chunk_grain_;
    (*chunk_fn_)(begin, std::min(chunk_n_, begin + chunk_grain_));
    if (chunks_done_.fetch_add(1, std::memory_order_acq_rel) + 1 == n_chunks) {
      chunks_done_.notify_one();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  const int64_t n_chunks = (n + grain - 1) / grain;
  if (n_threads_ == 1 || n_chunks == 1) {
    fn(0, n);
    return;
  }
  TS_CHECK(n_chunks < (int64_t{1} << 32));
  uint64_t gen = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    chunk_fn_ = &fn;
    chunk_n_ = n;
    chunk_grain_ = grain;
    chunk_count_ = static_cast<uint32_t>(n_chunks);
    chunks_done_.store(0, std::memory_order_relaxed);
    gen = (generation_.load() + 1) & 0xffffffff;
    ticket_.store(gen << 32, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  run_chunks(gen, static_cast<uint32_t>(n_chunks));
  wait_until_equal(chunks_done_, static_cast<uint32_t>(n_chunks));  // chunks others claimed
}

}  // namespace tessera
