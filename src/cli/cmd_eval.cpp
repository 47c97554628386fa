// `tessera eval perplexity|kl|imatrix`: a model's perplexity over a text file, its KL divergence
// from a base model (bench/perplexity.h), and the importance matrix of its weight matrices
// (model/activation_stats.h, model/imatrix_file.h).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "common.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/perplexity.h"
#include "tessera/model/activation_stats.h"
#include "tessera/model/imatrix_file.h"

namespace tessera::cli {
namespace {

struct EvalArgs {
  std::string model, tokenizer, text;
  std::string base;         // kl: the reference model
  std::string base_logits;  // kl: its log-probabilities saved by perplexity --save-logits
  std::string save_logits;  // perplexity: where to save them
  std::string out;          // imatrix: the file written
  bool covariance = false;  // imatrix: also each matrix's whole x x^T (error-feedback quantizing)
  int32_t ctx = 512;
  int32_t batch = 512;
  int64_t chunks = 0;
  int threads = 0;
  bool json = false;
};

int run_kl(const EvalArgs& a) {
  auto text = read_text(a.text);
  if (!text.is_ok()) return fail(text.status());
  if (a.base.empty() == a.base_logits.empty()) return fail("pass --base MODEL or --base-logits FILE");
  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  const int threads = a.threads > 0 ? a.threads : hardware_threads();
  ThreadPool pool(threads);
  bench::PerplexityOptions o;
  o.ctx = a.ctx;
  o.batch = a.batch;
  o.max_chunks = a.chunks;
  o.pool = &pool;
  Result<bench::KlResult> r = Status(ErrorCode::kInvalidArgument, "unset");
  if (!a.base_logits.empty()) {
    r = bench::kl_from_saved(*loaded->model, *loaded->tokenizer, *text, a.base_logits, o);
  } else {
    auto base = load_model_and_tokenizer(a.base, a.tokenizer);
    if (!base.is_ok()) return fail(base.status().with_context("--base"));
    r = bench::kl_divergence(*base->model, *loaded->model, *base->tokenizer, *text, o);
  }
  if (!r.is_ok()) return fail(r.status());
  if (a.json) {
    nlohmann::json j = {{"environment", bench::describe_environment(threads)},
                        {"base", a.base.empty() ? a.base_logits : a.base},
                        {"model", a.model},
                        {"text", a.text},
                        {"ctx", r->ctx},
                        {"chunks", r->n_chunks},
                        {"scored", r->n_scored},
                        {"mean_kl", r->mean_kl},
                        {"median_kl", r->median_kl},
                        {"p99_kl", r->p99_kl},
                        {"max_kl", r->max_kl},
                        {"top1_agreement", r->top1_agreement},
                        {"base_perplexity", r->base_ppl},
                        {"perplexity", r->ppl},
                        {"delta_perplexity", r->ppl - r->base_ppl},
                        {"seconds", r->seconds}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("kl: %s against %s on %s: %lld chunks of %d, %lld positions\n", a.model.c_str(),
              (a.base.empty() ? a.base_logits : a.base).c_str(), a.text.c_str(), static_cast<long long>(r->n_chunks), r->ctx,
              static_cast<long long>(r->n_scored));
  std::printf("Mean KLD %.6f  median %.6f  p99 %.6f  max %.6f  same top token %.2f%%\n", r->mean_kl,
              r->median_kl, r->p99_kl, r->max_kl, 100.0 * r->top1_agreement);
  std::printf("PPL %.4f (base %.4f, delta %+.4f)  %.1f s\n", r->ppl, r->base_ppl,
              r->ppl - r->base_ppl, r->seconds);
  return 0;
}

int run_perplexity(const EvalArgs& a) {
  auto read = read_text(a.text);
  if (!read.is_ok()) return fail(read.status());
  const std::string& text = *read;
  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  const int threads = a.threads > 0 ? a.threads : hardware_threads();
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
  std::optional<bench::SavedLogitsWriter> saved;
  if (!a.save_logits.empty()) {
    auto w = bench::SavedLogitsWriter::create(a.save_logits);
    if (!w.is_ok()) return fail(w.status());
    saved.emplace(std::move(w).value());
    o.on_scored = [&](std::span<const float> lp, int32_t next) { saved->add(lp, next); };
  }
  auto r = bench::perplexity(*loaded->model, *loaded->tokenizer, text, o);
  if (!r.is_ok()) return fail(r.status());
  if (saved) {
    Status s = saved->finish(static_cast<int32_t>(loaded->model->config().n_vocab), r->ctx,
                             r->n_chunks, r->tokens_hash);
    if (!s.is_ok()) return fail(s);
  }
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

int run_imatrix(const EvalArgs& a) {
  auto text = read_text(a.text);
  if (!text.is_ok()) return fail(text.status());
  auto loaded = load_model_and_tokenizer(a.model, a.tokenizer);
  if (!loaded.is_ok()) return fail(loaded.status());
  const int threads = a.threads > 0 ? a.threads : hardware_threads();
  const auto t0 = std::chrono::steady_clock::now();
  auto stats = collect_calibration(
      *loaded, *text, {threads, a.ctx, a.chunks, a.covariance, [&](int64_t c, int64_t n) {
                         const double s = std::chrono::duration<double>(
                                              std::chrono::steady_clock::now() - t0).count();
                         std::fprintf(stderr, "[%lld/%lld] %.1f s\n", static_cast<long long>(c + 1),
                                      static_cast<long long>(n), s);
                       }});
  if (!stats.is_ok()) return fail(stats.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  stats->dataset = a.text;
  Status w = model::write_imatrix(*stats, a.out);
  if (!w.is_ok()) return fail(w);
  if (a.json) {
    nlohmann::json tensors = nlohmann::json::object();
    for (const auto& [name, t] : stats->tensors) {
      double sum = 0;
      for (double v : t.sum_sq) sum += v;
      tensors[name] = {{"columns", t.sum_sq.size()},
                       {"count", t.count},
                       {"mean_square", sum / static_cast<double>(t.sum_sq.size()) /
                                           static_cast<double>(std::max<int64_t>(1, t.count))}};
    }
    nlohmann::json j = {{"environment", bench::describe_environment(threads)},
                        {"model", a.model},
                        {"text", a.text},
                        {"out", a.out},
                        {"ctx", stats->chunk_size},
                        {"chunks", stats->n_chunks},
                        {"tensors", tensors},
                        {"seconds", seconds}};
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::printf("imatrix: %s on %s: %lld chunks of %d tokens, %zu matrices -> %s (%.1f s)\n",
              a.model.c_str(), a.text.c_str(), static_cast<long long>(stats->n_chunks),
              stats->chunk_size, stats->tensors.size(), a.out.c_str(), seconds);
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
  p->add_option("--save-logits", a->save_logits,
                "Save the scored positions' log-probabilities (f16) for `eval kl --base-logits`");
  p->callback([&run, a] { run = [a] { return run_perplexity(*a); }; });

  CLI::App* k = eval->add_subcommand(
      "kl", "KL divergence of a model's next-token distributions from a base model's (e.g. a "
            "quantization from its f32 or f16 original), mean/median/p99, top-token agreement, "
            "delta PPL");
  k->add_option("--base", a->base, "The reference model (both run here)");
  k->add_option("--base-logits", a->base_logits,
                "Or its log-probabilities saved once by `eval perplexity --save-logits` (ctx and "
                "chunks come from the file)");
  k->add_option("--model,-m", a->model, "The model compared with it")->required();
  k->add_option("--tokenizer", a->tokenizer, "Tokenizer file (default: the base model's own)");
  k->add_option("--text,-f", a->text, "Text file")->required();
  k->add_option("--ctx,-c", a->ctx, "Tokens per chunk (the second half of each is scored)")
      ->capture_default_str();
  k->add_option("--batch,-b", a->batch, "Rows per forward step")->capture_default_str();
  k->add_option("--chunks", a->chunks, "Evaluate at most this many chunks (0: all)")
      ->capture_default_str();
  k->add_option("--threads,-t", a->threads, "Threads (0: all cores)")->capture_default_str();
  k->add_flag("--json", a->json, "Print a JSON record");
  k->callback([&run, a] { run = [a] { return run_kl(*a); }; });

  CLI::App* im = eval->add_subcommand(
      "imatrix", "Importance matrix of a model's weight matrices over a calibration text (the "
                 "mean square of each input column), for `tessera quantize --imatrix`; written "
                 "in llama.cpp's GGUF imatrix format");
  im->add_option("--model,-m", a->model, "Model file (GGUF or llama2.c)")->required();
  im->add_option("--tokenizer", a->tokenizer, "Tokenizer file (default: the model's own)");
  im->add_option("--text,-f", a->text, "Calibration text file")->required();
  im->add_option("--ctx,-c", a->ctx, "Tokens per chunk")->capture_default_str();
  im->add_option("--chunks", a->chunks, "Run at most this many chunks (0: all)")
      ->capture_default_str();
  im->add_option("--threads,-t", a->threads, "Threads (0: all cores)")->capture_default_str();
  im->add_option("-o,--out", a->out, "Output imatrix file (GGUF)")->required();
  im->add_flag("--covariance", a->covariance,
               "Also store each matrix's whole input second moments (<name>.in_cov, n x n; "
               "llama.cpp skips them): `tessera quantize --imatrix` then carries rounding errors "
               "across columns (GPTQ-style error feedback) instead of weighting columns alone");
  im->add_flag("--json", a->json, "Print a JSON record");
  im->callback([&run, a] { run = [a] { return run_imatrix(*a); }; });
}

}  // namespace tessera::cli
