#include "tessera/serve/work_pool.h"

#include <algorithm>
#include <exception>

#include "tessera/base/log.h"

namespace tessera::serve {

WorkPool::WorkPool(WorkPoolOptions options) : options_(options) {
  options_.n_threads = std::max(1, options_.n_threads);
  options_.max_running_per_key =
      std::clamp(options_.max_running_per_key, 1, options_.n_threads);
  options_.max_queued_per_key = std::max(1, options_.max_queued_per_key);
  threads_.reserve(static_cast<size_t>(options_.n_threads));
  for (int i = 0; i < options_.n_threads; ++i) threads_.emplace_back([this] { run_thread(); });
}

WorkPool::~WorkPool() { stop(); }

void WorkPool::make_ready(const std::string& key, Lane& lane) {
  if (!lane.ready && !lane.queue.empty() && lane.running < options_.max_running_per_key) {
    lane.ready = true;
    ready_.push_back(key);
    cv_.notify_one();
  }
}

WorkPool::Submit WorkPool::submit(const std::string& key, std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (stopping_) return Submit::kStopped;
  Lane& lane = lanes_[key];
  if (static_cast<int>(lane.queue.size()) >= options_.max_queued_per_key) return Submit::kFull;
  lane.queue.push_back(std::move(fn));
  ++n_pending_;
  make_ready(key, lane);
  return Submit::kQueued;
}

void WorkPool::run_thread() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || !ready_.empty(); });
    if (stopping_) return;
    const std::string key = std::move(ready_.front());
    ready_.pop_front();
    Lane& lane = lanes_[key];
    lane.ready = false;
    std::function<void()> fn = std::move(lane.queue.front());
    lane.queue.pop_front();
    ++lane.running;
    make_ready(key, lane);  // more of this key may run beside it: it goes to the back
    lock.unlock();
    try {
      fn();
    } catch (const std::exception& e) {
      log_warn("serve: work for '{}' threw: {}", key, e.what());
    }
    fn = nullptr;  // its captures (a writer) go before the lock is taken again
    lock.lock();
    --n_pending_;
    Lane& after = lanes_[key];
    --after.running;
    if (after.queue.empty() && after.running == 0 && !after.ready) {
      lanes_.erase(key);
    } else {
      make_ready(key, after);
    }
  }
}

void WorkPool::stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
    cancel_.store(true);
    for (auto& [key, lane] : lanes_) {
      for (auto& fn : lane.queue) dropped.push_back(std::move(fn));
      n_pending_ -= static_cast<int>(lane.queue.size());
      lane.queue.clear();
    }
    ready_.clear();
  }
  cv_.notify_all();
  dropped.clear();  // outside the lock: dropping a writer answers its request
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

int WorkPool::pending() const {
  std::lock_guard lock(mu_);
  return n_pending_;
}

}  // namespace tessera::serve
