#include "tessera/bench/serve_workload.h"

#include <algorithm>

#include "tessera/bench/synthetic_prompts.h"
#include "tessera/bench/trace.h"

namespace tessera::bench {
namespace serve_workload {

Status replay_trace(const ServeBenchOptions& a, PromptSynthesizer& synth, ServeWorkload& w) {
  TraceFormat f;
  if (a.trace_format.empty()) {
    TS_ASSIGN_OR_RETURN(f, detect_trace_format(a.trace));
  } else {
    TS_ASSIGN_OR_RETURN(f, parse_trace_format(a.trace_format));
  }
  TS_ASSIGN_OR_RETURN(auto entries, load_trace(a.trace, f, a.num_prompts));
  ReplayOptions ro;
  ro.time_scale = a.time_scale;
  ro.max_input_tokens = a.max_input_len;
  ro.scaled_block_tokens = a.trace_block_tokens;
  ro.max_output_tokens = a.max_output_len;
  ro.seed = a.seed;
  Replay r = build_replay(entries, ro, synth);
  w.library = std::move(r.library);
  w.trace_times_s = std::move(r.times_s);
  w.description = {{"source", "trace"}, {"path", a.trace},
                   {"format", trace_format_name(f)}, {"time_scale", a.time_scale},
                   {"entries", entries.size()}, {"max_input_len", a.max_input_len},
                   {"trace_block_tokens", a.trace_block_tokens},
                   {"max_output_len", a.max_output_len}};
  return Status::ok();
}

}  // namespace serve_workload

Result<ServeWorkload> make_serve_workload(const ServeBenchOptions& a,
                                          const model::Tokenizer* tokenizer) {
  ServeWorkload w;
  PromptSynthesizer synth(tokenizer);
  TS_ASSIGN_OR_RETURN(LengthSpec out_len, parse_length_spec(a.output_len));
  if (!a.trace.empty()) {
    TS_RETURN_IF_ERROR(serve_workload::replay_trace(a, synth, w));
  } else if (!a.prompts.empty()) {
    TS_ASSIGN_OR_RETURN(w.library, load_prompt_file(a.prompts, out_len, a.seed, tokenizer));
    w.description = {{"source", "prompts"}, {"path", a.prompts}, {"output_len", a.output_len}};
  } else {
    SyntheticOptions so;
    TS_ASSIGN_OR_RETURN(so.input_len, parse_length_spec(a.input_len));
    so.output_len = out_len;
    so.n_prompts = a.library_size > 0 ? a.library_size : std::min<int64_t>(a.num_prompts, 4096);
    so.seed = a.seed;
    w.library = make_synthetic_library(so, synth);
    w.description = {{"source", "synthetic"}, {"input_len", format_length_spec(so.input_len)},
                     {"output_len", format_length_spec(so.output_len)},
                     {"prompts", so.n_prompts},
                     {"exact_token_ids", tokenizer != nullptr}};
  }
  return w;
}

}  // namespace tessera::bench
