// tessera train: pretrains a llama model from scratch on a text file and writes it as GGUF (with
// its tokenizer), which every other command loads.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "tessera/base/thread_pool.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/synth.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/pretrain.h"

namespace tessera::cli {
namespace {

struct TrainArgs {
  std::string text, out, vocab;
  int64_t vocab_size = 512;
  train::PretrainOptions o;
  double val_fraction = 0.05;
  int threads = 0;
  bool json = false;
  bool quiet = false;
};

std::string clock_string(double s) {
  const auto t = static_cast<int64_t>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

int run_train(TrainArgs a) {
  std::ifstream in(a.text, std::ios::binary);
  if (!in) return fail("cannot read --text '" + a.text + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();

  // The tokenizer: a vocab GGUF's, or a generated SentencePiece-style one (bytes, letters,
  // common pieces) of --vocab-size tokens.
  model::Metadata vocab;
  if (!a.vocab.empty()) {
    auto f = model::open_model_file(a.vocab);
    if (!f.is_ok()) return fail(f.status().with_context("--vocab"));
    vocab = f->metadata;
  } else {
    if (a.vocab_size < 512) return fail("--vocab-size must be at least 512");
    vocab = model::synthetic_vocab(a.vocab_size);
  }
  auto tok = model::make_tokenizer(vocab);
  if (!tok.is_ok()) return fail(tok.status().with_context("tokenizer"));
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> tokens = (*tok)->encode(text, /*add_special=*/false, /*parse_special=*/false);
  const double tokenize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  a.o.shape.vocab = (*tok)->n_vocab();
  if (Status s = train::validate(a.o.shape); !s.is_ok()) return fail(s);
  if (!(a.val_fraction > 0 && a.val_fraction < 0.5)) return fail("--val-fraction must be in (0, 0.5)");
  const auto n_val = static_cast<size_t>(static_cast<double>(tokens.size()) * a.val_fraction);
  const std::span<const int32_t> all(tokens);
  const auto train_split = all.first(tokens.size() - n_val), val_split = all.last(n_val);

  int64_t n_params = 0;
  train::llama_param_layout(a.o.shape, &n_params);
  std::vector<float> params(static_cast<size_t>(n_params));
  train::init_llama_params(a.o.shape, params, a.o.seed);
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  const int64_t tokens_per_step = a.o.batch * a.o.shape.context * a.o.accum;
  if (!a.quiet) {
    std::fprintf(stderr,
                 "tessera train: %zu tokens of '%s' (%zu train / %zu validation, tokenized in "
                 "%.1f s); model: dim %lld, %lld layers, %lld heads (%lld kv), ffn %lld, vocab "
                 "%lld, context %lld: %.2f M parameters; %lld tokens per step, %d threads\n",
                 tokens.size(), a.text.c_str(), train_split.size(), val_split.size(), tokenize_s,
                 static_cast<long long>(a.o.shape.dim), static_cast<long long>(a.o.shape.layers),
                 static_cast<long long>(a.o.shape.heads), static_cast<long long>(a.o.shape.kv_heads),
                 static_cast<long long>(a.o.shape.ffn), static_cast<long long>(a.o.shape.vocab),
                 static_cast<long long>(a.o.shape.context), static_cast<double>(n_params) / 1e6,
                 static_cast<long long>(tokens_per_step), pool.size());
  }
  double last_val = -1;
  auto report = train::pretrain(a.o, params, train_split, val_split, &pool,
                                [&](const train::StepRecord& r) {
    if (r.val_loss >= 0) last_val = r.val_loss;
    if (a.quiet) return true;
    const double tps = static_cast<double>(r.step * tokens_per_step) / r.seconds;
    const double eta = r.seconds / static_cast<double>(r.step) * static_cast<double>(a.o.steps - r.step);
    std::fprintf(stderr, "\rstep %lld/%lld  loss %.4f  val %s  lr %.2e  |g| %.2f  %.0f tokens/s  ETA %s   ",
                 static_cast<long long>(r.step), static_cast<long long>(a.o.steps), r.loss,
                 last_val >= 0 ? fmt::format("{:.4f}", last_val).c_str() : "-", r.lr, r.grad_norm,
                 tps, clock_string(eta).c_str());
    if (r.val_loss >= 0) std::fprintf(stderr, "\n");
    return true;
  });
  if (!report.is_ok()) return fail(report.status());
  const std::string name = fmt::format("tessera-trained {}x{}", a.o.shape.layers, a.o.shape.dim);
  if (Status s = train::write_llama_gguf(a.out, a.o.shape, params, &vocab, name); !s.is_ok()) {
    return fail(s.with_context("writing " + a.out));
  }
  const double tps = static_cast<double>(report->tokens) / report->seconds;
  const double gflops = tps * report->flops_per_token / 1e9;
  if (a.json) {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& r : report->steps) {
      nlohmann::json s = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr},
                          {"grad_norm", r.grad_norm}, {"seconds", r.seconds}};
      if (r.val_loss >= 0) s["val_loss"] = r.val_loss;
      steps.push_back(std::move(s));
    }
    nlohmann::json j = {{"out", a.out},
                        {"parameters", n_params},
                        {"tokens", report->tokens},
                        {"seconds", report->seconds},
                        {"eval_seconds", report->eval_seconds},
                        {"tokens_per_second", tps},
                        {"flops_per_token", report->flops_per_token},
                        {"achieved_gflops", gflops},
                        {"final_val_loss", report->final_val_loss},
                        {"threads", pool.size()},
                        {"seed", a.o.seed},
                        {"steps", std::move(steps)}};
    if (a.o.target_loss > 0) {
      j["target_loss"] = a.o.target_loss;
      j["target_step"] = report->target_step;
      j["target_seconds"] = report->target_seconds;
    }
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("tessera train: wrote %s: %lld steps, %lld tokens in %s (%.0f tokens/s, %.1f GFLOP/s), "
                "validation loss %.4f\n",
                a.out.c_str(), static_cast<long long>(report->steps.size()),
                static_cast<long long>(report->tokens), clock_string(report->seconds).c_str(), tps,
                gflops, report->final_val_loss);
  }
  return 0;
}

}  // namespace

