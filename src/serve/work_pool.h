// WorkPool: the threads that run the handlers' slow work (rendering a chat template, tokenizing a
// long text, embedding inputs, loading an adapter) so that the HTTP I/O threads only parse,
// dispatch and write: /health and every other route keep answering while that work runs. Work
// is queued by key (a model's name): each key runs at most `max_running_per_key` items at once,
// and keys take turns, so one model's slow or hostile work occupies at most that many threads
// and another model's requests find one free. Each key's queue is bounded: past it submit()
// refuses, and the route answers 429 with Retry-After (load, not a fault of the request).
// stop() sets the cancel flag (renders check it: jinja RenderOptions::cancel), drops queued work
// (its writers then answer 500 as they are dropped) and joins the threads.
// Thread-safety: submit() from any thread; stop() from one controlling thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tessera::serve {

struct WorkPoolOptions {
  int n_threads = 4;              // >= 1
  int max_running_per_key = 2;    // >= 1; at most n_threads
  int max_queued_per_key = 64;    // waiting items per key beyond which submit() refuses
};

class WorkPool {
 public:
  explicit WorkPool(WorkPoolOptions options);
  ~WorkPool();  // stop()
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  enum class Submit { kQueued, kFull, kStopped };
  // Queues `fn` to run on a pool thread under `key`. kFull: the key's queue is full; kStopped:
  // stop() was called. `fn` must not throw (a throw is logged and swallowed).
  Submit submit(const std::string& key, std::function<void()> fn);

  // Sets the cancel flag, drops what is queued, waits for what runs, joins. Idempotent.
  void stop();

  // Set by stop(); long work (renders) should check it. Lives as long as the pool.
  const std::atomic<bool>* cancel_flag() const { return &cancel_; }

  // Items queued or running, over all keys (for tests and metrics).
  int pending() const;

  const WorkPoolOptions& options() const { return options_; }

 private:
  struct Lane {
    std::deque<std::function<void()>> queue;
    int running = 0;
    bool ready = false;  // listed in ready_
  };
  void run_thread();
  void make_ready(const std::string& key, Lane& lane);  // under mu_

  WorkPoolOptions options_;
  std::atomic<bool> cancel_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::unordered_map<std::string, Lane> lanes_;
  std::deque<std::string> ready_;  // keys with queued work and room to run, in turn order
  int n_pending_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace tessera::serve
