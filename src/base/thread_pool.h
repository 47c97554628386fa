// ThreadPool: a persistent pool that runs one parallel region at a time over all its threads,
// the calling thread included (so a pool of N uses N cores, not N+1). Regions are short (one
// matrix product), so workers spin briefly before sleeping to keep the hand-off cheap.
// Pinning (a pool that owns the machine's cores, as the shared device's does): worker i stays on
// the i-th CPU of the process's affinity mask as it was at construction, and pin_caller() puts
// the thread about to run regions on the 0th. Only when the pool has exactly as many threads as
// the mask has CPUs: a pool of fewer cannot know which CPUs are free (two processes of -t 8 on a
// 64-core machine would both pin to the first 8); restrict the process (taskset) to pin those.
// Without it, when another thread takes over the pool (a different engine's, each iteration),
// the OS places it where it woke - measured on this 2-core VM, often beside the spinning worker:
// decode iterations after such a switch had a p90 of 3.3x their median (docs/SIMULATOR.md).
// Thread-safety: run() must be called from one thread at a time (the owner, e.g. the model's
// scheduler thread); it returns after every task has finished. pin_caller()/unpin_caller() act on
// the calling thread only.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tessera {

class ThreadPool {
 public:
  // `n_threads` >= 1 counts the caller; n_threads - 1 workers are started. `pin`: pin as above
  // when the affinity mask holds exactly n_threads CPUs (else, and off Linux, nothing is pinned).
  explicit ThreadPool(int n_threads, bool pin = false);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }
  bool pinned() const { return !cpus_.empty(); }
  // The calling thread onto the pool's first CPU / back to the whole mask of construction time.
  // No-ops unless pinned().
  void pin_caller() const;
  void unpin_caller() const;

  // Calls fn(thread_index, n_threads) once on each of the pool's threads and waits for all.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous chunks (multiples of `grain`, the last one shorter) and calls
  // fn(begin, end) for each chunk, balancing chunks over the threads. Chunks never overlap.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);


 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<int> cpus_;      // pinned: thread i's CPU
  std::vector<int> allowed_;   // pinned: the whole mask at construction
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace tessera
