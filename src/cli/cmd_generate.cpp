// `tessera generate`: load a model, encode a prompt, stream a continuation.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "tessera/base/thread_pool.h"
#include "tessera/engine/generator.h"

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

int run_generate(const GenerateArgs& a) {
  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  auto& [model, tokenizer] = *loaded;

  engine::GenerateOptions opts;
  opts.max_tokens = a.max_tokens;
  opts.sampling = a.sampling;
  opts.sampling.seed = a.seed >= 0 ? static_cast<uint64_t>(a.seed)
                                   : static_cast<uint64_t>(std::chrono::system_clock::now()
                                                               .time_since_epoch()
                                                               .count());
  std::vector<int32_t> prompt = tokenizer->encode(a.prompt, !a.no_special, false);
  if (prompt.empty()) return fail("the prompt encodes to no tokens (pass a non-empty --prompt)");

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

  if (a.json) {
    nlohmann::json j = {{"model", a.model},
                        {"prompt", a.prompt},
                        {"prompt_tokens", r->prompt_tokens},
                        {"tokens", r->tokens},
                        {"text", r->text},
                        {"stop_reason", engine::stop_reason_name(r->stop_reason)},
                        {"seed", opts.sampling.seed},
                        {"threads", pool.size()},
                        {"timings", timings_json(*r)}};
    std::string s = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::printf("%s\n", s.c_str());
  } else {
    std::printf("\n");
    const auto t = timings_json(*r);
    std::fprintf(stderr,
                 "tessera: prompt %zu tokens in %.1f ms (%.1f tokens/s); generated %zu tokens, "
                 "decode %.1f tokens/s (%d threads)\n",
                 r->prompt_tokens.size(), r->prefill_seconds * 1e3,
                 t["prompt_tokens_per_second"].get<double>(), r->tokens.size(),
                 t["decode_tokens_per_second"].get<double>(), pool.size());
  }
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
  cmd->callback([&run, args] { run = [args] { return run_generate(*args); }; });
}

}  // namespace tessera::cli
