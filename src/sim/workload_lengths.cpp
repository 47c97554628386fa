#include "tessera/sim/workload_lengths.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "tessera/bench/trace.h"

namespace tessera::sim {

RequestLengths clip_lengths(int32_t input_tokens, int32_t output_tokens, int32_t max_input_tokens,
                            int32_t max_output_tokens) {
  const auto clip = [](int32_t v, int32_t max) {
    return std::max(1, max > 0 ? std::min(v, max) : v);
  };
  return {clip(input_tokens, max_input_tokens), clip(output_tokens, max_output_tokens)};
}

Result<LengthSampler> LengthSampler::make(const LengthSource& s) {
  if (s.max_input_tokens < 0 || s.max_output_tokens < 0) {
    return invalid_argument(fmt::format("length clips must be >= 0 (0: none), got {} and {}",
                                        s.max_input_tokens, s.max_output_tokens));
  }
  LengthSampler out;
  std::string clips;
  if (s.max_input_tokens > 0 || s.max_output_tokens > 0) {
    clips = fmt::format(", clipped to {}+{}", s.max_input_tokens, s.max_output_tokens);
  }
  if (s.trace_path.empty()) {
    if (s.fixed_input_tokens <= 0 || s.fixed_output_tokens <= 0) {
      return invalid_argument(fmt::format("fixed lengths must be > 0, got {} input and {} output",
                                          s.fixed_input_tokens, s.fixed_output_tokens));
    }
    out.pairs_.push_back(clip_lengths(s.fixed_input_tokens, s.fixed_output_tokens,
                                      s.max_input_tokens, s.max_output_tokens));
    out.description_ = fmt::format("fixed {}+{} tokens", out.pairs_[0].input_tokens,
                                   out.pairs_[0].output_tokens);
    return out;
  }
  const auto context = "lengths from " + s.trace_path;
  auto format = bench::detect_trace_format(s.trace_path);
  if (!format.is_ok()) return format.status().with_context(context);
  auto entries = bench::load_trace(s.trace_path, *format);
  if (!entries.is_ok()) return entries.status().with_context(context);
  if (entries->empty()) return corrupt_data(context + ": the trace has no entries");
  out.pairs_.reserve(entries->size());
  for (const auto& e : *entries) {
    out.pairs_.push_back(
        clip_lengths(e.input_tokens, e.output_tokens, s.max_input_tokens, s.max_output_tokens));
  }
  out.description_ = fmt::format("{} {} ({} pairs{})", bench::trace_format_name(*format),
                                 std::filesystem::path(s.trace_path).filename().string(),
                                 out.pairs_.size(), clips);
  return out;
}

double LengthSampler::mean_input_tokens() const {
  double sum = 0.0;
  for (const auto& p : pairs_) sum += p.input_tokens;
  return pairs_.empty() ? 0.0 : sum / static_cast<double>(pairs_.size());
}

double LengthSampler::mean_output_tokens() const {
  double sum = 0.0;
  for (const auto& p : pairs_) sum += p.output_tokens;
  return pairs_.empty() ? 0.0 : sum / static_cast<double>(pairs_.size());
}

}  // namespace tessera::sim
