#include "tessera/base/thread_pool.h"

#include <algorithm>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include "tessera/base/check.h"

namespace tessera {
namespace {
constexpr int kSpinIterations = 20000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

// The calling thread onto these CPUs (best effort: a refusal leaves it where it is).
void set_affinity(const std::vector<int>& cpus) {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cpus) CPU_SET(c, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
#else
  (void)cpus;
#endif
}

std::vector<int> allowed_cpus() {
  std::vector<int> out;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return out;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) out.push_back(c);
  }
#endif
  return out;
}
}  // namespace

int hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(int n_threads, bool pin) : n_threads_(std::max(1, n_threads)) {
  if (pin) {
    std::vector<int> allowed = allowed_cpus();
    if (static_cast<int>(allowed.size()) == n_threads_) {
      cpus_ = allowed;
      allowed_ = std::move(allowed);
    }
  }
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
    pending_.store(n_threads_ - 1);
    generation_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_all();
  fn(0, n_threads_);
  // Spin briefly (regions are short), then yield so an oversubscribed machine still progresses.
  for (int i = 0; pending_.load(std::memory_order_acquire) != 0; ++i) {
    if (i < kSpinIterations) {
      cpu_relax();
    } else {
      std::this_thread::yield();
    }
  }
}

void ThreadPool::pin_caller() const {
  if (pinned()) set_affinity({cpus_[0]});
}

void ThreadPool::unpin_caller() const {
  if (pinned()) set_affinity(allowed_);
}

void ThreadPool::worker_loop(int index) {
  if (pinned()) set_affinity({cpus_[static_cast<size_t>(index)]});
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins < kSpinIterations) {
      cpu_relax();
      if (++spins % 1024 == 0) std::this_thread::yield();
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return generation_.load() != seen; });
    }
    const std::function<void(int, int)>* job;
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = generation_.load();
      if (stop_.load()) return;
      job = job_;
    }
    (*job)(index, n_threads_);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
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
  run([&](int t, int nt) {
    // Static contiguous split over chunk indices: deterministic and cache-friendly.
    const int64_t c0 = n_chunks * t / nt;
    const int64_t c1 = n_chunks * (t + 1) / nt;
    if (c0 < c1) fn(c0 * grain, std::min(n, c1 * grain));
  });
}

}  // namespace tessera
