// Trace replay: arrival times and lengths recorded from production, in three public formats:
//   azure     Azure LLM inference CSV   TIMESTAMP,ContextTokens,GeneratedTokens (wall-clock times)
//   mooncake  Mooncake (Kimi) JSONL     {"timestamp" ms, "input_length", "output_length",
//                                        "hash_ids": [...]} with 512-token prefix blocks
//   splitwise Vidur/Splitwise CSV       arrived_at (s),num_prefill_tokens,num_decode_tokens
// Replay turns a trace into samples and arrival times. Mooncake prompts are built block by block:
// block content is a deterministic function of its hash id, so requests that share hash ids
// share exactly those prompt prefixes (as token ids with a tokenizer, as text without).
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/query_sample_library.h"
#include "tessera/bench/synthetic_prompts.h"

namespace tessera::bench {

enum class TraceFormat { kAzure, kMooncake, kSplitwise };

inline constexpr int32_t kMooncakeBlockTokens = 512;  // tokens per hash id in Mooncake's traces

std::string_view trace_format_name(TraceFormat f);
// "azure", "mooncake", "splitwise" (also "vidur").
Result<TraceFormat> parse_trace_format(std::string_view name);
// By extension and first line: .jsonl -> mooncake; a CSV header with TIMESTAMP -> azure, with
// arrived_at -> splitwise. Errors: kNotFound, kInvalidArgument when it cannot tell.
Result<TraceFormat> detect_trace_format(const std::string& path);

struct TraceEntry {
  double t_s = 0;  // from the trace's first entry
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  std::vector<int64_t> hash_ids;  // mooncake only
};

// Reads at most `max_entries` entries (0: all). Times are made relative to the first entry.
// Errors: kNotFound, kCorruptData naming the line and what was expected.
Result<std::vector<TraceEntry>> load_trace(const std::string& path, TraceFormat format,
                                           int64_t max_entries = 0);

struct ReplayOptions {
  double time_scale = 1.0;        // divide trace times by this (> 1 compresses: replays faster)
  int32_t block_tokens = kMooncakeBlockTokens;  // tokens per hash id in the trace
  int32_t scaled_block_tokens = 0;  // > 0: each hash block becomes this many tokens and prompt
                                    // lengths scale alike: the same sharing, less prefill
  int32_t max_input_tokens = 0;   // clip prompts (0: no clip); prefix sharing is kept
  int32_t max_output_tokens = 0;  // clip outputs (0: no clip)
  uint64_t seed = 0;              // content of non-shared parts
};

struct Replay {
  InMemoryLibrary library;    // sample i is trace entry i
  std::vector<double> times_s;  // arrival of sample i, scaled
};
Replay build_replay(const std::vector<TraceEntry>& entries, const ReplayOptions& options,
                    const PromptSynthesizer& synth);

// Seconds since 1970 of "YYYY-MM-DD HH:MM:SS[.fraction]" (UTC). Errors: kInvalidArgument.
Result<double> parse_timestamp(std::string_view text);

}  // namespace tessera::bench
