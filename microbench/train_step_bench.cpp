// One training step's forward and backward (train::LlamaTrainer<float>, no optimizer) at the
// shapes issue 23 targets, on the active kernels and a pool of 1 or 2 threads:
//   train_step/15m/T<threads>    dim 384, 8 layers, 6 heads, ffn 1024, vocab 512, 8 x 256 tokens
//   train_step/110m/T<threads>   dim 768, 12 layers, 12 heads, ffn 2048, vocab 512, 4 x 256 tokens
// Counters: tokens/s, and FLOP/s = tokens x train::training_flops_per_token (6 per matmul
// parameter plus the causal attention), the figure `tessera train` prints.
//   build/release/microbench/train_step_bench --benchmark_min_time=5
#include <benchmark/benchmark.h>

#include <memory>
#include <string>
#include <vector>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/train/llama_trainer.h"
#include "tessera/train/pretrain.h"

namespace tessera::train {
namespace {

struct Model {
  const char* name;
  LlamaShape shape;
  int64_t batch;
};

Model make(const char* name, int64_t dim, int64_t layers, int64_t heads, int64_t ffn,
           int64_t batch) {
  LlamaShape s;
  s.vocab = 512;
  s.dim = dim;
  s.layers = layers;
  s.heads = heads;
  s.kv_heads = heads;
  s.ffn = ffn;
  s.context = 256;
  return {name, s, batch};
}

void bm_train_step(benchmark::State& state, Model m, int threads) {
  std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
  LlamaTrainer<float> trainer(m.shape, pool.get());
  std::vector<float> params(static_cast<size_t>(trainer.n_params()));
  std::vector<float> grads(params.size(), 0.0f);
  init_llama_params(m.shape, params, 1);
  const int64_t n = m.batch * m.shape.context;
  std::vector<int32_t> tokens(static_cast<size_t>(n)), targets(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    tokens[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919) % m.shape.vocab);
    targets[static_cast<size_t>(i)] = static_cast<int32_t>((i * 7919 + 1) % m.shape.vocab);
  }
  // One untimed step first: it allocates and first-touches the activations.
  trainer.forward_backward(params, tokens.data(), targets.data(), m.batch, m.shape.context, grads);
  for (auto _ : state) {
    double loss = trainer.forward_backward(params, tokens.data(), targets.data(), m.batch,
                                           m.shape.context, grads);
    benchmark::DoNotOptimize(loss);
  }
  const double tokens_done = static_cast<double>(n) * static_cast<double>(state.iterations());
  state.counters["tokens/s"] = benchmark::Counter(tokens_done, benchmark::Counter::kIsRate);
  state.counters["FLOP/s"] = benchmark::Counter(
      tokens_done * training_flops_per_token(m.shape), benchmark::Counter::kIsRate);
  state.counters["params_M"] = static_cast<double>(trainer.n_params()) / 1e6;
}

void register_all() {
  for (const Model& m : {make("15m", 384, 8, 6, 1024, 8), make("110m", 768, 12, 12, 2048, 4)}) {
    for (int threads : {1, 2}) {
      const std::string name = std::string("train_step/") + m.name + "/T" + std::to_string(threads);
      benchmark::RegisterBenchmark(name.c_str(), bm_train_step, m, threads)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

}  // namespace
}  // namespace tessera::train

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("tessera_commit", TESSERA_GIT_COMMIT);
  benchmark::AddCustomContext("compiler", __VERSION__);
  benchmark::AddCustomContext("cpu_flags", tessera::kernels::cpu_flags_string());
  benchmark::AddCustomContext("active_isa", tessera::kernels::kernel_table().isa);
  tessera::train::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
