// One-core decode matmul (one token) of a TinyLlama ffn_down-shaped matrix: dense Q8_0 in its
// load-time layout (Q8_0x16), Q8_0_2of4 in rows (the shuffle vec_dot) and Q8_0_2of4x16 (the
// gather kernel, packed_q8_0_2of4.h), alternating, 7 rounds, medians. No argument: 256 rows in
// cache; any argument: 2048 rows streamed from DRAM (256 MiB of copies). Not a CMake target
// (written while the tree was building); build and run it against a release build:
//   g++ -std=c++20 -O2 -Ibuild/release/include/kernels -Ibuild/release/include/base \
//     microbench/sparse_gather_bench.cpp build/release/src/kernels/libtessera_kernels.a \
//     build/release/src/base/libtessera_base.a -lfmt -lpthread -o /tmp/sparse_gather_bench
//   taskset -c 1 /tmp/sparse_gather_bench; taskset -c 1 /tmp/sparse_gather_bench cold
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>
#include <algorithm>
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"
using namespace tessera::kernels;
struct Mat { std::vector<std::byte> buf; MatrixRef ref; size_t one; size_t copies; };
Mat make(DType t, MatrixLayout l, int64_t R, int64_t C, size_t cold_bytes) {
  std::vector<float> w(R * C); uint64_t s = 12345;
  for (auto& x : w) { s = s * 6364136223846793005ull + 1; x = float(int64_t(s >> 40) % 2001 - 1000) / 1000.f; }
  std::vector<std::byte> q(dtype_row_bytes(t, R * C));
  kernels_for(t).from_float(w.data(), q.data(), R * C);
  MatrixRef rows{t, q.data(), R, C, dtype_row_bytes(t, C)};
  Mat m; m.one = matrix_bytes(rows, l); m.copies = std::max<size_t>(1, cold_bytes / m.one);
  m.buf.resize(m.one * m.copies);
  for (size_t i = 0; i < m.copies; ++i) pack_matrix(rows, l, m.buf.data() + i * m.one);
  m.ref = rows; m.ref.layout = l; m.ref.data = m.buf.data();
  return m;
}
double run(Mat& m, int iters) {
  std::vector<float> x(m.ref.n_cols), y(m.ref.n_rows);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    MatrixRef r = m.ref; r.data = m.buf.data() + (i % m.copies) * m.one;
    matmul(r, x.data(), 1, y.data(), nullptr);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
}
int main(int argc, char** argv) {
  const int64_t R = 2048, C = 5632;  // TinyLlama ffn_down-like; 1 token
  const size_t cold = argc > 1 ? (size_t(256) << 20) : 0;
  printf("isa %s, %s, R %ld C %ld\n", kernel_table().isa, cold ? "streamed from DRAM (256 MiB of copies)" : "in cache (one copy)", R, C);
  struct V { const char* name; DType t; MatrixLayout l; };
  V vs[] = {{"dense q8_0 x16", DType::kQ8_0, MatrixLayout::kQ8_0x16},
            {"q8_0_2of4 rows (old)", DType::kQ8_0_2of4, MatrixLayout::kRows},
            {"q8_0_2of4 x16 (new)", DType::kQ8_0_2of4, MatrixLayout::kQ8_0_2of4x16}};
  std::vector<Mat> ms; for (auto& v : vs) ms.push_back(make(v.t, v.l, cold ? R : 256, C, cold));
  std::vector<std::vector<double>> ts(3);
  for (int round = 0; round < 7; ++round)
    for (int k = 0; k < 3; ++k) ts[k].push_back(run(ms[k], cold ? 40 : 400));
  for (int k = 0; k < 3; ++k) {
    std::sort(ts[k].begin(), ts[k].end()); double t = ts[k][3];
    double wts = double(ms[k].ref.n_rows) * C;
    printf("%-22s median %8.1f us  %6.2f G weights/s  %6.2f GB/s\n", vs[k].name, t * 1e6, wts / t / 1e9, ms[k].one / t / 1e9);
  }
}
