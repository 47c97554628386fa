// Shared checks of vec_dot_tile kernels (kernel_table.h) for the kernel tests: a tile against its
// vec_dot bit for bit in every shape, and matmul over several tokens against one token at a time.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/dtype.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"

namespace tessera::kernels::tile_check {

using VecDot = float (*)(const void* row, const void* x, int64_t n);
using VecDotTile = void (*)(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                            size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride,
                            int64_t n);

inline bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// `w`: kMaxTile weight rows of n values, w_row_bytes apart; `x`: kMaxTile activation rows in the
// vec_dot_type, x_row_bytes apart. Every tile shape R x T (1..kMaxTile each) must give each output
// exactly vec_dot(row r, token t), write only y[t * y_stride + r] for r < R, t < T, and honour a
// y_stride wider than the tile.
inline void expect_tile_equals_vec_dot(VecDotTile tile, VecDot vec_dot, const std::byte* w,
                                       size_t w_row_bytes, const std::byte* x, size_t x_row_bytes,
                                       int64_t n, const std::string& what) {
  constexpr float kUntouched = -12345.5f;
  float want[kMaxTile][kMaxTile];  // [token][row]
  for (int t = 0; t < kMaxTile; ++t) {
    for (int r = 0; r < kMaxTile; ++r) {
      want[t][r] = vec_dot(w + r * w_row_bytes, x + t * x_row_bytes, n);
    }
  }
  for (int rows = 1; rows <= kMaxTile; ++rows) {
    for (int tokens = 1; tokens <= kMaxTile; ++tokens) {
      const int64_t stride = rows + 3;
      std::vector<float> y(static_cast<size_t>(stride * kMaxTile), kUntouched);
      tile(w, w_row_bytes, rows, x, x_row_bytes, tokens, y.data(), stride, n);
      for (int t = 0; t < kMaxTile; ++t) {
        for (int64_t r = 0; r < stride; ++r) {
          const float got = y[static_cast<size_t>(t * stride + r)];
          if (t < tokens && r < rows) {
            EXPECT_TRUE(same_bits(got, want[t][r]))
                << what << " n " << n << " tile " << rows << "x" << tokens << " row " << r
                << " token " << t << ": " << got << " vs vec_dot " << want[t][r];
          } else {
            EXPECT_EQ(got, kUntouched) << what << " tile " << rows << "x" << tokens
                                       << " wrote outside it at row " << r << " token " << t;
          }
        }
      }
    }
  }
}

// Through the active kernel table: matmul of `n_tokens` tokens (tiles where the dtype has them)
// equals, bit for bit, matmul of each token alone (vec_dot), on quantized normal weights and
// activations. Returns whether the active table has a tile for `t` (so callers can tell a test
// that exercised the tile from one that ran vec_dot both ways).
inline bool expect_matmul_batch_invariant(DType t, int64_t n_rows, int64_t n_cols, int64_t n_tokens,
                                          uint64_t seed) {
  const DTypeKernels& k = kernels_for(t);
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> wf(static_cast<size_t>(n_rows * n_cols));
  for (float& v : wf) v = 0.05f * normal(rng);
  std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
  for (float& v : x) v = normal(rng);
  const size_t row_bytes = dtype_row_bytes(t, n_cols);
  std::vector<std::byte> q(row_bytes * static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    k.from_float(wf.data() + r * n_cols, q.data() + r * row_bytes, n_cols);
  }
  const MatrixRef w{t, q.data(), n_rows, n_cols, row_bytes};
  std::vector<float> y(static_cast<size_t>(n_tokens * n_rows));
  matmul(w, x.data(), n_tokens, y.data(), nullptr);
  for (int64_t tok = 0; tok < n_tokens; ++tok) {
    std::vector<float> one(static_cast<size_t>(n_rows));
    matmul(w, x.data() + tok * n_cols, 1, one.data(), nullptr);
    for (int64_t r = 0; r < n_rows; ++r) {
      EXPECT_TRUE(same_bits(y[static_cast<size_t>(tok * n_rows + r)], one[static_cast<size_t>(r)]))
          << dtype_name(t) << " isa " << kernel_table().isa << " " << n_rows << "x" << n_cols
          << " token " << tok << " of " << n_tokens << " row " << r << ": batched "
          << y[static_cast<size_t>(tok * n_rows + r)] << " alone " << one[static_cast<size_t>(r)];
    }
  }
  return k.vec_dot_tile != nullptr;
}

}  // namespace tessera::kernels::tile_check
