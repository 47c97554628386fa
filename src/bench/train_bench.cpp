#include "tessera/bench/train_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "tessera/base/thread_pool.h"
#include "tessera/bench/environment.h"
#include "tessera/bench/machine_bench.h"
#include "tessera/bench/train_corpus.h"
#include "tessera/bench/train_record.h"
#include "tessera/bench/train_report_html.h"
#include "tessera/train/checkpoint.h"
#include "tessera/train/training_data.h"

namespace tessera::bench {
namespace train_bench {

constexpr int64_t kSyntheticBytes = 2'000'000;

// The training text and what to call it in the report.
Result<std::pair<std::string, std::string>> load_corpus(const TrainBenchOptions& a) {
  std::string path = a.text;
  if (path.empty() && !a.synthetic && !a.default_corpus.empty() &&
      std::filesystem::exists(a.default_corpus)) {
    path = a.default_corpus;
  }
  if (path.empty()) {
    return std::pair{synthetic_training_text(kSyntheticBytes, a.o.seed),
                     fmt::format("built-in synthetic corpus ({} bytes, seed {})", kSyntheticBytes,
                                 a.o.seed)};
  }
  TS_ASSIGN_OR_RETURN(std::string text, train::read_training_text(path));
  std::string name = path;
  if (path == a.default_corpus) name = "Brown corpus (" + path + ")";
  return std::pair{std::move(text), std::move(name)};
}

// What MFU divides by: the f32 FMA ceiling (given or measured as `bench machine` does, with a
// small read buffer since only FMA is used), or with bf16 compute the BF16 dot ceiling where the
// CPU has one (without AVX-512 BF16 the GEMM runs f32 FMAs in the scalar row).
struct MfuCeiling {
  MachineCeilings machine;
  double bf16_gflops = 0;
  std::string bf16_isa = "none";
  double gflops = 0;
  std::string name;
};

MfuCeiling measure_ceiling(const TrainBenchOptions& a, bool bf16, int threads) {
  MfuCeiling c;
  if (a.fma_gflops > 0) {
    c.machine.fma_gflops = a.fma_gflops;
    c.machine.fma_isa = "given";
  } else {
    MachineBenchOptions mo;
    mo.threads = threads;
    mo.buffer_bytes = int64_t{64} << 20;
    mo.reps = 3;
    c.machine = measure_machine(mo);
  }
  if (bf16) {
    if (a.bf16_gflops > 0) {
      c.bf16_gflops = a.bf16_gflops;
      c.bf16_isa = "given";
    } else {
      c.bf16_gflops = measure_bf16_gflops(threads, 3, &c.bf16_isa);
    }
  }
  const bool vs_bf16 = bf16 && c.bf16_gflops > 0;
  c.gflops = vs_bf16 ? c.bf16_gflops : c.machine.fma_gflops;
  c.name = vs_bf16 ? "bf16 dot (" + c.bf16_isa + ")" : "f32 FMA (" + c.machine.fma_isa + ")";
  return c;
}

void log_submission(MlLogger& log, int threads) {
  log.event("submission_benchmark", "tessera_llama_pretrain");
  log.event("submission_division", "open");
  log.event("submission_org", "tessera");
  log.event("submission_platform", fmt::format("{}, {} threads", cpu_model_name(), threads));
  log.event("submission_status", "research");
  log.event("cache_clear", true);
  log.start("init_start");
}

void log_hyperparameters(MlLogger& log, const train::PretrainOptions& o, const std::string& compute,
                         const MfuCeiling& ceiling, const train::TrainingData& data) {
  const int64_t T = o.shape.context;
  const int64_t eval_windows =
      std::max<int64_t>(1, std::min<int64_t>(o.eval_windows, static_cast<int64_t>(data.n_val) - T));
  log.event("seed", static_cast<int64_t>(o.seed));
  log.event("global_batch_size", o.batch * o.accum);
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
  log.event("compute_precision", compute,
            {{"mfu_ceiling", ceiling.name}, {"mfu_ceiling_gflops", ceiling.gflops}});
  log.event("train_samples", static_cast<int64_t>(data.train().size()) / (T + 1));
  log.event("eval_samples", eval_windows);
  log.event("target_accuracy", o.target_loss, {{"metric", "validation loss, nats per token (lower is better)"}});
}

struct TrainedRun {
  train::PretrainReport report;
  bool reached = false;
};

// The run_start..run_stop interval: blocks of training between evaluations, stopping at the
// target unless `full`.
Result<TrainedRun> train_to_target(const train::PretrainOptions& o, bool full,
                                   std::vector<float>& params, const train::TrainingData& data,
                                   ThreadPool* pool, MlLogger& log) {
  const int64_t global_batch = o.batch * o.accum;
  const int64_t tokens_per_step = global_batch * o.shape.context;
  log.start("run_start");
  TrainedRun run;
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
    run.reached = run.reached || r.val_loss <= o.target_loss;
    const bool go_on = r.step < o.steps && (full || !run.reached);
    if (go_on) log.start("block_start", nullptr, {{"samples_count", samples}});
    return go_on;
  };
  TS_ASSIGN_OR_RETURN(run.report, train::pretrain(o, params, data.train(), data.val(), pool, hooks));
  const int64_t steps_done = static_cast<int64_t>(run.report.steps.size());
  log.end("run_stop", nullptr,
          {{"samples_count", steps_done * global_batch}, {"status", run.reached ? "success" : "aborted"}});
  return run;
}

// What the summary says about the run, beside the run itself.
struct RunContext {
  const train::PretrainOptions* o = nullptr;
  const TrainBenchOptions* options = nullptr;
  std::string corpus;
  int64_t corpus_tokens = 0;
  int64_t n_params = 0;
  int threads = 0;
};

nlohmann::json summary_json(const RunContext& c, const MfuCeiling& ceiling, const TrainedRun& run) {
  const train::PretrainOptions& o = *c.o;
  const train::PretrainReport& report = run.report;
  const int64_t global_batch = o.batch * o.accum;
  const double flops_per_token = train::training_flops_per_token(o.shape);
  const double tps = static_cast<double>(report.tokens) / report.seconds;
  const double gflops = tps * flops_per_token / 1e9;
  const train::LlamaShape& s = o.shape;
  return {
      {"status", run.reached ? "success" : "aborted"},
      {"model", fmt::format("llama dim {}, {} layers, {} heads ({} kv), ffn {}, vocab {}, "
                            "context {}: {:.2f} M parameters", s.dim, s.layers, s.heads,
                            s.kv_heads, s.ffn, s.vocab, s.context, static_cast<double>(c.n_params) / 1e6)},
      {"parameters", c.n_params},
      {"corpus", c.corpus},
      {"corpus_tokens", c.corpus_tokens},
      {"global_batch_size", global_batch},
      {"tokens_per_step", global_batch * s.context},
      {"steps_planned", o.steps},
      {"steps_done", static_cast<int64_t>(report.steps.size())},
      {"tokens", report.tokens},
      {"train_seconds", report.seconds},
      {"eval_seconds", report.eval_seconds},
      {"tokens_per_second", tps},
      {"flops_per_token", flops_per_token},
      {"achieved_gflops", gflops},
      {"fma_ceiling_gflops", ceiling.machine.fma_gflops},
      {"fma_isa", ceiling.machine.fma_isa},
      {"compute", c.options->compute},
      {"bf16_ceiling_gflops", ceiling.bf16_gflops},
      {"mfu_ceiling", ceiling.name},
      {"mfu_ceiling_gflops", ceiling.gflops},
      {"mfu", ceiling.gflops > 0 ? gflops / ceiling.gflops : 0.0},
      {"target_loss", o.target_loss},
      {"target_step", report.target_step},
      {"target_seconds", report.target_seconds},
      {"final_val_loss", report.final_val_loss},
      {"threads", c.threads},
      {"seed", o.seed},
      {"environment", describe_environment(c.threads)},
      {"steps", train_steps_json(report)}};
}

}  // namespace train_bench

