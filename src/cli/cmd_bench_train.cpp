// `tessera bench train`: a training benchmark in MLPerf's manner. Trains a llama model from
// scratch until its validation loss reaches a target (or the steps run out), logging MLPerf-style
// ":::MLLOG" lines (submission fields, hyperparameters, init/run intervals, every evaluation,
// run_stop with its status), and reports training tokens/s, achieved FLOP/s, MFU against the
// FMA ceiling `bench machine` measures, and the time to target; --json / --out add a summary JSON
// and report.html with the loss curves. With no arguments: a small model on the Brown corpus
// (scripts/fetch-corpus.sh) or, without it, the built-in synthetic corpus; a few minutes on two
// cores.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>

#include "commands.h"
#include "common.h"
#include "train_flags.h"
#include "tessera/bench/mllog.h"
#include "tessera/bench/train_bench.h"

#ifndef TESSERA_CORPUS_DEFAULT
#define TESSERA_CORPUS_DEFAULT ""
#endif

namespace tessera::cli {
namespace {

struct BenchTrainArgs {
  bench::TrainBenchOptions bench;
  std::string out_dir, mllog_path, chartjs;
  bool json = false;
};

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

int run_bench_train(const BenchTrainArgs& a) {
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
  auto summary = bench::run_train_benchmark(a.bench, log);
  if (!summary.is_ok()) return fail(summary.status());
  if (!a.out_dir.empty()) {
    const std::string chart_js = load_chart_js(a.chartjs);
    if (Status s = bench::write_train_bench_report(a.out_dir, *summary, log.lines(), chart_js);
        !s.is_ok()) {
      return fail(s);
    }
    std::fprintf(stderr, "tessera bench train: wrote %s/{summary.json, mllog.log, report.html}%s\n",
                 a.out_dir.c_str(), chart_js.empty() ? " (no Chart.js: tables only)" : "");
  }
  if (a.json) {
    std::printf("%s\n", summary->dump().c_str());
  } else {
    std::fputs(bench::format_train_bench_summary(*summary).c_str(), stdout);
  }
  return 0;  // not reaching the target is a result (run_stop status "aborted"), not an error
}

}  // namespace

void add_bench_train_command(CLI::App* bench, RunFn& run) {
  auto a = std::make_shared<BenchTrainArgs>();
  bench::TrainBenchOptions& b = a->bench;
  b.default_corpus = TESSERA_CORPUS_DEFAULT;
  train::PretrainOptions& o = b.o;
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
  c->add_option("--text,-f", b.text,
                "Training text (default: .cache/corpus/brown.txt if present, else the built-in "
                "synthetic corpus)");
  c->add_flag("--synthetic", b.synthetic, "Use the built-in synthetic corpus");
  c->add_option("--vocab", b.vocab, "Take the tokenizer from this GGUF (default: a generated one)");
  c->add_option("--vocab-size", b.vocab_size, "Size of the generated vocabulary")->capture_default_str();
  add_shape_and_batch_options(c, o);
  c->add_option("--steps", o.steps, "Most optimizer steps (the schedule's length)")->capture_default_str();
  c->add_option("--lr", o.lr, "Peak learning rate")->capture_default_str();
  c->add_option("--warmup", o.warmup, "Warmup steps")->capture_default_str();
  c->add_option("--eval-every", o.eval_every, "Validation every N steps")->capture_default_str();
  c->add_option("--eval-windows", o.eval_windows, "Validation windows")->capture_default_str();
  c->add_option("--target-loss", b.target,
                fmt::format("Target validation loss (default: {} on Brown, {} on the synthetic corpus)",
                            bench::kBrownTargetLoss, bench::kSyntheticTargetLoss));
  c->add_flag("--full", b.full, "Train all --steps even after reaching the target");
  c->add_option("--seed", o.seed, "Seed (initialization, data order, synthetic corpus)")->capture_default_str();
  c->add_option("--threads,-t", b.threads, "Threads (default: all cores)");
  c->add_option("--fma-gflops", b.fma_gflops, "FMA ceiling for MFU (default: measure as bench machine does)");
  c->add_option("--compute", b.compute,
                "Matmul precision: f32 or bf16 (as tessera train --compute; MFU then against the "
                "measured BF16 dot ceiling)")
      ->check(CLI::IsMember({"f32", "bf16"}))
      ->capture_default_str();
  c->add_option("--bf16-gflops", b.bf16_gflops,
                "BF16 dot ceiling for MFU with --compute bf16 (default: measure)");
  c->add_option("--mllog", a->mllog_path, "Write the :::MLLOG lines here instead of stdout");
  c->add_option("--out,-o", a->out_dir, "Write summary.json, mllog.log and report.html into this folder");
  c->add_option("--save-model", b.save_model, "Also write the trained model as GGUF (loadable by every command)");
  c->add_option("--chartjs", a->chartjs, "Chart.js UMD file for report.html");
  c->add_flag("--json", a->json, "Print the summary as JSON (the MLLOG lines then go to stderr)");
  c->callback([&run, a] { run = [a] { return run_bench_train(*a); }; });
}

}  // namespace tessera::cli
