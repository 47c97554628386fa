// The training GEMM (kernels/gemm_f32.h) in the three forms the trainer runs, at the shapes of a
// ~15M-parameter llama (dim 384, ffn 1024, 8 x 256 tokens) and a ~110M one (dim 768, ffn 2048,
// 4 x 256 tokens), side by side with the dot/axpy loops the trainer used before it (the peer).
//   gemm/<form>/<impl>/N<n>xK<k>xM<m>/T<threads>
//     form: fwd     y[N,M] = x[N,K] W[M,K]^T
//           bwd_dx  dx[N,K] += dy[N,M] W[M,K]
//           bwd_dw  dW[M,K] += dy[N,M]^T x[N,K]
//     impl: avx512 | avx2 (the GEMM's micro-kernel rows) | loops (fixed_dot / axpy rows over the
//           pool, split as train::ops did before the GEMM) | bf16 (kernels/gemm_bf16.h's
//           active row as `--compute bf16` runs it: W pre-rounded to bf16, x and dy rounded
//           while packed, f32 accumulation)
// FLOP/s counts 2 per multiply-add (2 N K M per call). Every record's context names the commit,
// compiler, CPU flags and active ISA.
//   build/release/microbench/gemm_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/gemm_bf16.h"
#include "tessera/kernels/gemm_f32.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

enum class Form { kFwd, kBwdDx, kBwdDw };
const char* form_name(Form f) {
  return f == Form::kFwd ? "fwd" : f == Form::kBwdDx ? "bwd_dx" : "bwd_dw";
}

struct Shape {
  int64_t n, k, m;  // tokens, inputs, outputs
};
// 15M: Q/K/V/O (384 -> 384), gate/up (384 -> 1024), down (1024 -> 384); 110M: 768 -> 768,
// 768 -> 2048, 2048 -> 768.
const Shape kShapes[] = {{2048, 384, 384},  {2048, 384, 1024}, {2048, 1024, 384},
                         {1024, 768, 768}, {1024, 768, 2048}, {1024, 2048, 768}};

std::vector<float> random_floats(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x = static_cast<float>(static_cast<int64_t>(s >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
  }
  return v;
}

void run_gemm(Form f, const Shape& s, const float* x, const float* w, const float* dy, float* out,
              ThreadPool* pool, const GemmF32Kernel* kr) {
  const int64_t n = s.n, k = s.k, m = s.m;
  switch (f) {
    case Form::kFwd: gemm_f32(n, m, k, {x, k, 1}, {w, 1, k}, out, m, false, pool, kr); break;
    case Form::kBwdDx: gemm_f32(n, k, m, {dy, m, 1}, {w, k, 1}, out, k, true, pool, kr); break;
    case Form::kBwdDw: gemm_f32(m, k, n, {dy, 1, m}, {x, k, 1}, out, k, true, pool, kr); break;
  }
}

// The trainer's matmuls before the GEMM (train/ops.cpp at 40107e4), kept here as the peer.
void run_loops(Form f, const Shape& s, const float* x, const float* w, const float* dy, float* out,
               ThreadPool* pool) {
  const auto dot = kernel_table().fixed_dot;
  const auto axpy = kernel_table().axpy;
  const int64_t n = s.n, k = s.k, m = s.m;
  auto split = [&](int64_t count, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (pool == nullptr || pool->size() <= 1 || count <= grain) {
      fn(0, count);
    } else {
      pool->parallel_for(count, grain, fn);
    }
  };
  switch (f) {
    case Form::kFwd:
      split(m, 16, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          for (int64_t r = 0; r < n; ++r) out[r * m + o] = dot(w + o * k, x + r * k, k);
        }
      });
      break;
    case Form::kBwdDx:
      split(n, 1, [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
          for (int64_t o = 0; o < m; ++o) axpy(dy[r * m + o], w + o * k, out + r * k, k);
        }
      });
      break;
    case Form::kBwdDw:
      split(m, 16, [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; ++o) {
          for (int64_t r = 0; r < n; ++r) axpy(dy[r * m + o], x + r * k, out + o * k, k);
        }
      });
      break;
  }
}

