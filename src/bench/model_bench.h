// `bench model`: prompt processing (pp: one batch of N prompt tokens from an empty cache) and
// token generation (tg: N single-token steps from an empty cache), like llama-bench's pp512 and
// tg128, repeated and summarized, with the work each does written down so achieved bandwidth and
// FLOP/s (and their fraction of the machine's ceilings) come out of the same record.
// Thread-safety: uses the model from the calling thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/base/thread_pool.h"
#include "tessera/bench/read_probe.h"
#include "tessera/bench/stats.h"
#include "tessera/kernels/dtype.h"
#include "tessera/model/model.h"

namespace tessera::bench {

struct ModelBenchOptions {
  int32_t prompt_tokens = 512;  // 0 skips pp
  int32_t gen_tokens = 128;     // 0 skips tg
  int reps = 5;
  uint64_t seed = 1;
  // When set, the probe runs before the first timed repetition and after each one (on the same
  // pool; the better of two passes each time), and each repetition's bandwidth is also compared
  // with the mean of the readings around it: on a shared machine whose bandwidth moves from
  // minute to minute, that says what fraction of the bandwidth available *while it ran* the
  // model used.
  const ReadProbe* probe = nullptr;
  // In-process A/B (base/ab_switch.h): tg steps alternate between variants 0 and 1 in pairs,
  // each pp repetition runs the prompt once per variant (the order alternating), and each
  // repetition records variant 1's summed time over variant 0's. The switch is 0 afterwards.
  bool ab = false;
};

// Bytes and FLOPs one forward step moves and performs. Weight bytes count every matrix the step
// multiplies (all layers and the output projection; the embedding lookup reads one row).
struct WorkModel {
  double weight_bytes = 0.0;        // per forward step
  double matmul_flops_per_token = 0.0;  // 2 x multiplied parameters
  double kv_bytes_per_position = 0.0;   // K and V over all layers, per cached position
  double attn_flops_per_position = 0.0;  // QK and AV over all layers, per (token, position)
};

// `kv_dtype`: the KV cache's element type (the benchmark uses the engine's default, f16).
WorkModel work_model(const model::Model& m, kernels::DType kv_dtype = kernels::DType::kF16);

struct TestResult {
  std::string name;  // "pp512", "tg128"
  int32_t n_tokens = 0;
  Summary tokens_per_second;
  double bytes_per_run = 0.0;   // weights + KV traffic of one repetition
  double flops_per_run = 0.0;
  double mean_seconds = 0.0;
  std::vector<double> seconds;          // each timed repetition
  std::vector<double> adjacent_probe;   // GB/s around each repetition (empty without a probe)
  std::vector<double> ab_time_ratios;   // per repetition, variant 1 / variant 0 time (with ab)
  double gbps() const { return mean_seconds > 0 ? bytes_per_run / mean_seconds / 1e9 : 0.0; }
  double gflops() const { return mean_seconds > 0 ? flops_per_run / mean_seconds / 1e9 : 0.0; }
  // Per repetition: its GB/s over the probe passes around it; summarized over repetitions.
  // n == 0 without a probe.
  Summary adjacent_mbu() const;
};

// Runs pp then tg. Errors come from the model (e.g. context too short for the requested tokens).
Result<std::vector<TestResult>> run_model_bench(model::Model& m, ThreadPool& pool,
                                                const ModelBenchOptions& options);

}  // namespace tessera::bench
