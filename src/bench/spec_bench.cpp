#include "tessera/bench/spec_bench.h"

#include <algorithm>

#include "tessera/base/clock.h"
#include "tessera/engine/engine.h"

namespace tessera::bench {

namespace {

struct Stream {
  std::vector<int32_t> tokens;
  int64_t t_first = -1;
  int64_t t_end = -1;
  bool error = false;
  Status why;
};

Result<SpecRun> run_once(std::shared_ptr<model::Model> model,
                         std::shared_ptr<const model::Tokenizer> tokenizer,
                         const SpecBenchOptions& o, bool speculative,
                         std::vector<std::vector<int32_t>>* tokens_out) {
  engine::EngineOptions eo = o.engine;
  if (!speculative) eo.spec = engine::SpecOptions{};
  TS_ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> e,
                      engine::Engine::create(std::move(model), std::move(tokenizer), eo));
  const Clock* clock = real_clock();
  std::vector<Stream> streams(static_cast<size_t>(o.streams));
  const int64_t t0 = clock->now_ns();
  for (int32_t i = 0; i < o.streams; ++i) {
    engine::Request r;
    r.prompt = o.prompts[static_cast<size_t>(i) % o.prompts.size()];
    r.sampling = o.sampling;
    r.sampling.seed = o.sampling.seed + static_cast<uint64_t>(i);
    r.max_tokens = o.gen_tokens;
    r.ignore_eos = true;
    Stream* s = &streams[static_cast<size_t>(i)];
    TS_RETURN_IF_ERROR(e->submit(std::move(r), [s, clock](engine::Event&& ev) {
                          const int64_t now = clock->now_ns();
                          if (auto* t = std::get_if<engine::TokenEvent>(&ev.body)) {
                            if (s->t_first < 0) s->t_first = now;
                            s->tokens.push_back(t->token);
                          } else {
                            const auto& f = std::get<engine::FinishEvent>(ev.body);
                            s->t_end = now;
                            if (f.reason == engine::FinishReason::kError) {
                              s->error = true;
                              s->why = f.error;
                            }
                          }
                        }).status());
  }
  while (e->step()) {
  }
  const int64_t t1 = clock->now_ns();
  SpecRun run;
  run.speculative = speculative;
  std::vector<double> per_stream;
  for (const Stream& s : streams) {
    if (s.error) return s.why;
    run.output_tokens += static_cast<int64_t>(s.tokens.size());
    if (s.tokens.size() > 1 && s.t_end > s.t_first) {
      per_stream.push_back(static_cast<double>(s.tokens.size() - 1) /
                           (static_cast<double>(s.t_end - s.t_first) * 1e-9));
    }
  }
  run.seconds = static_cast<double>(t1 - t0) * 1e-9;
  run.output_tps = run.seconds > 0 ? static_cast<double>(run.output_tokens) / run.seconds : 0.0;
  run.decode_tps = per_stream.empty() ? 0.0 : summarize(per_stream).median;
  const engine::EngineStats st = e->stats();
  run.draft_tokens = st.spec_draft_tokens;
  run.accepted_tokens = st.spec_accepted_tokens;
  run.steps = st.iterations;
  tokens_out->clear();
  for (Stream& s : streams) tokens_out->push_back(std::move(s.tokens));
  return run;
}

}  // namespace

const char* default_spec_prompt() {
  return
    "Once upon a time, there was a little girl named Mia. Mia lived in a small house near a "
    "big forest with her mom, her dad and her dog, Max. Every morning, Mia and Max went for a "
    "walk to the river. They liked to look at the fish and throw sticks into the water.\nOne "
    "day, Mia saw a small bird sitting on a rock. The bird could not fly because its wing was "
    "hurt. Mia felt sad for the bird. She said, \"Don't worry, little bird. I will help "
    "you.\" She picked up the bird very gently and put it in her basket.\n\nHere is the same "
    "story again.\n\nOnce upon a time, there was a little girl named Mia.";
}

Result<SpecBenchResult> run_spec_bench(std::shared_ptr<model::Model> model,
                                       std::shared_ptr<const model::Tokenizer> tokenizer,
                                       const SpecBenchOptions& options) {
  SpecBenchOptions o = options;
  if (o.prompts.empty()) return invalid_argument("the speculation benchmark needs a prompt");
  if (o.streams < 1 || o.gen_tokens < 1 || o.reps < 1) {
    return invalid_argument("streams, generated tokens and repetitions must be >= 1");
  }
  if (o.engine.spec.method == engine::SpecMethod::kNone) {
    return invalid_argument("choose a speculation method to compare (--spec ngram|draft)");
  }
  size_t longest = 0;
  for (const auto& p : o.prompts) longest = std::max(longest, p.size());
  o.engine.max_running = std::max(o.engine.max_running, o.streams);
  if (o.engine.ctx_size <= 0) {
    o.engine.ctx_size = std::min<int64_t>(model->config().context_length,
                                          static_cast<int64_t>(longest) + o.gen_tokens + 1);
  }
  o.engine.max_waiting = std::max(o.engine.max_waiting, o.streams);
  SpecBenchResult result;
  for (int32_t rep = 0; rep < o.reps; ++rep) {
    SpecRun runs[2];
    std::vector<std::vector<int32_t>> tokens[2];
    const bool on_first = rep % 2 == 1;  // alternate which variant runs first
    for (int k = 0; k < 2; ++k) {
      const int on = (k == 0) == on_first ? 1 : 0;
      TS_ASSIGN_OR_RETURN(runs[on], run_once(model, tokenizer, o, on == 1, &tokens[on]));
    }
    // Greedy: the speculative run must give the plain run's tokens.
    if (o.sampling.temperature <= 0.0f) runs[1].same_tokens = tokens[1] == tokens[0];
    result.runs.push_back(runs[on_first ? 1 : 0]);
    result.runs.push_back(runs[on_first ? 0 : 1]);
    if (runs[0].decode_tps > 0) result.decode_ratios.push_back(runs[1].decode_tps / runs[0].decode_tps);
    if (runs[0].output_tps > 0) result.output_ratios.push_back(runs[1].output_tps / runs[0].output_tps);
  }
  return result;
}

}  // namespace tessera::bench
