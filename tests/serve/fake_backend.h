// A scripted ModelBackend for the serve tests: each request streams "w0 ", "w1 ", ... from its
// own thread (one token per `token_delay`), honours cancel(), and can be told to refuse submits.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tessera/model/synth.h"
#include "tessera/serve/model_backend.h"

namespace tessera::serve::testing {

class FakeBackend final : public ModelBackend {
 public:
  FakeBackend() {
    auto t = model::make_tokenizer(model::synthetic_vocab(512));
    TS_CHECK(t.is_ok());
    tokenizer_ = std::move(t).value();
  }
  ~FakeBackend() override {
    {
      std::lock_guard lock(mu_);
      for (auto& [id, flag] : cancel_flags_) flag->store(true);
    }
    // The last owner of this backend may be a request's sink (the server's generation call keeps
    // its backend), destroyed with the closure of the request's own thread once the body has
    // returned: that thread cannot join itself, and has nothing left to do here but exit.
    for (auto& t : threads_) {
      if (t.get_id() == std::this_thread::get_id()) {
        t.detach();
      } else {
        t.join();
      }
    }
  }

  void fail_submits_with(Status s) {
    std::lock_guard lock(mu_);
    submit_error_ = std::move(s);
  }
  void set_token_delay(std::chrono::milliseconds d) { token_delay_ = d; }
  // Each later request streams these pieces (at most max_tokens of them) and finishes "stop"
  // after the last, instead of "w0 ", "w1 ", ... finishing "length".
  void set_script(std::vector<std::string> pieces) {
    std::lock_guard lock(mu_);
    script_ = std::move(pieces);
  }

  Result<engine::RequestId> submit(engine::Request request, engine::EventSink sink) override {
    std::lock_guard lock(mu_);
    if (!submit_error_.is_ok()) return submit_error_;
    const engine::RequestId id = ++next_id_;
    auto flag = std::make_shared<std::atomic<bool>>(false);
    cancel_flags_[id] = flag;
    requests_.push_back(request);
    active_.fetch_add(1);
    const auto delay = token_delay_.load();
    threads_.emplace_back([this, id, flag, delay, script = script_, request = std::move(request),
                           sink = std::move(sink)] {
      engine::FinishEvent fin;
      fin.reason = engine::FinishReason::kLength;
      fin.usage.prompt_tokens = static_cast<int32_t>(request.prompt.size());
      fin.usage.cached_tokens = 0;
      const bool scripted = !script.empty();
      const int32_t n = scripted ? std::min<int32_t>(request.max_tokens,
                                                     static_cast<int32_t>(script.size()))
                                 : request.max_tokens;
      if (scripted && n == static_cast<int32_t>(script.size())) fin.reason = engine::FinishReason::kStop;
      for (int32_t i = 0; i < n; ++i) {
        if (flag->load()) {
          fin.reason = engine::FinishReason::kCancelled;
          break;
        }
        engine::TokenEvent t;
        t.token = 100 + i % 50;
        t.text = scripted ? script[static_cast<size_t>(i)] : "w" + std::to_string(i) + " ";
        t.piece = t.text;
        t.logprob = -0.5f;
        for (int32_t k = 0; k < std::max(0, request.n_logprobs); ++k) t.top.push_back({10 + k, -1.0f - k});
        sink(engine::Event{id, std::move(t)});
        fin.usage.completion_tokens++;
        if (delay.count() > 0) std::this_thread::sleep_for(delay);
      }
      fin.timings = {0.001, 0.002, 0.003};
      sink(engine::Event{id, std::move(fin)});
      active_.fetch_sub(1);
    });
    return id;
  }

  void cancel(engine::RequestId id) override {
    std::lock_guard lock(mu_);
    cancelled_.insert(id);
    if (auto it = cancel_flags_.find(id); it != cancel_flags_.end()) it->second->store(true);
  }

  engine::EngineStats stats() const override {
    engine::EngineStats s;
    s.running = active_.load();
    s.kv_blocks_total = 64;
    s.kv_blocks_used = 4 * active_.load();
    s.prefix_queries = 4;
    s.prefix_hits = 1;
    return s;
  }
  const model::Tokenizer& tokenizer() const override { return *tokenizer_; }
  int64_t context_length() const override { return 256; }

  std::vector<engine::Request> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  std::set<engine::RequestId> cancelled() const {
    std::lock_guard lock(mu_);
    return cancelled_;
  }
  int active() const { return active_.load(); }

 private:
  std::unique_ptr<model::Tokenizer> tokenizer_;
  mutable std::mutex mu_;
  Status submit_error_;
  std::atomic<std::chrono::milliseconds> token_delay_{std::chrono::milliseconds(0)};
  engine::RequestId next_id_ = 0;
  std::map<engine::RequestId, std::shared_ptr<std::atomic<bool>>> cancel_flags_;
  std::vector<engine::Request> requests_;
  std::vector<std::string> script_;
  std::set<engine::RequestId> cancelled_;
  std::atomic<int> active_{0};
  std::vector<std::thread> threads_;
};

}  // namespace tessera::serve::testing
