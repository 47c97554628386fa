#include "tessera/bench/null_backend.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <queue>
#include <string>
#include <thread>

namespace tessera::bench {

Result<NullBackendOptions> parse_null_options(std::string_view text) {
  NullBackendOptions o;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string part(text.substr(pos, end - pos));
    pos = end + 1;
    const size_t eq = part.find('=');
    char* stop = nullptr;
    const double v = eq == std::string::npos ? NAN : std::strtod(part.c_str() + eq + 1, &stop);
    const std::string key = part.substr(0, eq);
    if (eq == std::string::npos || *stop != '\0' || !(v >= 0)) {
      return invalid_argument("bad null backend option '" + part +
                              "': expected ttft_ms=MS, itl_ms=MS or chunk=TOKENS");
    }
    if (key == "ttft_ms") {
      o.ttft_s = v * 1e-3;
    } else if (key == "itl_ms") {
      o.itl_s = v * 1e-3;
    } else if (key == "chunk" && v >= 1) {
      o.tokens_per_chunk = static_cast<int32_t>(v);
    } else {
      return invalid_argument("unknown null backend option '" + part +
                              "': expected ttft_ms, itl_ms or chunk (>= 1)");
    }
  }
  return o;
}

// Plays delayed streams: a min-heap of (due time, stream) served by one thread.
struct NullBackend::Timer {
  struct Stream {
    int64_t due_ns;
    uint64_t id;
    QueryObserver* observer;
    int32_t left;  // tokens still to send
    int32_t prompt;
    int32_t total;
    bool operator>(const Stream& o) const { return due_ns > o.due_ns; }
  };
  const Clock* clock;
  NullBackendOptions options;
  std::mutex mu;
  std::condition_variable cv;
  std::priority_queue<Stream, std::vector<Stream>, std::greater<Stream>> heap;
  bool stop = false;
  std::thread thread;

  void loop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop) {
      if (heap.empty()) {
        cv.wait(lock);
        continue;
      }
      const int64_t wait = heap.top().due_ns - clock->now_ns();
      if (wait > 0) {
        cv.wait_for(lock, std::chrono::nanoseconds(wait));
        continue;
      }
      Stream s = heap.top();
      heap.pop();
      lock.unlock();
      if (s.left > 0) {
        const int32_t n = std::min(s.left, options.tokens_per_chunk);
        s.observer->on_chunk(s.id, n);
        s.left -= n;
      }
      const bool done = s.left == 0;
      if (done) s.observer->on_complete(s.id, CompletionInfo{s.prompt, s.total});
      lock.lock();
      if (!done) {
        s.due_ns += static_cast<int64_t>(options.itl_s * 1e9);
        heap.push(s);
      }
    }
  }
};

NullBackend::NullBackend(NullBackendOptions options, const Clock* clock)
    : options_(options), clock_(clock ? clock : real_clock()) {
  if (options_.ttft_s > 0 || options_.itl_s > 0) {
    timer_ = std::make_unique<Timer>();
    timer_->clock = clock_;
    timer_->options = options_;
    timer_->thread = std::thread([t = timer_.get()] { t->loop(); });
  }
}

NullBackend::~NullBackend() {
  if (timer_) {
    {
      std::lock_guard<std::mutex> lock(timer_->mu);
      timer_->stop = true;
    }
    timer_->cv.notify_one();
    timer_->thread.join();
  }
}

nlohmann::json NullBackend::describe() const {
  return {{"kind", "null"},
          {"ttft_ms", options_.ttft_s * 1e3},
          {"itl_ms", options_.itl_s * 1e3},
          {"tokens_per_chunk", options_.tokens_per_chunk}};
}

void NullBackend::issue(const Query& q, QueryObserver* observer) {
  const int32_t n = std::max(1, q.sample->max_output_tokens);
  if (!timer_) {
    for (int32_t left = n; left > 0; left -= options_.tokens_per_chunk) {
      observer->on_chunk(q.id, std::min(left, options_.tokens_per_chunk));
    }
    observer->on_complete(q.id, CompletionInfo{q.sample->input_tokens, n});
    return;
  }
  {
    std::lock_guard<std::mutex> lock(timer_->mu);
    timer_->heap.push({clock_->now_ns() + static_cast<int64_t>(options_.ttft_s * 1e9), q.id,
                       observer, n, q.sample->input_tokens, n});
  }
  timer_->cv.notify_one();
}

}  // namespace tessera::bench