Result<nlohmann::json> run_train_benchmark(const TrainBenchOptions& a, MlLogger& log) {
  ThreadPool pool(a.threads > 0 ? a.threads : hardware_threads());
  train_bench::log_submission(log, pool.size());
  TS_ASSIGN_OR_RETURN(auto corpus, train_bench::load_corpus(a));
  const bool synthetic = corpus.second.starts_with("built-in");
  TS_ASSIGN_OR_RETURN(train::TrainingData data, train::tokenize_training_text(
                                                    corpus.first, a.vocab, a.vocab_size, a.val_fraction));
  train::PretrainOptions o = a.o;
  o.shape.vocab = data.n_vocab;
  TS_RETURN_IF_ERROR(train::validate(o.shape));
  o.target_loss = a.target > 0 ? a.target : (synthetic ? kSyntheticTargetLoss : kBrownTargetLoss);
  o.bf16 = a.compute == "bf16";
  const train_bench::MfuCeiling ceiling = train_bench::measure_ceiling(a, o.bf16, pool.size());
  train_bench::log_hyperparameters(log, o, a.compute, ceiling, data);

  int64_t n_params = 0;
  train::llama_param_layout(o.shape, &n_params);
  std::vector<float> params(static_cast<size_t>(n_params));
  train::init_llama_params(o.shape, params, o.seed);
  log.end("init_stop");
  TS_ASSIGN_OR_RETURN(train_bench::TrainedRun run,
                      train_bench::train_to_target(o, a.full, params, data, &pool, log));
  if (!a.save_model.empty()) {  // the trained model, for fine-tuning or serving it afterwards
    const std::string name = fmt::format("tessera-bench-train {}x{}", o.shape.layers, o.shape.dim);
    TS_RETURN_IF_ERROR(train::write_llama_gguf(a.save_model, o.shape, params, &data.vocab, name)
                           .with_context("--save-model " + a.save_model));
  }
  const train_bench::RunContext context{&o, &a, corpus.second,
                                        static_cast<int64_t>(data.tokens.size()), n_params,
                                        pool.size()};
  return train_bench::summary_json(context, ceiling, run);
}

