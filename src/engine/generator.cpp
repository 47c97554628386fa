#include "tessera/engine/generator.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::engine {

std::string_view stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kLength: return "length";
    case StopReason::kEndOfGeneration: return "stop";
    case StopReason::kCallback: return "cancelled";
  }
  return "unknown";
}

size_t complete_utf8_prefix(std::string_view s) {
  // Look back at most 3 bytes for the start of a sequence that is cut off.
  const size_t n = s.size();
  for (size_t back = 1; back <= std::min<size_t>(3, n); ++back) {
    const auto c = static_cast<unsigned char>(s[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t len = 1;
    if ((c & 0xE0) == 0xC0) len = 2;
    else if ((c & 0xF0) == 0xE0) len = 3;
    else if ((c & 0xF8) == 0xF0) len = 4;
    return len > back ? n - back : n;
  }
  return n;
}

Generator::Generator(model::Model& model, const model::Tokenizer* tokenizer, ThreadPool* pool,
                     const Clock* clock)
    : model_(model), tokenizer_(tokenizer), pool_(pool), clock_(clock ? clock : real_clock()) {}

Result<GenerateResult> Generator::generate(std::span<const int32_t> prompt,
                                           const GenerateOptions& o, const TextCallback& on_text) {
  TS_RETURN_IF_ERROR(o.sampling.validate());
  if (prompt.empty()) return invalid_argument("the prompt has no tokens");
  if (o.max_tokens < 0) return invalid_argument("max_tokens must be >= 0");
  const auto& cfg = model_.config();
  const int64_t n_ctx = static_cast<int64_t>(prompt.size()) + o.max_tokens;
  if (n_ctx > cfg.context_length) {
    return out_of_range(fmt::format("prompt ({} tokens) plus max_tokens ({}) exceeds the model's "
                                    "context of {} tokens",
                                    prompt.size(), o.max_tokens, cfg.context_length));
  }
  TS_ASSIGN_OR_RETURN(model::KvCache kv, model::KvCache::create(cfg, 1, n_ctx, o.kv_dtype));

  GenerateResult r;
  r.prompt_tokens.assign(prompt.begin(), prompt.end());
  std::vector<float> logits(static_cast<size_t>(cfg.n_vocab));
  model::Batch batch;

  const int64_t t0 = clock_->now_ns();
  const int64_t chunk = std::max(1, o.prefill_chunk);
  for (size_t start = 0; start < prompt.size(); start += static_cast<size_t>(chunk)) {
    batch.clear();
    const size_t end = std::min(prompt.size(), start + static_cast<size_t>(chunk));
    for (size_t i = start; i < end; ++i) {
      batch.add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size(), o.adapter_id);
    }
    TS_RETURN_IF_ERROR(model_.forward(batch, kv, logits, pool_));
  }
  const int64_t t1 = clock_->now_ns();
  r.prefill_seconds = static_cast<double>(t1 - t0) * 1e-9;
  r.last_prompt_logits = logits;

  Sampler sampler(o.sampling);
  std::vector<int32_t> history = r.prompt_tokens;
  std::string pending;  // bytes not yet emitted (incomplete UTF-8)
  int64_t t_first = t1;
  for (int32_t i = 0; i < o.max_tokens; ++i) {
    const int32_t next = sampler.sample(logits, history);
    r.tokens.push_back(next);
    history.push_back(next);
    if (o.stop_at_end_of_generation && tokenizer_ != nullptr &&
        tokenizer_->is_end_of_generation(next)) {
      r.stop_reason = StopReason::kEndOfGeneration;
      break;
    }
    if (tokenizer_ != nullptr) {
      pending += tokenizer_->token_to_piece(next);
      const size_t n = complete_utf8_prefix(pending);
      if (n > 0) {
        r.text.append(pending, 0, n);
        const bool go_on = !on_text || on_text(std::string_view(pending).substr(0, n));
        pending.erase(0, n);
        if (!go_on) {
          r.stop_reason = StopReason::kCallback;
          break;
        }
      }
    }
    if (i + 1 == o.max_tokens) break;  // no forward needed for a token we will not extend
    batch.clear();
    batch.add(next, static_cast<int32_t>(history.size() - 1), 0, true, o.adapter_id);
    if (i == 0) t_first = clock_->now_ns();
    TS_RETURN_IF_ERROR(model_.forward(batch, kv, logits, pool_));
    ++r.decode_steps;
  }
  if (!pending.empty()) {  // flush an incomplete tail as-is
    r.text += pending;
    if (on_text) on_text(pending);
  }
  r.decode_seconds = static_cast<double>(clock_->now_ns() - t_first) * 1e-9;
  return r;
}

}  // namespace tessera::engine
