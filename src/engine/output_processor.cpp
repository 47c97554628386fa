#include "tessera/engine/output_processor.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tessera::engine {

std::string_view finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "unknown";
}

void top_logprobs(std::span<const float> logits, float log_z, int32_t k,
                  std::vector<TokenLogprob>& top) {
  top.clear();
  if (k <= 0) return;
  std::vector<std::pair<float, int32_t>> best;  // min-heap of the k largest
  auto worse = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };
  for (int32_t i = 0; i < static_cast<int32_t>(logits.size()); ++i) {
    const std::pair<float, int32_t> c{logits[static_cast<size_t>(i)], i};
    if (static_cast<int32_t>(best.size()) < k) {
      best.push_back(c);
      std::push_heap(best.begin(), best.end(), worse);
    } else if (worse(c, best.front())) {
      std::pop_heap(best.begin(), best.end(), worse);
      best.back() = c;
      std::push_heap(best.begin(), best.end(), worse);
    }
  }
  std::sort_heap(best.begin(), best.end(), worse);
  for (const auto& [v, id] : best) top.push_back({id, v - log_z});
}

float log_sum_exp(std::span<const float> x) {
  float max = -INFINITY;
  for (float v : x) max = std::max(max, v);
  double sum = 0.0;
  for (float v : x) sum += std::exp(static_cast<double>(v - max));
  return max + static_cast<float>(std::log(sum));
}

int64_t OutputProcessor::budget(const Sequence& s) const {
  return std::min<int64_t>(s.request.max_tokens - s.n_generated(),
                           ctx_size_ - static_cast<int64_t>(s.tokens.size()));
}

OutputProcessor::TokenOutput OutputProcessor::on_token(Sequence& s, int32_t t,
                                                       std::span<const float> raw_logits) const {
  TokenOutput out;
  if (!s.request.ignore_eos && tokenizer_.is_end_of_generation(t)) {
    out.finish = FinishReason::kStop;
    return out;
  }
  TokenEvent& ev = out.event.emplace();
  ev.token = t;
  ev.piece = tokenizer_.token_to_piece(t);
  if (const int32_t k = s.request.n_logprobs; k >= 0) {
    const float log_z = log_sum_exp(raw_logits);
    top_logprobs(raw_logits, log_z, k, ev.top);
    ev.logprob = raw_logits[static_cast<size_t>(t)] - log_z;
  }
  ev.text = s.text.push(ev.piece);
  // A structured output whose value is closed is done (only whitespace could follow).
  if (s.text.stopped() || (s.constraint && s.constraint->closed())) {
    out.finish = FinishReason::kStop;
  } else if (s.n_generated() >= s.request.max_tokens ||
             static_cast<int64_t>(s.tokens.size()) >= ctx_size_) {
    out.finish = FinishReason::kLength;
  }
  return out;
}

FinishEvent OutputProcessor::finish(Sequence& s, FinishReason reason, Status error,
                                    int64_t now_ns) const {
  FinishEvent f;
  f.reason = reason;
  if (reason == FinishReason::kStop || reason == FinishReason::kLength) f.text = s.text.finish();
  f.usage = {s.n_prompt, std::max(0, s.n_generated()), s.n_cached};
  const auto since = [&](int64_t t) {
    return t < 0 ? 0.0 : static_cast<double>(t - s.submit_ns) * 1e-9;
  };
  f.timings = {since(s.first_scheduled_ns), since(s.first_token_ns), since(now_ns)};
  f.error = std::move(error);
  return f;
}

}  // namespace tessera::engine
