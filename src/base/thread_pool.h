// ThreadPool: a persistent pool that runs one parallel region at a time over all its threads,
// the calling thread included (so a pool of N uses N cores, not N+1). Regions are short (one
// matrix product), so workers spin briefly before sleeping to keep the hand-off cheap.
// parallel_for hands out chunks dynamically (an atomic ticket): a worker that the OS has not
// scheduled yet does not hold the region up, the threads that run take its chunks.
// Thread-safety: run() must be called from one thread at a time (the owner, e.g. the model's
// scheduler thread); it returns after every task has finished.
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
  // `n_threads` >= 1 counts the caller; n_threads - 1 workers are started.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return n_threads_; }

  // Calls fn(thread_index, n_threads) once on each of the pool's threads and waits for all.
  void run(const std::function<void(int, int)>& fn);

  // Splits [0, n) into contiguous chunks of `grain` (the last one shorter) and calls
  // fn(begin, end) once per chunk, on whichever thread claims it first. Chunks never overlap;
  // which thread runs a chunk is not deterministic, so fn's results must not depend on it.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker_loop(int index);
  // Claims and runs chunks of the chunked job of generation `gen` (n_chunks chunks) until none
  // are left or another job has started.
  void run_chunks(uint64_t gen, uint32_t n_chunks);

  int n_threads_;
  std::vector<std::thread> workers_;
  const std::function<void(int, int)>* job_ = nullptr;  // run(): one call per thread
  // parallel_for(): chunks claimed through ticket_ = (generation << 32) | next chunk index.
  const std::function<void(int64_t, int64_t)>* chunk_fn_ = nullptr;
  int64_t chunk_n_ = 0;
  int64_t chunk_grain_ = 1;
  uint32_t chunk_count_ = 0;
  std::atomic<uint64_t> ticket_{0};
  std::atomic<uint32_t> chunks_done_{0};
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
};

// Number of hardware threads, at least 1.
int hardware_threads();

}  // namespace tessera