void bm_gemm(benchmark::State& state, Form f, Shape s, int threads, GemmF32Kernel kr,
             bool loops) {
  const auto x = random_floats(static_cast<size_t>(s.n * s.k), 1);
  const auto w = random_floats(static_cast<size_t>(s.m * s.k), 2);
  const auto dy = random_floats(static_cast<size_t>(s.n * s.m), 3);
  const size_t out_size = static_cast<size_t>(f == Form::kFwd    ? s.n * s.m
                                              : f == Form::kBwdDx ? s.n * s.k
                                                                  : s.m * s.k);
  std::vector<float> out(out_size, 0.0f);
  std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
  for (auto _ : state) {
    if (loops) {
      run_loops(f, s, x.data(), w.data(), dy.data(), out.data(), pool.get());
    } else {
      run_gemm(f, s, x.data(), w.data(), dy.data(), out.data(), pool.get(), &kr);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double flops = 2.0 * static_cast<double>(s.n * s.k * s.m);
  state.counters["FLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

void bm_gemm_bf16(benchmark::State& state, Form f, Shape s, int threads) {
  const auto x = random_floats(static_cast<size_t>(s.n * s.k), 1);
  const auto w = random_floats(static_cast<size_t>(s.m * s.k), 2);
  const auto dy = random_floats(static_cast<size_t>(s.n * s.m), 3);
  std::vector<uint16_t> wb(w.size());
  round_to_bf16(w.data(), static_cast<int64_t>(w.size()), wb.data());
  const int64_t n = s.n, k = s.k, m = s.m;
  std::vector<float> out(static_cast<size_t>(f == Form::kFwd ? n * m : f == Form::kBwdDx ? n * k : m * k));
  std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
  for (auto _ : state) {
    switch (f) {
      case Form::kFwd:
        gemm_bf16(n, m, k, {x.data(), nullptr, k, 1}, {nullptr, wb.data(), 1, k}, out.data(), m,
                  false, pool.get());
        break;
      case Form::kBwdDx:
        gemm_bf16(n, k, m, {dy.data(), nullptr, m, 1}, {nullptr, wb.data(), k, 1}, out.data(), k,
                  true, pool.get());
        break;
      case Form::kBwdDw:
        gemm_bf16(m, k, n, {dy.data(), nullptr, 1, m}, {x.data(), nullptr, k, 1}, out.data(), k,
                  true, pool.get());
        break;
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      2.0 * static_cast<double>(n * k * m) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
}

void register_all() {
  struct Impl {
    std::string name;
    GemmF32Kernel kernel;
    bool loops;
  };
  std::vector<Impl> impls;
  if (cpu_features().has_avx512_set()) impls.push_back({"avx512", avx512_gemm_f32_kernel(), false});
  if (cpu_features().has_avx2_set()) impls.push_back({"avx2", avx2_gemm_f32_kernel(), false});
  impls.push_back({"loops", GemmF32Kernel{}, true});
  for (Form f : {Form::kFwd, Form::kBwdDx, Form::kBwdDw}) {
    for (const Shape& s : kShapes) {
      for (int threads : {1, 2}) {
        for (const Impl& impl : impls) {
          const std::string name = std::string("gemm/") + form_name(f) + "/" + impl.name + "/N" +
                                   std::to_string(s.n) + "xK" + std::to_string(s.k) + "xM" +
                                   std::to_string(s.m) + "/T" + std::to_string(threads);
          benchmark::RegisterBenchmark(name.c_str(), bm_gemm, f, s, threads, impl.kernel,
                                       impl.loops)
              ->Unit(benchmark::kMillisecond)
              ->UseRealTime();
        }
        const std::string name = std::string("gemm/") + form_name(f) + "/bf16/N" +
                                 std::to_string(s.n) + "xK" + std::to_string(s.k) + "xM" +
                                 std::to_string(s.m) + "/T" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), bm_gemm_bf16, f, s, threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  using namespace tessera::kernels;
  benchmark::AddCustomContext("tessera_commit", TESSERA_GIT_COMMIT);
  benchmark::AddCustomContext("compiler", __VERSION__);
  benchmark::AddCustomContext("cpu_flags", cpu_flags_string());
  benchmark::AddCustomContext("active_isa", kernel_table().isa);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