std::string format_train_bench_summary(const nlohmann::json& s) {
  const bool reached = s["status"] == "success";
  const std::string at =
      reached ? fmt::format("at step {} ({:.1f} s of training)", s["target_step"].get<int64_t>(),
                            s["target_seconds"].get<double>())
              : "";
  // printf's formatting, as the command always printed it (inf and nan included).
  const auto format = [&](char* buf, size_t n) {
    return std::snprintf(
        buf, n,
        "bench train: %s on %s; %lld tokens per step\n"
        "  %s after %lld steps (%.1f s training, %.1f s evaluating): validation loss %.4f, target %.3f %s\n"
        "  %.1f tokens/s, %.2f GFLOP/s achieved (%.0f FLOP per token, %s compute), ceiling %.1f "
        "GFLOP/s (%s): MFU %.2f%%\n",
        s["model"].get<std::string>().c_str(), s["corpus"].get<std::string>().c_str(),
        static_cast<long long>(s["tokens_per_step"].get<int64_t>()),
        reached ? "reached the target" : "did not reach the target",
        static_cast<long long>(s["steps_done"].get<int64_t>()), s["train_seconds"].get<double>(),
        s["eval_seconds"].get<double>(), s["final_val_loss"].get<double>(),
        s["target_loss"].get<double>(), at.c_str(), s["tokens_per_second"].get<double>(),
        s["achieved_gflops"].get<double>(), s["flops_per_token"].get<double>(),
        s["compute"].get<std::string>().c_str(), s["mfu_ceiling_gflops"].get<double>(),
        s["mfu_ceiling"].get<std::string>().c_str(), 100.0 * s["mfu"].get<double>());
  };
  std::string text(static_cast<size_t>(format(nullptr, 0)) + 1, '\0');
  text.resize(static_cast<size_t>(format(text.data(), text.size())));
  return text;
}

Status write_train_bench_report(const std::string& dir, const nlohmann::json& summary,
                                const std::vector<std::string>& mllog_lines,
                                const std::string& chart_js) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::filesystem::path d(dir);
  std::ofstream sf(d / "summary.json");
  sf << summary.dump(2) << '\n';
  if (!sf) return io_error("cannot write into --out '" + dir + "'");
  std::ofstream mf(d / "mllog.log");
  for (const std::string& line : mllog_lines) mf << line << '\n';
  std::ofstream(d / "report.html") << render_train_report_html(summary, mllog_lines, chart_js);
  return Status::ok();
}

}  // namespace tessera::bench
