// Kernel microbenchmarks, single-threaded: for every dtype, the scalar reference table and each
// SIMD kernel set the CPU supports (avx2, avx512) measured side by side in the same run.
//   vec_dot/<dtype>/<isa>/4096            one row against activations in vec_dot_type (L1-resident)
//   quantize/q8_0/<isa>/4096              activation quantization, on the matmul hot path
//   to_float/<dtype>/<isa>/4096           dequantization (embedding lookups)
//   matmul/<dtype>/<isa>/R<r>xC<c>/T<t>   y[T, R] = x[T, C] . w[R, C]^T through kernels::matmul
//   .../cold                              the same, cycling through copies of w totalling
//                                         >= 256 MiB so every call streams w from DRAM
//   attention/<isa>/H64xNH9xNKV3/P<n>     one query row over n cached f16 positions (SmolLM2
//                                         heads); bytes = the K and V rows read
// Counters: bytes_per_second counts the bytes a call must move (weights in their dtype + f32
// activations in + f32 outputs); FLOP/s counts 2 per multiply-add. Every record's context names
// the commit, compiler, CPU flags and active ISA.
//   build/release/microbench/kernel_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "tessera/kernels/avx2_kernels.h"
#include "tessera/kernels/avx512_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"

namespace tessera::kernels {
namespace {

constexpr int64_t kRowLength = 4096;
constexpr size_t kColdBytes = size_t{256} << 20;

const DType kDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K};

struct Shape {
  int64_t n_rows;    // R
  int64_t n_cols;    // C
  int64_t n_tokens;  // T
  bool cold;
};
// Llama-7B-class FFN shapes (TinyLlama's down and up projections), decode and prefill; then
// SmolLM2-135M's FFN up projection at 16 decode rows, weights from DRAM (batched serving).
const Shape kShapes[] = {{2048, 5632, 1, false}, {5632, 2048, 1, false}, {2048, 5632, 1, true},
                         {2048, 5632, 64, false}, {1536, 576, 16, true},  {1536, 576, 16, false},
                         {1536, 576, 1, false}};  // decode from L2: the kernel's own speed

// Uniform in [-1, 1): fast enough to fill layer-sized matrices; the values do not affect timing.
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

std::vector<std::byte> quantized(DType t, const std::vector<float>& values) {
  const auto n = static_cast<int64_t>(values.size());
  std::vector<std::byte> q(dtype_row_bytes(t, n));
  kernels_for(scalar_kernel_table(), t).from_float(values.data(), q.data(), n);
  return q;
}

void set_counters(benchmark::State& state, double bytes, double flops) {
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
  if (flops > 0) {
    state.counters["FLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
  }
}

void bm_vec_dot(benchmark::State& state, const KernelTable* table, DType t) {
  const DTypeKernels& k = kernels_for(*table, t);
  const auto w = quantized(t, random_floats(kRowLength, 1));
  const auto x = random_floats(kRowLength, 2);
  std::vector<std::byte> xq(dtype_row_bytes(k.vec_dot_type, kRowLength));
  kernels_for(*table, k.vec_dot_type).from_float(x.data(), xq.data(), kRowLength);
  for (auto _ : state) {
    float r = k.vec_dot(w.data(), xq.data(), kRowLength);
    benchmark::DoNotOptimize(r);
  }
  set_counters(state, static_cast<double>(w.size() + xq.size()), 2.0 * kRowLength);
}

void bm_quantize_q8_0(benchmark::State& state, const KernelTable* table) {
  const DTypeKernels& k = kernels_for(*table, DType::kQ8_0);
  const auto x = random_floats(kRowLength, 3);
  std::vector<std::byte> q(dtype_row_bytes(DType::kQ8_0, kRowLength));
  for (auto _ : state) {
    k.from_float(x.data(), q.data(), kRowLength);
    benchmark::DoNotOptimize(q.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, static_cast<double>(x.size() * sizeof(float) + q.size()), 0);
}

void bm_to_float(benchmark::State& state, const KernelTable* table, DType t) {
  const DTypeKernels& k = kernels_for(*table, t);
  const auto q = quantized(t, random_floats(kRowLength, 4));
  std::vector<float> y(kRowLength);
  for (auto _ : state) {
    k.to_float(q.data(), y.data(), kRowLength);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, static_cast<double>(q.size() + y.size() * sizeof(float)), 0);
}

void bm_matmul(benchmark::State& state, const KernelTable* table, DType t, Shape shape,
               MatrixLayout layout) {
  const int64_t R = shape.n_rows, C = shape.n_cols, T = shape.n_tokens;
  auto one = quantized(t, random_floats(static_cast<size_t>(R * C), 5));
  if (layout != MatrixLayout::kRows) {  // the layout models load it in (ops.h pack_matrix)
    const MatrixRef rows{t, one.data(), R, C, dtype_row_bytes(t, C)};
    std::vector<std::byte> packed(matrix_bytes(rows, layout));
    pack_matrix(rows, layout, packed.data());
    one = std::move(packed);
  }
  const size_t n_copies = shape.cold ? (kColdBytes + one.size() - 1) / one.size() : 1;
  std::vector<std::byte> w(one.size() * n_copies);
  for (size_t i = 0; i < n_copies; ++i) std::memcpy(w.data() + i * one.size(), one.data(), one.size());
  const auto x = random_floats(static_cast<size_t>(T * C), 6);
  std::vector<float> y(static_cast<size_t>(T * R));
  size_t copy = 0;
  for (auto _ : state) {
    const MatrixRef m{t, w.data() + copy * one.size(), R, C, dtype_row_bytes(t, C), layout};
    matmul(*table, m, x.data(), T, y.data(), nullptr);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    if (++copy == n_copies) copy = 0;
  }
  const double bytes = static_cast<double>(one.size()) + static_cast<double>(x.size() + y.size()) * 4;
  set_counters(state, bytes, 2.0 * static_cast<double>(R * C * T));
}

// Every kernel set this CPU runs, built as dispatch builds them (each level on the one below),
// whatever TESSERA_ISA says; the context's active_isa names the one the engine would use.
std::vector<const KernelTable*> tables_to_compare() {
  static KernelTable avx2 = [] {
    KernelTable t = scalar_kernel_table();
    install_avx2_rows(t);
    t.isa = "avx2";
    return t;
  }();
  static KernelTable avx512 = [] {
    KernelTable t = avx2;
    install_avx512_rows(t);
    t.isa = "avx512";
    return t;
  }();
  std::vector<const KernelTable*> tables = {&scalar_kernel_table()};
  if (cpu_features().has_avx2_set()) tables.push_back(&avx2);
  if (cpu_features().has_avx512_set()) tables.push_back(&avx512);
  return tables;
}

// One decode row of SmolLM2-135M's attention (H = 64, 9 query heads, 3 KV heads) over an f16
// cache of n_pos positions.
void bm_attention(benchmark::State& state, AttentionRowFn fn, int64_t n_pos) {
  constexpr int64_t H = 64, NH = 9, NKV = 3;
  std::vector<float> kf = random_floats(static_cast<size_t>(n_pos * NKV * H), 5);
  std::vector<float> vf = random_floats(kf.size(), 6);
  std::vector<std::byte> k(kf.size() * 2), v(vf.size() * 2);
  kernels_for(scalar_kernel_table(), DType::kF16).from_float(kf.data(), k.data(), static_cast<int64_t>(kf.size()));
  kernels_for(scalar_kernel_table(), DType::kF16).from_float(vf.data(), v.data(), static_cast<int64_t>(vf.size()));
  const KvRows rows{DType::kF16, k.data(), v.data(), static_cast<size_t>(NKV * H * 2)};
  std::vector<float> q = random_floats(static_cast<size_t>(NH * H), 7);
  std::vector<float> out(q.size());
  for (auto _ : state) {
    fn(q.data(), rows, n_pos, NH, NKV, H, 0, NKV, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(k.size() + v.size()));
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 4.0 * static_cast<double>(NH * H * n_pos),
      benchmark::Counter::kIsRate);
}

void register_all() {
  const std::vector<const KernelTable*> tables = tables_to_compare();
  const std::string row = "/" + std::to_string(kRowLength);
  for (DType t : kDTypes) {
    for (const KernelTable* table : tables) {
      const std::string name = std::string(dtype_name(t)) + "/" + table->isa;
      benchmark::RegisterBenchmark(("vec_dot/" + name + row).c_str(), bm_vec_dot, table, t);
    }
  }
  for (const KernelTable* table : tables) {
    benchmark::RegisterBenchmark(("quantize/q8_0/" + std::string(table->isa) + row).c_str(),
                                 bm_quantize_q8_0, table);
  }
  for (DType t : kDTypes) {
    for (const KernelTable* table : tables) {
      const std::string name = std::string(dtype_name(t)) + "/" + table->isa;
      benchmark::RegisterBenchmark(("to_float/" + name + row).c_str(), bm_to_float, table, t);
    }
  }
  for (const Shape& s : kShapes) {
    for (DType t : kDTypes) {
      if (s.n_cols % dtype_info(t).block_size != 0) continue;  // e.g. 576 columns for Q4_K
      for (const KernelTable* table : tables) {
        const std::string name = "matmul/" + std::string(dtype_name(t)) + "/" + table->isa + "/R" +
                                 std::to_string(s.n_rows) + "xC" + std::to_string(s.n_cols) + "/T" +
                                 std::to_string(s.n_tokens) + (s.cold ? "/cold" : "");
        benchmark::RegisterBenchmark(name.c_str(), bm_matmul, table, t, s, MatrixLayout::kRows)
            ->Unit(benchmark::kMicrosecond);
        const MatrixRef probe{t, nullptr, s.n_rows, s.n_cols, dtype_row_bytes(t, s.n_cols)};
        if (const MatrixLayout l = preferred_layout(*table, probe); l != MatrixLayout::kRows) {
          benchmark::RegisterBenchmark((name + "/packed16").c_str(), bm_matmul, table, t, s, l)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  for (int64_t n_pos : {128, 1024}) {
    for (const KernelTable* table : tables) {
      const std::string name = "attention/" + std::string(table->isa) + "/H64xNH9xNKV3/P" +
                               std::to_string(n_pos);
      benchmark::RegisterBenchmark(name.c_str(), bm_attention, table->attention_row, n_pos)
          ->Unit(benchmark::kMicrosecond);
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
  benchmark::AddCustomContext("threads", "1");
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
