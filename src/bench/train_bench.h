// `tessera bench train`, the training benchmark in MLPerf's manner: trains a llama model from
// scratch until its validation loss reaches a target (or the steps run out), logging MLPerf-style
// lines (submission fields, hyperparameters, init/run intervals, every evaluation, run_stop with
// its status) through an MlLogger, and measures training tokens/s, achieved FLOP/s, MFU against
// the FMA (or BF16 dot) ceiling `bench machine` measures, and the time to target. The summary is
// one JSON object (printed with --json, written to summary.json beside report.html).
// Thread-safety: runs its own ThreadPool; call from one thread.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/bench/mllog.h"
#include "tessera/train/pretrain.h"

namespace tessera::bench {

// Default targets: reachable by the default model and steps on two cores (measured, see
// docs/TRAINING.md), well below where the loss flattens early in the run.
inline constexpr double kBrownTargetLoss = 2.8;
inline constexpr double kSyntheticTargetLoss = 1.0;

struct TrainBenchOptions {
  std::string text;             // the training text; empty: default_corpus, else synthetic
  std::string default_corpus;   // the Brown corpus where scripts/fetch-corpus.sh puts it
  bool synthetic = false;       // the built-in synthetic corpus even where the Brown one is
  std::string vocab;            // a GGUF whose tokenizer to use; empty: a generated one
  int64_t vocab_size = 512;
  double val_fraction = 0.05;
  train::PretrainOptions o;     // o.shape.vocab, o.target_loss and o.bf16 are set by the run
  double target = 0;            // 0: the corpus' default
  double fma_gflops = 0;        // 0: measure
  double bf16_gflops = 0;       // compute "bf16": the BF16 dot ceiling; 0: measure
  std::string compute = "f32";  // f32 or bf16
  int threads = 0;              // 0: all cores
  bool full = false;            // keep training after the target is reached
  std::string save_model;       // non-empty: also write the trained model here (GGUF)
};

// Runs the benchmark, logging to `log`; returns the summary (status, model, corpus, throughput,
// MFU, target, environment, steps). Not reaching the target is a result (status "aborted"), not
// an error. Errors: the corpus' (kNotFound), the tokenizer's, the shape's, the loop's, the
// model file's (with context "--save-model PATH").
Result<nlohmann::json> run_train_benchmark(const TrainBenchOptions& options, MlLogger& log);

// The summary in three lines of text, as `bench train` prints it without --json.
std::string format_train_bench_summary(const nlohmann::json& summary);

// Writes summary.json, mllog.log and report.html (Chart.js inlined when `chart_js` is not empty)
// into `dir`, creating it. Errors: kIoError naming the folder.
Status write_train_bench_report(const std::string& dir, const nlohmann::json& summary,
                                const std::vector<std::string>& mllog_lines,
                                const std::string& chart_js);

}  // namespace tessera::bench
