// `tessera generate`: load a model, encode a prompt, stream a continuation.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "spec_args.h"
#include "tessera/base/clock.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/engine.h"
#include "tessera/engine/generator.h"
#include "tessera/model/lora_adapter.h"

namespace tessera::cli {
namespace {

struct GenerateArgs {
  std::string model;
  std::string tokenizer;
  std::string prompt;
  int32_t max_tokens = 128;
  engine::SamplingParams sampling;
  int64_t seed = -1;
  int threads = 0;
  bool json = false;
  bool no_special = false;
  std::string lora;  // LoRA adapter (PEFT directory or GGUF LoRA) applied to every token
  std::string device = "cpu";
  SpecArgs spec;
};

nlohmann::json timings_json(const engine::GenerateResult& r) {
  const double pp = r.prefill_seconds > 0 ? r.prompt_tokens.size() / r.prefill_seconds : 0.0;
  const double tg = r.decode_seconds > 0 ? r.decode_steps / r.decode_seconds : 0.0;
  return {{"prefill_ms", r.prefill_seconds * 1e3},
          {"decode_ms", r.decode_seconds * 1e3},
          {"decode_steps", r.decode_steps},
          {"prompt_tokens_per_second", pp},
          {"decode_tokens_per_second", tg}};
}

// One sequence through the serving engine: what it generated and when.
struct EngineRun {
  std::vector<int32_t> tokens;
  std::string text;
  engine::FinishEvent fin;
  double prefill_s = 0, decode_s = 0;
  engine::EngineStats stats;
  engine::EngineOptions options;
};

// With speculation, one sequence runs through the serving engine (scheduler, drafter, verifier)
// on this thread; the output is the same as without for greedy decoding. Streams the text to
// stdout unless --json.
Result<EngineRun> run_on_engine(const GenerateArgs& a, std::shared_ptr<model::Model> model,
                                std::shared_ptr<const model::Tokenizer> tokenizer,
                                engine::SpecOptions spec, const std::vector<int32_t>& prompt,
                                const engine::SamplingParams& sampling) {
  engine::EngineOptions eo;
  eo.n_threads = a.threads;
  eo.max_running = 1;
  eo.spec = std::move(spec);
  auto created = engine::Engine::create(model, tokenizer, eo);
  if (!created.is_ok()) return created.status().with_context("creating the engine");
  engine::Engine& e = **created;
  engine::Request r;
  r.prompt = prompt;
  r.sampling = sampling;
  r.max_tokens = a.max_tokens;
  EngineRun run;
  const Clock* clock = real_clock();
  const int64_t t0 = clock->now_ns();
  int64_t t_first = -1;
  int64_t t_end = -1;
  auto id = e.submit(r, [&](engine::Event&& ev) {
    if (auto* t = std::get_if<engine::TokenEvent>(&ev.body)) {
      if (t_first < 0) t_first = clock->now_ns();
      run.tokens.push_back(t->token);
      run.text += t->text;
      if (!a.json) {
        std::fwrite(t->text.data(), 1, t->text.size(), stdout);
        std::fflush(stdout);
      }
    } else {
      run.fin = std::get<engine::FinishEvent>(ev.body);
      t_end = clock->now_ns();
      run.text += run.fin.text;
      if (!a.json) std::fwrite(run.fin.text.data(), 1, run.fin.text.size(), stdout);
    }
  });
  if (!id.is_ok()) return id.status();
  while (e.step()) {
  }
  if (run.fin.reason == engine::FinishReason::kError) return run.fin.error;
  run.stats = e.stats();
  run.options = e.options();
  run.prefill_s = t_first > 0 ? static_cast<double>(t_first - t0) * 1e-9 : 0.0;
  run.decode_s = t_first > 0 ? static_cast<double>(t_end - t_first) * 1e-9 : 0.0;
  return run;
}

int run_generate_speculative(const GenerateArgs& a, std::shared_ptr<model::Model> model,
                             std::shared_ptr<const model::Tokenizer> tokenizer,
                             engine::SpecOptions spec, std::vector<int32_t> prompt,
                             const engine::SamplingParams& sampling) {
  auto run = run_on_engine(a, std::move(model), std::move(tokenizer), std::move(spec), prompt, sampling);
  if (!run.is_ok()) return fail(run.status());
  const engine::EngineStats& st = run->stats;
  const size_t n = run->tokens.size();
  const double tg = run->decode_s > 0 && n > 1 ? static_cast<double>(n - 1) / run->decode_s : 0.0;
  const double rate = st.spec_draft_tokens > 0
                          ? static_cast<double>(st.spec_accepted_tokens) / static_cast<double>(st.spec_draft_tokens)
                          : 0.0;
  const double per_step = st.iterations > 1 ? static_cast<double>(n - 1) /
                                                  static_cast<double>(st.iterations - 1)
                                            : 0.0;
  const std::string method(engine::spec_method_name(run->options.spec.method));
  if (a.json) {
    nlohmann::json j = {
        {"model", a.model},
        {"prompt", a.prompt},
        {"prompt_tokens", prompt},
        {"tokens", run->tokens},
        {"text", run->text},
        {"stop_reason", run->fin.reason == engine::FinishReason::kStop ? "stop" : "length"},
        {"seed", sampling.seed},
        {"threads", run->options.n_threads},
        {"timings", {{"prefill_ms", run->prefill_s * 1e3}, {"decode_ms", run->decode_s * 1e3},
                     {"decode_tokens_per_second", tg}}},
        {"speculation", {{"method", method},
                         {"draft_tokens", st.spec_draft_tokens},
                         {"accepted_tokens", st.spec_accepted_tokens},
                         {"acceptance_rate", rate},
                         {"tokens_per_step", per_step}}}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  std::printf("\n");
  std::fprintf(stderr,
               "tessera: prompt %zu tokens in %.1f ms; generated %zu tokens, decode %.1f tokens/s "
               "(%d threads); speculation %s: %lld of %lld drafts accepted (%.0f%%), %.2f tokens "
               "per step\n",
               prompt.size(), run->prefill_s * 1e3, n, tg, run->options.n_threads, method.c_str(),
               static_cast<long long>(st.spec_accepted_tokens),
               static_cast<long long>(st.spec_draft_tokens), rate * 100.0, per_step);
  return 0;
}

// --lora FILE: the adapter on the model as id 0. Errors: with context "--lora FILE".
Status apply_lora(model::Model& model, const std::string& path) {
  auto adapter = model::load_lora_adapter(path, model.file());
  if (!adapter.is_ok()) return adapter.status().with_context("--lora " + path);
  return model.set_adapter(0, std::make_shared<const model::LoraAdapter>(std::move(*adapter)))
      .with_context("--lora " + path);
}

void print_generated(const GenerateArgs& a, const engine::GenerateResult& r, uint64_t seed,
                     int threads) {
  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"prompt", a.prompt},
                        {"prompt_tokens", r.prompt_tokens},
                        {"tokens", r.tokens},
                        {"text", r.text},
                        {"stop_reason", engine::stop_reason_name(r.stop_reason)},
                        {"seed", seed},
                        {"threads", threads},
                        {"timings", timings_json(r)}};
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", s.c_str());
    return;
  }
  std::printf("\n");
  const auto t = timings_json(r);
  std::fprintf(stderr,
               "tessera: prompt %zu tokens in %.1f ms (%.1f tokens/s); generated %zu tokens, "
               "decode %.1f tokens/s (%d threads)\n",
               r.prompt_tokens.size(), r.prefill_seconds * 1e3,
               t["prompt_tokens_per_second"].get<double>(), r.tokens.size(),
               t["decode_tokens_per_second"].get<double>(), threads);
}

int run_generate(const GenerateArgs& a) {
  auto device = parse_device(a.device);
  if (!device.is_ok()) return fail(device.status());
  auto target = load_spec_target(a.model, a.tokenizer, a.spec, *device);
  if (!target.is_ok()) return fail(target.status());
  std::shared_ptr<model::Model> model = std::move(target->model);
  std::shared_ptr<const model::Tokenizer> tokenizer = std::move(target->tokenizer);
  engine::SpecOptions& spec = target->spec;

  engine::GenerateOptions opts;
  opts.max_tokens = a.max_tokens;
  opts.sampling = a.sampling;
  opts.sampling.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed)
                                   : static_cast<uint64_t>(std::chrono::system_clock::now()
                                                               .time_since_epoch()
                                                               .count());
  std::vector<int32_t> prompt = tokenizer->encode(a.prompt, !a.no_special, false);
  if (prompt.empty()) return fail("the prompt encodes to no tokens (pass a non-empty --prompt)");
  if (!a.lora.empty()) {
    if (spec.method != engine::SpecMethod::kNone) {
      return fail("--lora with --spec is not supported yet");
    }
    if (Status st = apply_lora(*model, a.lora); !st.is_ok()) return fail(st);
    opts.adapter_id = 0;
  }
  if (spec.method != engine::SpecMethod::kNone) {
    return run_generate_speculative(a, std::move(model), std::move(tokenizer), std::move(spec),
                                    std::move(prompt), opts.sampling);
  }

  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  engine::Generator gen(*model, tokenizer.get(), &pool);
  engine::TextCallback stream;
  if (!a.json) {
    stream = [](std::string_view s) {
      std::fwrite(s.data(), 1, s.size(), stdout);
      std::fflush(stdout);
      return true;
    };
  }
  auto r = gen.generate(prompt, opts, stream);
  if (!r.is_ok()) return fail(r.status());
  print_generated(a, *r, opts.sampling.seed, pool.size());
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, RunFn& run) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate a continuation of a prompt");
  cmd->add_option("--model,-m", args->model, "Model file (GGUF or llama2.c .bin)")->required();
  cmd->add_option("--tokenizer", args->tokenizer,
                  "Tokenizer file (llama2.c tokenizer .bin, or a GGUF with a vocabulary)");
  cmd->add_option("--prompt,-p", args->prompt, "Prompt text")->required();
  cmd->add_option("--max-tokens,-n", args->max_tokens, "Tokens to generate")
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--temperature", args->sampling.temperature, "Sampling temperature; 0 = greedy")
      ->capture_default_str();
  cmd->add_option("--top-k", args->sampling.top_k, "Keep the k most likely tokens; 0 = all")
      ->capture_default_str();
  cmd->add_option("--top-p", args->sampling.top_p, "Nucleus sampling mass")->capture_default_str();
  cmd->add_option("--min-p", args->sampling.min_p, "Drop tokens below min-p x the top probability")
      ->capture_default_str();
  cmd->add_option("--repeat-penalty", args->sampling.repetition_penalty,
                  "Repetition penalty (1 = off)")
      ->capture_default_str();
  cmd->add_option("--frequency-penalty", args->sampling.frequency_penalty, "Frequency penalty");
  cmd->add_option("--presence-penalty", args->sampling.presence_penalty, "Presence penalty");
  cmd->add_option("--penalty-last-n", args->sampling.penalty_last_n,
                  "Recent tokens the penalties consider")
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Random seed (default: from the clock)");
  cmd->add_option("--threads,-t", args->threads, "Threads (default: all cores)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of streaming text");
  cmd->add_flag("--no-special", args->no_special, "Do not add BOS/EOS to the prompt");
  cmd->add_option("--lora", args->lora,
                  "LoRA adapter applied to every token (PEFT directory or GGUF LoRA), unmerged");
  add_spec_options(cmd, &args->spec);
  add_device_option(cmd, &args->device);
  cmd->callback([&run, args] { run = [args] { return run_generate(*args); }; });
}

}  // namespace tessera::cli
