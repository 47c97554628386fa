// Kernel microbenchmarks, single-threaded (except decode_step): for every dtype, the scalar
// reference table and each SIMD kernel set the CPU supports (avx2, avx512) measured side by side
// in the same run.
//   vec_dot/<dtype>/<isa>/4096            one row against activations in vec_dot_type (L1-resident)
//   quantize/q8_0/<isa>/4096              activation quantization, on the matmul hot path
//   to_float/<dtype>/<isa>/4096           dequantization (embedding lookups)
//   matmul/<dtype>/<isa>/R<r>xC<c>/T<t>   y[T, R] = x[T, C] . w[R, C]^T through kernels::matmul
//   .../cold                              the same, cycling through copies of w totalling
//                                         >= 256 MiB so every call streams w from DRAM
//   attention/<isa>/H64xNH9xNKV3/P<n>     one query row over n cached f16 positions (SmolLM2
//                                         heads); bytes = the K and V rows read
//   attention_rows/<isa>/H64xNH9xNKV3/R5xP<n>
//                                         a prefill tile: 5 rows of one sequence attending to
//                                         n-4..n positions (attention_rows; avx2 runs the row
//                                         kernel per row)
//   decode_step/<dtype>/tinyllama-1.1b    every matmul of one TinyLlama-1.1B decode step (22
//                                         layers' Q/K/V, O, gate/up, down and the output
//                                         projection, packed as models load them) on the active
//                                         kernels and a pool of every core, as the model runs
//                                         them; after each step (untimed) the memory probe reads
//                                         1 GiB on the same threads: probe_GB/s, and of_probe =
//                                         the step's GB/s over that probe's, averaged over steps
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
#include "tessera/kernels/iquants.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/kquants_low.h"
#include "tessera/kernels/legacy_quants.h"
#include "tessera/kernels/lora.h"
#include "tessera/kernels/ops.h"
#include "tessera/kernels/probe.h"
#include "tessera/base/thread_pool.h"

#include <chrono>
#include <thread>

namespace tessera::kernels {
namespace {

constexpr int64_t kRowLength = 4096;
constexpr size_t kColdBytes = size_t{256} << 20;

const DType kDTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,  DType::kQ4_0,
                         DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,  DType::kQ3_K,
                         DType::kQ4_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS,
                         DType::kQ8_0_2of4, DType::kF16_2of4};

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
    install_avx2_kquant_rows(t);
    install_avx2_kquant_low_rows(t);
    install_avx2_legacy_quant_rows(t);
    install_avx2_iquant_rows(t);
    t.isa = "avx2";
    return t;
  }();
  static KernelTable avx512 = [] {
    KernelTable t = avx2;
    install_avx512_rows(t);
    install_avx512_kquant_low_rows(t);
    install_avx512_legacy_quant_rows(t);
    install_avx512_iquant_rows(t);
    t.isa = "avx512";
    return t;
  }();
  std::vector<const KernelTable*> tables = {&scalar_kernel_table()};
  if (cpu_features().has_avx2_set()) tables.push_back(&avx2);
  if (cpu_features().has_avx512_set()) tables.push_back(&avx512);
  return tables;
}

// SmolLM2-135M's attention shape (H = 64, 9 query heads, 3 KV heads) and an f16 cache of n_pos
// random positions of it.
constexpr int64_t kAttnH = 64, kAttnNH = 9, kAttnNKV = 3;
struct F16Cache {
  explicit F16Cache(int64_t n_pos) {
    const auto n = static_cast<size_t>(n_pos * kAttnNKV * kAttnH);
    const DTypeKernels& f16 = kernels_for(scalar_kernel_table(), DType::kF16);
    k.resize(n * 2), v.resize(n * 2);
    f16.from_float(random_floats(n, 5).data(), k.data(), static_cast<int64_t>(n));
    f16.from_float(random_floats(n, 6).data(), v.data(), static_cast<int64_t>(n));
    rows = KvRows{DType::kF16, k.data(), v.data(), static_cast<size_t>(kAttnNKV * kAttnH * 2)};
  }
  int64_t bytes() const { return static_cast<int64_t>(k.size() + v.size()); }
  std::vector<std::byte> k, v;
  KvRows rows;
};

