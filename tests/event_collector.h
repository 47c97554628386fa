// Collects one engine request's events (tokens, then its finish) for tests that submit through
// an engine or a fleet and wait; shared with the sink so it outlives the request.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "tessera/engine/engine.h"

namespace tessera::testing {

struct Collector {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int32_t> tokens;
  engine::FinishEvent finish;
  bool done = false;

  static engine::EventSink sink(const std::shared_ptr<Collector>& c) {
    return [c](engine::Event&& ev) {
      std::lock_guard<std::mutex> lock(c->mu);
      if (auto* t = std::get_if<engine::TokenEvent>(&ev.body)) {
        c->tokens.push_back(t->token);
      } else {
        c->finish = std::get<engine::FinishEvent>(ev.body);
        c->done = true;
        c->cv.notify_all();
      }
    };
  }
  // True once the finish arrived within `timeout`.
  bool wait(std::chrono::seconds timeout = std::chrono::seconds(60)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, [this] { return done; });
  }
};

}  // namespace tessera::testing