void add_train_command(CLI::App& app, RunFn& run) {
  auto* cmd = app.add_subcommand("train", "Pretrain a llama model from scratch on a text file; writes GGUF");
  auto args = std::make_shared<TrainArgs>();
  auto& o = args->o;
  o.shape.dim = 64;
  o.shape.layers = 4;
  o.shape.heads = 4;
  o.shape.kv_heads = 4;
  o.shape.ffn = 176;
  o.shape.context = 128;
  o.steps = 200;
  o.warmup = 20;
  o.eval_every = 50;
  cmd->add_option("--text,-f", args->text, "Training text (UTF-8); the last --val-fraction is held out")
      ->required();
  cmd->add_option("--out,-o", args->out, "Output GGUF")->required();
  cmd->add_option("--vocab", args->vocab, "Take the tokenizer from this GGUF (default: a generated one)");
  cmd->add_option("--vocab-size", args->vocab_size, "Size of the generated vocabulary")->capture_default_str();
  cmd->add_option("--dim", o.shape.dim, "Model width")->capture_default_str();
  cmd->add_option("--layers", o.shape.layers, "Layers")->capture_default_str();
  cmd->add_option("--heads", o.shape.heads, "Attention heads")->capture_default_str();
  cmd->add_option("--kv-heads", o.shape.kv_heads, "Key/value heads")->capture_default_str();
  cmd->add_option("--ffn", o.shape.ffn, "Feed-forward width")->capture_default_str();
  cmd->add_option("--ctx,-c", o.shape.context, "Training window (tokens)")->capture_default_str();
  cmd->add_option("--batch,-b", o.batch, "Sequences per micro-batch")->capture_default_str();
  cmd->add_option("--accum", o.accum, "Micro-batches per optimizer step")->capture_default_str();
  cmd->add_option("--steps", o.steps, "Optimizer steps")->capture_default_str();
  cmd->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  cmd->add_option("--warmup", o.warmup, "Warmup steps")->capture_default_str();
  cmd->add_option("--min-lr-ratio", o.min_lr_ratio, "Final learning rate / peak (cosine)")->capture_default_str();
  cmd->add_option("--weight-decay", o.adamw.weight_decay, "AdamW weight decay (matrices)")->capture_default_str();
  cmd->add_option("--beta2", o.adamw.beta2, "AdamW beta2")->capture_default_str();
  cmd->add_option("--clip", o.clip, "Global gradient-norm clip (0: none)")->capture_default_str();
  cmd->add_option("--eval-every", o.eval_every, "Validation every N steps (and at the end)")->capture_default_str();
  cmd->add_option("--eval-windows", o.eval_windows, "Validation windows")->capture_default_str();
  cmd->add_option("--val-fraction", args->val_fraction, "Held-out share of the text")->capture_default_str();
  cmd->add_option("--target-loss", o.target_loss, "Report the first step whose validation loss reaches this");
  cmd->add_option("--seed", o.seed, "Seed (initialization and data order)")->capture_default_str();
  cmd->add_option("--threads,-t", args->threads, "Threads (default: all cores)");
  cmd->add_flag("--json", args->json, "Print one JSON object (with the loss curve) at the end");
  cmd->add_flag("--quiet,-q", args->quiet, "No progress on stderr");
  cmd->callback([&run, args] { run = [args] { return run_train(*args); }; });
}

}  // namespace tessera::cli