// One decode row over n_pos cached positions.
// One LoRA update y += s * B (A x) of a TinyLlama projection (n_in -> n_out) for `rows` rows of one
// adapter: what a decode step adds per adapter segment and projection, one thread.
void bm_lora(benchmark::State& state, const KernelTable* table, int64_t n_in, int64_t n_out,
             int64_t rank, int64_t rows) {
  const std::vector<float> a = random_floats(static_cast<size_t>(rank * n_in), 11);
  const std::vector<float> b = random_floats(static_cast<size_t>(n_out * rank), 12);
  const std::vector<float> x = random_floats(static_cast<size_t>(rows * n_in), 13);
  std::vector<float> t(static_cast<size_t>(rows * rank));
  std::vector<float> y(static_cast<size_t>(rows * n_out));
  for (auto _ : state) {
    lora_shrink(*table, a.data(), rank, n_in, x.data(), n_in, rows, t.data(), nullptr);
    lora_expand(*table, b.data(), rank, n_out, t.data(), rows, 0.5f, y.data(), n_out, nullptr);
    benchmark::DoNotOptimize(y.data());
  }
  set_counters(state, 4.0 * rank * (n_in + n_out), 4.0 * rows * rank * (n_in + n_out));
}

void bm_attention(benchmark::State& state, AttentionRowFn fn, int64_t n_pos) {
  constexpr int64_t H = kAttnH, NH = kAttnNH, NKV = kAttnNKV;
  const F16Cache cache(n_pos);
  const KvRows& rows = cache.rows;
  std::vector<float> q = random_floats(static_cast<size_t>(NH * H), 7);
  std::vector<float> out(q.size());
  for (auto _ : state) {
    fn(q.data(), rows, n_pos, NH, NKV, H, 0, NKV, out.data());
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * cache.bytes());
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 4.0 * static_cast<double>(NH * H * n_pos),
      benchmark::Counter::kIsRate);
}

