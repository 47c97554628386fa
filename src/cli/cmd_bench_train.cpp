// `tessera bench train`: a training benchmark in MLPerf's manner. Trains a llama model from
// scratch until its validation loss reaches a target (or the steps run out), logging MLPerf-style
// ":::MLLOG" lines (submission fields, hyperparameters, init/run intervals, every evaluation,
// run_stop with its status), and reports training tokens/s, achieved FLOP/s, MFU against the
// FMA ceiling `bench machine` measures, and the time to target; --json / --out add a summary JSON
// and report.html with the loss curves. With no arguments: a small model on the Brown corpus
// (scripts/fetch-corpus.sh) or, without it, the built-in synthetic corpus; a few minutes on two
// cores.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "train_data.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/machine_bench.h"
#include "tessera/bench/mllog.h"
#include "tessera/bench/train_corpus.h"
#include "tessera/bench/train_report_html.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/pretrain.h"

#ifndef TESSERA_CORPUS_DEFAULT
#define TESSERA_CORPUS_DEFAULT ""
#endif

namespace tessera::cli {
namespace {

struct BenchTrainArgs {
  std::string text, vocab, out_dir, mllog_path, chartjs, save_model;
  int64_t vocab_size = 512;
  train::PretrainOptions o;
  double val_fraction = 0.05;
  double target = 0;            // 0: the corpus' default
  double fma_gflops = 0;        // 0: measure
  double bf16_gflops = 0;       // --compute bf16: the BF16 dot ceiling; 0: measure
  std::string compute = "f32";  // f32 or bf16 (sets o.bf16)
  int threads = 0;
  bool synthetic = false;
  bool full = false;            // keep training after the target is reached
  bool json = false;
};

// Default targets: reachable by the default model and steps on two cores (measured, see
// docs/TRAINING.md), well below where the loss flattens early in the run.
constexpr double kBrownTarget = 2.8;
constexpr double kSyntheticTarget = 1.0;
constexpr int64_t kSyntheticBytes = 2'000'000;

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

// The training text and what to call it in the report.
Result<std::pair<std::string, std::string>> load_corpus(const BenchTrainArgs& a) {
  std::string path = a.text;
  if (path.empty() && !a.synthetic && std::filesystem::exists(TESSERA_CORPUS_DEFAULT)) {
    path = TESSERA_CORPUS_DEFAULT;
  }
  if (path.empty()) {
    return std::pair{bench::synthetic_training_text(kSyntheticBytes, a.o.seed),
                     fmt::format("built-in synthetic corpus ({} bytes, seed {})", kSyntheticBytes,
                                 a.o.seed)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("cannot read --text '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string name = path;
  if (path == TESSERA_CORPUS_DEFAULT) name = "Brown corpus (" + path + ")";
  return std::pair{ss.str(), name};
}

int run_bench_train(BenchTrainArgs a) {
  // MLLOG lines go to --mllog, else stdout (stderr when stdout carries the --json summary).
  std::unique_ptr<std::ofstream> mllog_file;
  if (!a.mllog_path.empty()) {
    mllog_file = std::make_unique<std::ofstream>(a.mllog_path);
    if (!*mllog_file) return fail("cannot write --mllog '" + a.mllog_path + "'");
  }
  FILE* mllog_stream = a.json ? stderr : stdout;
  bench::MlLogger log(
      [&](const std::string& line) {
        if (mllog_file) {
          *mllog_file << line << '\n';
        } else {
          std::fprintf(mllog_stream, "%s\n", line.c_str());
          std::fflush(mllog_stream);
        }
      },
      wall_ms);

  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  const std::string platform = fmt::format("{}, {} threads", bench::cpu_model_name(), pool.size());
  log.event("submission_benchmark", "tessera_llama_pretrain");
  log.event("submission_division", "open");
  log.event("submission_org", "tessera");
  log.event("submission_platform", platform);
  log.event("submission_status", "research");
  log.event("cache_clear", true);
  log.start("init_start");

  auto corpus = load_corpus(a);
  if (!corpus.is_ok()) return fail(corpus.status());
  const bool synthetic = corpus->second.starts_with("built-in");
  auto data = tokenize_training_text(corpus->first, a.vocab, a.vocab_size, a.val_fraction);
  if (!data.is_ok()) return fail(data.status());
  train::PretrainOptions& o = a.o;
  o.shape.vocab = data->n_vocab;
  if (Status s = train::validate(o.shape); !s.is_ok()) return fail(s);
  o.target_loss = a.target > 0 ? a.target : (synthetic ? kSyntheticTarget : kBrownTarget);
  o.bf16 = a.compute == "bf16";

  // The FMA ceiling, as `bench machine` measures it (a small read buffer: only FMA is used).
  bench::MachineCeilings ceiling;
  if (a.fma_gflops > 0) {
    ceiling.fma_gflops = a.fma_gflops;
    ceiling.fma_isa = "given";
  } else {
    bench::MachineBenchOptions mo;
    mo.threads = pool.size();
    mo.buffer_bytes = int64_t{64} << 20;
    mo.reps = 3;
    ceiling = bench::measure_machine(mo);
  }
  // With --compute bf16 MFU is against the BF16 dot ceiling (vdpbf16ps chains, measured the same
  // way) where the CPU has one; without AVX-512 BF16 the GEMM runs f32 FMAs in the scalar row,
  // and the FMA ceiling stays the one.
  double bf16_ceiling = 0;
  std::string bf16_isa = "none";
  if (o.bf16) {
    if (a.bf16_gflops > 0) {
      bf16_ceiling = a.bf16_gflops;
      bf16_isa = "given";
    } else {
      bf16_ceiling = bench::measure_bf16_gflops(pool.size(), 3, &bf16_isa);
    }
  }
  const bool mfu_vs_bf16 = o.bf16 && bf16_ceiling > 0;
  const double mfu_ceiling = mfu_vs_bf16 ? bf16_ceiling : ceiling.fma_gflops;
  const std::string mfu_ceiling_name =
      mfu_vs_bf16 ? "bf16 dot (" + bf16_isa + ")" : "f32 FMA (" + ceiling.fma_isa + ")";

  const int64_t T = o.shape.context, global_batch = o.batch * o.accum;
  const int64_t eval_windows =
      std::max<int64_t>(1, std::min<int64_t>(o.eval_windows, static_cast<int64_t>(data->n_val) - T));
  log.event("seed", static_cast<int64_t>(o.seed));
  log.event("global_batch_size", global_batch);
  log.event("max_sequence_length", T);
  log.event("gradient_accumulation_steps", o.accum);
  log.event("opt_base_learning_rate", o.lr);
  log.event("opt_learning_rate_warmup_steps", o.warmup);
  log.event("opt_learning_rate_training_steps", o.steps);
  log.event("opt_learning_rate_decay_schedule", "cosine with linear warmup");
  log.event("opt_adamw_beta_1", o.adamw.beta1);
  log.event("opt_adamw_beta_2", o.adamw.beta2);
  log.event("opt_adamw_epsilon", o.adamw.eps);
  log.event("opt_adamw_weight_decay", o.adamw.weight_decay);
  log.event("opt_gradient_clip_norm", o.clip);
  log.event("compute_precision", a.compute,
            {{"mfu_ceiling", mfu_ceiling_name}, {"mfu_ceiling_gflops", mfu_ceiling}});
  log.event("train_samples", static_cast<int64_t>(data->train().size()) / (T + 1));
  log.event("eval_samples", eval_windows);
  log.event("target_accuracy", o.target_loss, {{"metric", "validation loss, nats per token (lower is better)"}});

  int64_t n_params = 0;
  train::llama_param_layout(o.shape, &n_params);
  std::vector<float> params(static_cast<size_t>(n_params));
  train::init_llama_params(o.shape, params, o.seed);
  log.end("init_stop");
  log.start("run_start");

  const int64_t tokens_per_step = global_batch * T;
  const double flops_per_token = train::training_flops_per_token(o.shape);
  bool reached = false;
  train::PretrainHooks hooks;
  hooks.before_eval = [&](int64_t step) {
    log.end("block_stop", nullptr, {{"samples_count", step * global_batch}});
    log.start("eval_start", nullptr, {{"samples_count", step * global_batch}});
  };
  log.start("block_start", nullptr, {{"samples_count", 0}});
  hooks.on_step = [&](const train::StepRecord& r) {
    if (r.val_loss < 0) return true;
    const int64_t samples = r.step * global_batch;
    log.end("eval_stop", nullptr, {{"samples_count", samples}});
    log.event("eval_accuracy", r.val_loss, {{"samples_count", samples}, {"step", r.step}});
    log.event("train_loss", r.loss, {{"samples_count", samples}, {"step", r.step}});
    const double tps = static_cast<double>(r.step * tokens_per_step) / r.seconds;
    log.event("tracked_stats", {{"throughput", tps}, {"lr", r.lr}, {"grad_norm", r.grad_norm}},
              {{"step", r.step}});
    reached = reached || r.val_loss <= o.target_loss;
    const bool go_on = r.step < o.steps && (a.full || !reached);
    if (go_on) log.start("block_start", nullptr, {{"samples_count", samples}});
    return go_on;
  };
  auto report = train::pretrain(o, params, data->train(), data->val(), &pool, hooks);
  if (!report.is_ok()) return fail(report.status());
  const int64_t steps_done = static_cast<int64_t>(report->steps.size());
  log.end("run_stop", nullptr,
          {{"samples_count", steps_done * global_batch}, {"status", reached ? "success" : "aborted"}});

  if (!a.save_model.empty()) {  // the trained model, for fine-tuning or serving it afterwards
    const std::string name = fmt::format("tessera-bench-train {}x{}", o.shape.layers, o.shape.dim);
    if (Status st = train::write_llama_gguf(a.save_model, o.shape, params, &data->vocab, name);
        !st.is_ok()) {
      return fail(st.with_context("--save-model " + a.save_model));
    }
  }

  const double tps = static_cast<double>(report->tokens) / report->seconds;
  const double gflops = tps * flops_per_token / 1e9;
  const double mfu = mfu_ceiling > 0 ? gflops / mfu_ceiling : 0.0;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& r : report->steps) {
    nlohmann::json s = {{"step", r.step}, {"loss", r.loss}, {"lr", r.lr},
                        {"grad_norm", r.grad_norm}, {"seconds", r.seconds}};
    if (r.val_loss >= 0) s["val_loss"] = r.val_loss;
    steps.push_back(std::move(s));
  }
  const train::LlamaShape& s = o.shape;
  nlohmann::json summary = {
      {"status", reached ? "success" : "aborted"},
      {"model", fmt::format("llama dim {}, {} layers, {} heads ({} kv), ffn {}, vocab {}, "
                            "context {}: {:.2f} M parameters", s.dim, s.layers, s.heads,
                            s.kv_heads, s.ffn, s.vocab, s.context, static_cast<double>(n_params) / 1e6)},
      {"parameters", n_params},
      {"corpus", corpus->second},
      {"corpus_tokens", data->tokens.size()},
      {"global_batch_size", global_batch},
      {"tokens_per_step", tokens_per_step},
      {"steps_planned", o.steps},
      {"steps_done", steps_done},
      {"tokens", report->tokens},
      {"train_seconds", report->seconds},
      {"eval_seconds", report->eval_seconds},
      {"tokens_per_second", tps},
      {"flops_per_token", flops_per_token},
      {"achieved_gflops", gflops},
      {"fma_ceiling_gflops", ceiling.fma_gflops},
      {"fma_isa", ceiling.fma_isa},
      {"compute", a.compute},
      {"bf16_ceiling_gflops", bf16_ceiling},
      {"mfu_ceiling", mfu_ceiling_name},
      {"mfu_ceiling_gflops", mfu_ceiling},
      {"mfu", mfu},
      {"target_loss", o.target_loss},
      {"target_step", report->target_step},
      {"target_seconds", report->target_seconds},
      {"final_val_loss", report->final_val_loss},
      {"threads", pool.size()},
      {"seed", o.seed},
      {"environment", bench::describe_environment(pool.size())},
      {"steps", std::move(steps)}};

  if (!a.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out_dir, ec);
    const std::filesystem::path dir(a.out_dir);
    std::ofstream sf(dir / "summary.json");
    sf << summary.dump(2) << '\n';
    if (!sf) return fail("cannot write into --out '" + a.out_dir + "'");
    std::ofstream mf(dir / "mllog.log");
    for (const std::string& line : log.lines()) mf << line << '\n';
    std::string chart_path;
    const std::string chart_js = load_chart_js(a.chartjs, &chart_path);
    std::ofstream(dir / "report.html") << bench::render_train_report_html(summary, log.lines(), chart_js);
    std::fprintf(stderr, "tessera bench train: wrote %s/{summary.json, mllog.log, report.html}%s\n",
                 a.out_dir.c_str(), chart_js.empty() ? " (no Chart.js: tables only)" : "");
  }
  if (a.json) {
    std::printf("%s\n", summary.dump().c_str());
    return 0;
  }
  std::printf(
      "bench train: %s on %s; %lld tokens per step\n"
      "  %s after %lld steps (%.1f s training, %.1f s evaluating): validation loss %.4f, target %.3f %s\n"
      "  %.1f tokens/s, %.2f GFLOP/s achieved (%.0f FLOP per token, %s compute), ceiling %.1f "
      "GFLOP/s (%s): MFU %.2f%%\n",
      summary["model"].get<std::string>().c_str(), corpus->second.c_str(),
      static_cast<long long>(tokens_per_step), reached ? "reached the target" : "did not reach the target",
      static_cast<long long>(steps_done), report->seconds, report->eval_seconds, report->final_val_loss,
      o.target_loss,
      reached ? fmt::format("at step {} ({:.1f} s of training)", report->target_step,
                            report->target_seconds).c_str() : "",
      tps, gflops, flops_per_token, a.compute.c_str(), mfu_ceiling, mfu_ceiling_name.c_str(),
      100.0 * mfu);
  return 0;  // not reaching the target is a result (run_stop status "aborted"), not an error
}

}  // namespace

void add_bench_train_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<BenchTrainArgs>();
  train::PretrainOptions& o = a->o;
  o.shape.dim = 128;
  o.shape.layers = 4;
  o.shape.heads = 4;
  o.shape.kv_heads = 2;
  o.shape.ffn = 352;
  o.shape.context = 128;
  o.batch = 8;
  o.steps = 400;
  o.warmup = 40;
  o.lr = 2e-3;
  o.eval_every = 25;
  o.eval_windows = 32;
  CLI::App* c = bench->add_subcommand(
      "train", "Training benchmark: time to a target validation loss, tokens/s, MFU; MLPerf-style log");
  c->add_option("--text,-f", a->text,
                "Training text (default: .cache/corpus/brown.txt if present, else the built-in "
                "synthetic corpus)");
  c->add_flag("--synthetic", a->synthetic, "Use the built-in synthetic corpus");
  c->add_option("--vocab", a->vocab, "Take the tokenizer from this GGUF (default: a generated one)");
  c->add_option("--vocab-size", a->vocab_size, "Size of the generated vocabulary")->capture_default_str();
  c->add_option("--dim", o.shape.dim, "Model width")->capture_default_str();
  c->add_option("--layers", o.shape.layers, "Layers")->capture_default_str();
  c->add_option("--heads", o.shape.heads, "Attention heads")->capture_default_str();
  c->add_option("--kv-heads", o.shape.kv_heads, "Key/value heads")->capture_default_str();
  c->add_option("--ffn", o.shape.ffn, "Feed-forward width")->capture_default_str();
  c->add_option("--ctx,-c", o.shape.context, "Training window (tokens)")->capture_default_str();
  c->add_option("--batch,-b", o.batch, "Sequences per micro-batch")->capture_default_str();
  c->add_option("--accum", o.accum, "Micro-batches per optimizer step")->capture_default_str();
  c->add_option("--steps", o.steps, "Most optimizer steps (the schedule's length)")->capture_default_str();
  c->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  c->add_option("--warmup", o.warmup, "Warmup steps")->capture_default_str();
  c->add_option("--eval-every", o.eval_every, "Validation every N steps")->capture_default_str();
  c->add_option("--eval-windows", o.eval_windows, "Validation windows")->capture_default_str();
  c->add_option("--target-loss", a->target,
                fmt::format("Target validation loss (default: {} on Brown, {} on the synthetic corpus)",
                            kBrownTarget, kSyntheticTarget));
  c->add_flag("--full", a->full, "Train all --steps even after reaching the target");
  c->add_option("--seed", o.seed, "Seed (initialization, data order, synthetic corpus)")->capture_default_str();
  c->add_option("--threads,-t", a->threads, "Threads (default: all cores)");
  c->add_option("--fma-gflops", a->fma_gflops, "FMA ceiling for MFU (default: measure as bench machine does)");
  c->add_option("--compute", a->compute,
                "Matmul precision: f32 or bf16 (as tessera train --compute; MFU then against the "
                "measured BF16 dot ceiling)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  c->add_option("--bf16-gflops", a->bf16_gflops,
                "BF16 dot ceiling for MFU with --compute bf16 (default: measure)");
  c->add_option("--mllog", a->mllog_path, "Write the :::MLLOG lines here instead of stdout");
  c->add_option("--out,-o", a->out_dir, "Write summary.json, mllog.log and report.html into this folder");
  c->add_option("--save-model", a->save_model, "Also write the trained model as GGUF (loadable by every command)");
  c->add_option("--chartjs", a->chartjs, "Chart.js UMD file for report.html");
  c->add_flag("--json", a->json, "Print the summary as JSON (the MLLOG lines then go to stderr)");
  c->callback([&run, a] { run = [a] { return run_bench_train(*a); }; });
}

}  // namespace tessera::cli
