// `tessera eval perplexity`: a model's perplexity over a text file (bench/perplexity.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "commands.h"
#include "common.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/perplexity.h"

namespace tessera::cli {
namespace {

struct EvalArgs {
  std::string model, tokenizer, text;
  int32_t ctx = 512;
  int32_t batch = 512;
  int64_t chunks = 0;
  int threads = 0;
  bool json = false;
};

int run_perplexity(const EvalArgs& a) {
  std::ifstream in(a.text, std::ios::binary);
  if (!in) return fail("cannot read the text file " + a.text);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  const int threads = a.threads > 0 ? a.threads
                                    : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  ThreadPool pool(threads);
  bench::PerplexityOptions o;
  o.ctx = a.ctx;
  o.batch = a.batch;
  o.max_chunks = a.chunks;
  o.pool = &pool;
  if (!a.json) {
    o.progress = [](int64_t c, int64_t n, double ppl) {
      std::fprintf(stderr, "[%lld/%lld] %.4f\n", static_cast<long long>(c + 1),
                   static_cast<long long>(n), ppl);
    };
  }
  auto r = bench::perplexity(*loaded->model, *loaded->tokenizer, text, o);
  if (!r.is_ok()) return fail(r.status());
  if (a.json) {
    nlohmann::json j = {{"environment", bench::describe_environment(threads)},
                        {"model", a.model},
                        {"text", a.text},
                        {"ctx", r->ctx},
                        {"tokens", r->n_tokens},
                        {"chunks", r->n_chunks},
                        {"scored", r->n_scored},
                        {"perplexity", r->ppl},
                        {"perplexity_stderr", r->ppl_stderr},
                        {"mean_nll", r->mean_nll},
                        {"running_perplexity", r->running_ppl},
                        {"seconds", r->seconds},
                        {"tokens_per_second", r->tokens_per_second}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("perplexity: %s on %s: %lld tokens, %lld chunks of %d, %lld scored\n",
              a.model.c_str(), a.text.c_str(), static_cast<long long>(r->n_tokens),
              static_cast<long long>(r->n_chunks), r->ctx, static_cast<long long>(r->n_scored));
  std::printf("Final estimate: PPL = %.4f +/- %.5f  (%.1f s, %.0f tokens/s)\n", r->ppl,
              r->ppl_stderr, r->seconds, r->tokens_per_second);
  return 0;
}

}  // namespace

void add_eval_command(CLI::App& app, RunFn& run) {
  CLI::App* eval = app.add_subcommand("eval", "Measure what a model (or a quantization) does to its outputs");
  eval->require_subcommand(1);
  auto a = std::make_shared<EvalArgs>();
  CLI::App* p = eval->add_subcommand(
      "perplexity", "Perplexity over a text file, by llama.cpp's chunking (so the numbers compare)");
  p->add_option("--model,-m", a->model, "Model file (GGUF or llama2.c)")->required();
  p->add_option("--tokenizer", a->tokenizer, "Tokenizer file (default: the model's own)");
  p->add_option("--text,-f", a->text, "Text file")->required();
  p->add_option("--ctx,-c", a->ctx, "Tokens per chunk (the second half of each is scored)")
      ->capture_default_str();
  p->add_option("--batch,-b", a->batch, "Rows per forward step")->capture_default_str();
  p->add_option("--chunks", a->chunks, "Evaluate at most this many chunks (0: all)")
      ->capture_default_str();
  p->add_option("--threads,-t", a->threads, "Threads (0: all cores)")->capture_default_str();
  p->add_flag("--json", a->json, "Print a JSON record (with a `perplexity` field)");
  p->callback([&run, a] { run = [a] { return run_perplexity(*a); }; });
}

}  // namespace tessera::cli