// A prefill tile of SmolLM2-135M's attention: 5 consecutive rows (15 query vectors per KV head,
// the tile the model forms for 3 heads per KV head) ending at n_pos positions, f16 cache.
void bm_attention_rows(benchmark::State& state, AttentionRowsFn fn, int64_t n_pos) {
  constexpr int64_t H = kAttnH, NH = kAttnNH, NKV = kAttnNKV, R = 5;
  const F16Cache cache(n_pos);
  const KvRows& rows = cache.rows;
  std::vector<float> q = random_floats(static_cast<size_t>(R * NH * H), 7);
  std::vector<float> out(q.size());
  int64_t n_pos_rows[R], positions = 0;
  for (int64_t r = 0; r < R; ++r) positions += (n_pos_rows[r] = n_pos - (R - 1) + r);
  for (auto _ : state) {
    fn(q.data(), NH * H, n_pos_rows, R, rows, NH, NKV, H, 0, NKV, out.data(), NH * H);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(state.iterations() * cache.bytes());
  state.counters["FLOP/s"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 4.0 * static_cast<double>(NH * H * positions),
      benchmark::Counter::kIsRate);
}

// One decode step's matmuls of TinyLlama-1.1B (dim 2048, 22 layers, 4 KV heads of 64, FFN 5632,
// vocabulary 32000) in `t`, in the layout the active table packs them to, with matmul_shared_input
// where the model uses it. The weights are byte patterns (every f16 field finite), not a model:
// timing does not depend on the values. Allocated when the benchmark runs (about 2 GiB for F16).
void bm_decode_step(benchmark::State& state, DType t) {
  const KernelTable& table = kernel_table();
  constexpr int64_t kLayers = 22, kDim = 2048, kKv = 256, kFfn = 5632, kVocab = 32000;
  std::vector<MatrixRef> ms;
  size_t total = 0;
  auto add = [&](int64_t r, int64_t c) {
    MatrixRef m{t, nullptr, r, c, dtype_row_bytes(t, c)};
    m.layout = preferred_layout(table, m);
    total += matrix_bytes(m, m.layout);
    ms.push_back(m);
  };
  for (int64_t l = 0; l < kLayers; ++l) {
    add(kDim, kDim), add(kKv, kDim), add(kKv, kDim), add(kDim, kDim);
    add(kFfn, kDim), add(kFfn, kDim), add(kDim, kFfn);
  }
  add(kVocab, kDim);
  std::vector<uint32_t> w((total + 3) / 4);
  uint32_t s = 12345;
  for (auto& v : w) {  // 0x3b per byte at most: as f16, finite and below 1
    s = s * 1664525u + 1013904223u;
    v = (s >> 3) & 0x3b3b3b3bu;
  }
  size_t off = 0;
  for (auto& m : ms) {
    m.data = reinterpret_cast<const std::byte*>(w.data()) + off;
    off += matrix_bytes(m, m.layout);
  }
  ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const auto x = random_floats(kFfn, 8);
  std::vector<float> y0(kVocab), y1(kFfn), y2(kFfn);
  std::vector<float> probe((size_t{1} << 30) / sizeof(float), 1.0f);
  const auto n_threads = static_cast<size_t>(pool.size());
  const size_t per_thread = probe.size() / n_threads / 64 * 64;  // probe_read wants n % 64 == 0
  const double probe_bytes = static_cast<double>(per_thread * n_threads * sizeof(float));
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  double probe_sum = 0, ratio_sum = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    for (int64_t l = 0; l < kLayers; ++l) {
      const MatrixRef* m = &ms[static_cast<size_t>(l * 7)];
      float* const qkv[] = {y0.data(), y1.data(), y2.data()};
      matmul_shared_input(table, std::span<const MatrixRef>(m, 3), x.data(), 1, qkv, &pool);
      matmul(table, m[3], x.data(), 1, y0.data(), &pool);
      float* const gate_up[] = {y1.data(), y2.data()};
      matmul_shared_input(table, std::span<const MatrixRef>(m + 4, 2), x.data(), 1, gate_up, &pool);
      matmul(table, m[6], x.data(), 1, y0.data(), &pool);
    }
    matmul(table, ms.back(), x.data(), 1, y0.data(), &pool);
    benchmark::DoNotOptimize(y0.data());
    const double step_s = seconds_since(t0);
    state.PauseTiming();
    const auto p0 = Clock::now();
    pool.run([&](int i, int) {
      benchmark::DoNotOptimize(probe_read(probe.data() + static_cast<size_t>(i) * per_thread,
                                          static_cast<int64_t>(per_thread)));
    });
    const double probe_gbps = probe_bytes / seconds_since(p0) / 1e9;
    probe_sum += probe_gbps;
    ratio_sum += static_cast<double>(total) / step_s / 1e9 / probe_gbps;
    state.ResumeTiming();
  }
  const auto n = static_cast<double>(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(total));
  state.counters["probe_GB/s"] = probe_sum / n;
  state.counters["of_probe"] = ratio_sum / n;
  state.counters["threads"] = pool.size();
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
  for (DType t : {DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K}) {
    const std::string name = "decode_step/" + std::string(dtype_name(t)) + "/tinyllama-1.1b";
    benchmark::RegisterBenchmark(name.c_str(), bm_decode_step, t)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const KernelTable* table : tables) {
    for (int64_t rows : {1, 16}) {
      for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{2048, 5632}, {5632, 2048}}) {
        const std::string name = "lora/" + std::string(table->isa) + "/r16/" +
                                 std::to_string(n_in) + "x" + std::to_string(n_out) + "/rows" +
                                 std::to_string(rows);
        benchmark::RegisterBenchmark(name.c_str(), bm_lora, table, n_in, n_out, 16, rows)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  for (int64_t n_pos : {128, 1024}) {
    for (const KernelTable* table : tables) {
      const std::string name = "attention/" + std::string(table->isa) + "/H64xNH9xNKV3/P" +
                               std::to_string(n_pos);
      benchmark::RegisterBenchmark(name.c_str(), bm_attention, table->attention_row, n_pos)
          ->Unit(benchmark::kMicrosecond);
      const std::string rows_name = "attention_rows/" + std::string(table->isa) +
                                    "/H64xNH9xNKV3/R5xP" + std::to_string(n_pos);
      benchmark::RegisterBenchmark(rows_name.c_str(), bm_attention_rows, table->attention_rows, n_pos)
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
  benchmark::AddCustomContext("threads", "1 (decode_step: every core)");
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
