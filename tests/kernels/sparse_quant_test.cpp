// 2:4 sparse types F16_2of4, Q8_0_2of4, Q4_0_2of4: layouts decoded from hand-built bytes, an
// independent decoder written here from the layout description (sparse_blocks.h), exactly 2 of 4
// kept and the largest kept by from_float, encoding with an explicit mask equal to the dense
// type's encoding of the pruned row, dot / vec_dot against f64 dots of the decoded row, the AVX2
// and AVX-512 vec_dots against the scalar references (bit for bit for Q8_0/Q4_0; skipped where
// the CPU lacks the set), the mask check, and a matmul through the active kernel table.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"
#include "tessera/kernels/sparse_quants.h"

namespace tessera::kernels {
namespace {

const DType kTypes[] = {DType::kF16_2of4, DType::kQ8_0_2of4, DType::kQ4_0_2of4};
// Row lengths in weights: 1, 2, 3, 5 and 17 blocks of 64 (so 2x that of 32), and 4096.
const int64_t kRowWeights[] = {64, 128, 192, 320, 1088, 4096};

std::string name(DType t) { return std::string(dtype_name(t)); }

std::vector<float> random_row(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = dist(rng);
  return x;
}

// A valid random keep-mask: two of each four, any of the six choices.
std::vector<uint8_t> random_keep(int64_t n, uint32_t seed) {
  static const uint8_t kPairs[6][4] = {{1, 1, 0, 0}, {1, 0, 1, 0}, {1, 0, 0, 1},
                                       {0, 1, 1, 0}, {0, 1, 0, 1}, {0, 0, 1, 1}};
  std::mt19937 rng(seed);
  std::vector<uint8_t> keep(static_cast<size_t>(n));
  for (int64_t g = 0; g < n; g += 4) std::memcpy(&keep[g], kPairs[rng() % 6], 4);
  return keep;
}

// Independent decoder, from the layout text: reads the bytes, not the structs.
std::vector<float> decode(DType t, const std::vector<std::byte>& bytes, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), 0.0f);
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  auto u16 = [&](size_t off) { return static_cast<uint16_t>(p[off] | p[off + 1] << 8); };
  auto bit = [&](size_t off, int j) { return (p[off + j / 8] >> (j % 8)) & 1; };
  if (t == DType::kF16_2of4) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const size_t base = static_cast<size_t>(b) * 36;
      int k = 0;
      for (int j = 0; j < 32; ++j) {
        if (bit(base, j)) out[b * 32 + j] = f16_to_f32(u16(base + 4 + 2 * k++));
      }
    }
  } else if (t == DType::kQ8_0_2of4) {
    for (int64_t b = 0; b < n / 32; ++b) {
      const size_t base = static_cast<size_t>(b) * 22;
      const float d = f16_to_f32(u16(base));
      int k = 0;
      for (int j = 0; j < 32; ++j) {
        if (bit(base + 2, j)) out[b * 32 + j] = d * static_cast<int8_t>(p[base + 6 + k++]);
      }
    }
  } else {
    for (int64_t b = 0; b < n / 64; ++b) {
      const size_t base = static_cast<size_t>(b) * 26;
      const float d = f16_to_f32(u16(base));
      int k = 0;
      for (int j = 0; j < 64; ++j) {
        if (!bit(base + 2, j)) continue;
        const int q = k < 16 ? (p[base + 10 + k] & 15) : (p[base + 10 + k - 16] >> 4);
        out[b * 64 + j] = d * static_cast<float>(q - 8);
        ++k;
      }
    }
  }
  return out;
}

std::vector<std::byte> encode(DType t, const float* x, int64_t n) {
  std::vector<std::byte> out(dtype_row_bytes(t, n));
  kernels_for(scalar_kernel_table(), t).from_float(x, out.data(), n);
  return out;
}

// ---- Layout ---------------------------------------------------------------------------------

TEST(SparseLayout, TypeIdsSizesAndNames) {
  EXPECT_EQ(static_cast<uint32_t>(DType::kF16_2of4), 1024u);
  EXPECT_EQ(static_cast<uint32_t>(DType::kQ8_0_2of4), 1025u);
  EXPECT_EQ(static_cast<uint32_t>(DType::kQ4_0_2of4), 1026u);
  EXPECT_EQ(dtype_row_bytes(DType::kF16_2of4, 32), 36u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ8_0_2of4, 32), 22u);
  EXPECT_EQ(dtype_row_bytes(DType::kQ4_0_2of4, 64), 26u);
  for (DType t : kTypes) {
    EXPECT_TRUE(dtype_info(t).supported);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
    EXPECT_EQ(dtype_info(static_cast<uint32_t>(t))->type, t);
    EXPECT_TRUE(is_tessera_dtype(t));
    EXPECT_EQ(sparse_2of4_type_for(dense_type_of_2of4(t)), t);
    EXPECT_LT(dtype_slot(t), kDTypeSlots);
  }
  EXPECT_EQ(dtype_slot(DType::kQ8_0), 8u);  // GGML ids index themselves
  EXPECT_FALSE(dtype_info(1027).has_value());
  EXPECT_EQ(kernels_for(DType::kQ8_0_2of4).vec_dot_type, DType::kQ8_0);
  EXPECT_EQ(kernels_for(DType::kQ4_0_2of4).vec_dot_type, DType::kQ8_0);
  EXPECT_EQ(kernels_for(DType::kF16_2of4).vec_dot_type, DType::kF32);
}

// Q8_0_2of4 block: d = 0.5 (0x3800); mask 0x...: weights 0,1 | 6,7 | 8,10 | ... kept.
TEST(SparseLayout, Q8_0_2of4DecodesHandBuiltBlock) {
  uint8_t b[22] = {};
  b[0] = 0x00, b[1] = 0x38;  // d = 0.5
  // Mask nibbles, group 0 = 0b0011 (weights 0, 1), group 1 = 0b1100 (6, 7), group 2 = 0b0101
  // (8, 10), groups 3-7 = 0b1001 (12+0, 12+3, ...).
  const uint32_t mask = 0x3u | 0xcu << 4 | 0x5u << 8 | 0x99999u << 12;
  std::memcpy(b + 2, &mask, 4);
  for (int k = 0; k < 16; ++k) b[6 + k] = static_cast<uint8_t>(static_cast<int8_t>(k - 8));
  float y[32];
  scalar::q8_0_2of4_to_float(b, y, 32);
  EXPECT_EQ(y[0], -4.0f);   // kept 0: -8 * 0.5
  EXPECT_EQ(y[1], -3.5f);   // kept 1
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[6], -3.0f);   // kept 2
  EXPECT_EQ(y[7], -2.5f);   // kept 3
  EXPECT_EQ(y[8], -2.0f);   // kept 4
  EXPECT_EQ(y[9], 0.0f);
  EXPECT_EQ(y[10], -1.5f);  // kept 5
  EXPECT_EQ(y[12], -1.0f);  // kept 6
  EXPECT_EQ(y[15], -0.5f);  // kept 7
  EXPECT_EQ(y[31], 3.5f);   // kept 15
  EXPECT_EQ(y[30], 0.0f);
}

// Q4_0_2of4: kept 0..15 are low nibbles, 16..31 the high nibbles; x = d * (q - 8).
TEST(SparseLayout, Q4_0_2of4DecodesHandBuiltBlock) {
  uint8_t b[26] = {};
  b[0] = 0x00, b[1] = 0x40;  // d = 2
  const uint64_t mask = 0x3333333333333333ull;  // weights 4g, 4g + 1 kept
  std::memcpy(b + 2, &mask, 8);
  b[10 + 0] = 0xf9;   // kept 0 = 9, kept 16 = 15
  b[10 + 15] = 0x08;  // kept 15 = 8, kept 31 = 0
  float y[64];
  scalar::q4_0_2of4_to_float(b, y, 64);
  EXPECT_EQ(y[0], 2.0f);     // (9 - 8) * 2
  EXPECT_EQ(y[2], 0.0f);     // pruned
  EXPECT_EQ(y[32], 14.0f);   // kept 16: (15 - 8) * 2, at weight 32
  EXPECT_EQ(y[29], 0.0f);    // kept 15: (8 - 8) * 2 at weight 29
  EXPECT_EQ(y[61], -16.0f);  // kept 31: (0 - 8) * 2 at weight 61
  EXPECT_EQ(y[1], -16.0f);   // kept 1: nibble 0
}

TEST(SparseLayout, F16_2of4DecodesHandBuiltBlock) {
  uint8_t b[36] = {};
  const uint32_t mask = 0xaaaaaaaau;  // odd weights kept
  std::memcpy(b, &mask, 4);
  b[4] = 0x00, b[5] = 0x3c;    // kept 0 = 1.0 -> weight 1
  b[34] = 0x00, b[35] = 0xc0;  // kept 15 = -2.0 -> weight 31
  float y[32];
  scalar::f16_2of4_to_float(b, y, 32);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[31], -2.0f);
  EXPECT_EQ(y[3], 0.0f);  // kept 1 is 0.0
}

// ---- Encoding -------------------------------------------------------------------------------

TEST(SparseEncode, FromFloatKeepsTheTwoLargestOfFourAndMatchesTheIndependentDecoder) {
  for (DType t : kTypes) {
    for (int64_t n : kRowWeights) {
      const auto x = random_row(n, static_cast<uint32_t>(n));
      const auto bytes = encode(t, x.data(), n);
      std::vector<float> y(static_cast<size_t>(n));
      kernels_for(scalar_kernel_table(), t).to_float(bytes.data(), y.data(), n);
      EXPECT_EQ(y, decode(t, bytes, n)) << name(t) << " n=" << n;
      EXPECT_EQ(first_invalid_2of4_block(t, bytes.data(), bytes.size()), -1);  // exactly 2 of 4
      for (int64_t g = 0; g < n; g += 4) {
        // The two of largest |x| are kept (normal data has no ties), the other two are zero.
        int order[4] = {0, 1, 2, 3};
        std::sort(order, order + 4,
                  [&](int a, int b) { return std::fabs(x[g + a]) > std::fabs(x[g + b]); });
        for (int j = 2; j < 4; ++j) EXPECT_EQ(y[g + order[j]], 0.0f) << name(t) << " at " << g + order[j];
        int kept = 0;
        for (int j = 0; j < 4; ++j) kept += y[g + j] != 0.0f ? 1 : 0;
        EXPECT_LE(kept, 2) << name(t) << " group " << g;  // a kept value may round to 0 in Q4_0
      }
    }
  }
}

// encode_2of4_row with an explicit mask gives what the dense type gives for the row with the
// pruned weights set to zero (F16, Q8_0: exactly; Q4_0_2of4 has its own scale per 64 weights,
// checked against Q4_0 of the 32 kept values).
TEST(SparseEncode, ExplicitMaskMatchesDenseEncodingOfThePrunedRow) {
  for (DType t : kTypes) {
    const int64_t n = 256;
    const auto x = random_row(n, 7);
    const auto keep = random_keep(n, 11);
    std::vector<std::byte> packed(dtype_row_bytes(t, n));
    encode_2of4_row(t, x.data(), keep.data(), packed.data(), n);
    std::vector<float> got(static_cast<size_t>(n));
    kernels_for(scalar_kernel_table(), t).to_float(packed.data(), got.data(), n);
    for (int64_t j = 0; j < n; ++j) {
      if (!keep[j]) {
        EXPECT_EQ(got[j], 0.0f) << name(t) << " j=" << j;
      }
    }
    if (t == DType::kQ4_0_2of4) {
      for (int64_t b = 0; b < n / 64; ++b) {
        std::vector<float> kept;
        for (int j = 0; j < 64; ++j) {
          if (keep[b * 64 + j]) kept.push_back(x[b * 64 + j]);
        }
        ASSERT_EQ(kept.size(), 32u);
        BlockQ4_0 q;
        scalar::q4_0_from_float(kept.data(), &q, 32);
        std::vector<float> want(32);
        scalar::q4_0_to_float(&q, want.data(), 32);
        int k = 0;
        for (int j = 0; j < 64; ++j) {
          if (keep[b * 64 + j]) {
            EXPECT_EQ(got[b * 64 + j], want[k++]);
          }
        }
      }
      continue;
    }
    const DType dense = dense_type_of_2of4(t);
    std::vector<float> pruned = x;
    for (int64_t j = 0; j < n; ++j) {
      if (!keep[j]) pruned[j] = 0.0f;
    }
    std::vector<std::byte> d(dtype_row_bytes(dense, n));
    kernels_for(scalar_kernel_table(), dense).from_float(pruned.data(), d.data(), n);
    std::vector<float> want(static_cast<size_t>(n));
    kernels_for(scalar_kernel_table(), dense).to_float(d.data(), want.data(), n);
    EXPECT_EQ(got, want) << name(t);
  }
}

TEST(SparseEncode, MaskCheckFindsTheBadBlock) {
  for (DType t : kTypes) {
    const int64_t n = 256;
    const auto x = random_row(n, 3);
    auto bytes = encode(t, x.data(), n);
    EXPECT_EQ(first_invalid_2of4_block(t, bytes.data(), bytes.size()), -1);
    const size_t block_bytes = static_cast<size_t>(dtype_info(t).block_bytes);
    const size_t mask_off = t == DType::kF16_2of4 ? 0 : 2;
    bytes[2 * block_bytes + mask_off] |= std::byte{0x0f};  // block 2: group 0 keeps 4
    EXPECT_EQ(first_invalid_2of4_block(t, bytes.data(), bytes.size()), 2) << name(t);
    bytes[2 * block_bytes + mask_off] = std::byte{0x13};  // group 0 keeps 1, group 1 keeps 1
    EXPECT_EQ(first_invalid_2of4_block(t, bytes.data(), bytes.size()), 2) << name(t);
  }
}

// ---- Products -------------------------------------------------------------------------------

double ref_dot(const std::vector<float>& w, const std::vector<float>& x) {
  double s = 0.0;
  for (size_t i = 0; i < w.size(); ++i) s += static_cast<double>(w[i]) * x[i];
  return s;
}

TEST(SparseDot, ScalarDotsMatchF64OverTheDecodedRow) {
  for (DType t : kTypes) {
    for (int64_t n : kRowWeights) {
      const auto w = random_row(n, 100 + static_cast<uint32_t>(n));
      const auto x = random_row(n, 200 + static_cast<uint32_t>(n));
      const auto bytes = encode(t, w.data(), n);
      const auto wd = decode(t, bytes, n);
      const double want = ref_dot(wd, x);
      double mag = 0.0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(wd[i] * x[i]);
      const auto& k = kernels_for(scalar_kernel_table(), t);
      EXPECT_NEAR(k.dot(bytes.data(), x.data(), n), want, 1e-5 * mag + 1e-6) << name(t) << " n=" << n;
      // vec_dot: activations in the vec_dot type; compare with the f64 dot of the decoded
      // activations too.
      std::vector<std::byte> xq(dtype_row_bytes(k.vec_dot_type, n));
      kernels_for(scalar_kernel_table(), k.vec_dot_type).from_float(x.data(), xq.data(), n);
      std::vector<float> xd(static_cast<size_t>(n));
      kernels_for(scalar_kernel_table(), k.vec_dot_type).to_float(xq.data(), xd.data(), n);
      EXPECT_NEAR(k.vec_dot(bytes.data(), xq.data(), n), ref_dot(wd, xd), 1e-5 * mag + 1e-6)
          << name(t) << " n=" << n;
    }
  }
}

// The SIMD vec_dots against the scalar reference: bit for bit where the kernel keeps the
// reference's order (AVX2 Q8_0/Q4_0), else within f32 summation-order rounding.
void expect_simd_matches_scalar(float (*simd)(const void*, const void*, int64_t), DType t,
                                bool bit_exact) {
  const auto& ref = kernels_for(scalar_kernel_table(), t);
  for (int64_t n : kRowWeights) {
    for (uint32_t seed = 0; seed < 3; ++seed) {
      auto w = random_row(n, seed * 7 + static_cast<uint32_t>(n));
      const auto x = random_row(n, seed * 13 + 1);
      if (seed == 2) {  // extreme quants: Q8_0 +-127, Q4_0 nibbles 0 and 15
        for (auto& v : w) v = v > 0 ? 100.0f : -100.0f;
      }
      const auto bytes = encode(t, w.data(), n);
      std::vector<std::byte> xq(dtype_row_bytes(ref.vec_dot_type, n));
      kernels_for(scalar_kernel_table(), ref.vec_dot_type).from_float(x.data(), xq.data(), n);
      const float want = ref.vec_dot(bytes.data(), xq.data(), n);
      const float got = simd(bytes.data(), xq.data(), n);
      if (!bit_exact) {
        // Another summation order: within a few f32 roundings of sum |w| |x|.
        double mag = 0.0;
        const auto wd = decode(t, bytes, n);
        for (int64_t i = 0; i < n; ++i) mag += std::fabs(wd[i] * x[i]);
        EXPECT_NEAR(got, want, 2e-6 * mag) << name(t) << " n=" << n << " seed " << seed;
      } else {
        EXPECT_EQ(got, want) << name(t) << " n=" << n << " seed " << seed;
      }
    }
  }
}

TEST(SparseSimd, Avx2MatchesScalar) {
  if (!cpu_features().has_avx2_set()) GTEST_SKIP() << "CPU lacks AVX2";
  expect_simd_matches_scalar(avx2::f16_2of4_vec_dot, DType::kF16_2of4, false);
  expect_simd_matches_scalar(avx2::q8_0_2of4_q8_0_vec_dot, DType::kQ8_0_2of4, true);
  expect_simd_matches_scalar(avx2::q4_0_2of4_q8_0_vec_dot, DType::kQ4_0_2of4, true);
}

TEST(SparseSimd, Avx512MatchesScalar) {
  if (!cpu_features().has_avx512_set()) GTEST_SKIP() << "CPU lacks the AVX-512 set";
  expect_simd_matches_scalar(avx512::f16_2of4_vec_dot, DType::kF16_2of4, false);
  expect_simd_matches_scalar(avx512::q8_0_2of4_q8_0_vec_dot, DType::kQ8_0_2of4, false);
  expect_simd_matches_scalar(avx512::q4_0_2of4_q8_0_vec_dot, DType::kQ4_0_2of4, false);
}

// matmul through the active table equals the scalar table's (within f32 rounding), and
// the 2:4 matrix gives the dense matrix's products when the dense one holds the pruned weights.
TEST(SparseMatmul, ActiveTableMatchesScalarAndDenseOfThePrunedWeights) {
  const int64_t rows = 37, cols = 256, tokens = 3;
  for (DType t : kTypes) {
    std::vector<std::byte> w(dtype_row_bytes(t, cols) * rows);
    std::vector<float> dense(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r) {
      const auto row = random_row(cols, 500 + static_cast<uint32_t>(r));
      kernels_for(scalar_kernel_table(), t).from_float(row.data(), w.data() + r * dtype_row_bytes(t, cols), cols);
      kernels_for(scalar_kernel_table(), t).to_float(w.data() + r * dtype_row_bytes(t, cols), dense.data() + r * cols, cols);
    }
    const auto x = random_row(tokens * cols, 9);
    const MatrixRef m{t, w.data(), rows, cols, dtype_row_bytes(t, cols)};
    std::vector<float> y_active(static_cast<size_t>(tokens * rows)), y_scalar(y_active.size());
    matmul(kernel_table(), m, x.data(), tokens, y_active.data(), nullptr);
    matmul(scalar_kernel_table(), m, x.data(), tokens, y_scalar.data(), nullptr);
    for (size_t i = 0; i < y_active.size(); ++i) {
      EXPECT_NEAR(y_active[i], y_scalar[i], 1e-4f * (1.0f + std::fabs(y_scalar[i]))) << name(t);
    }
    // The same weights as an f32 matrix: products agree within the activation quantization.
    const MatrixRef mf{DType::kF32, dense.data(), rows, cols, cols * sizeof(float)};
    std::vector<float> y_dense(y_active.size());
    matmul(scalar_kernel_table(), mf, x.data(), tokens, y_dense.data(), nullptr);
    // Q8_0 activations: each within 1/254 of its block's largest |x|, so an output within
    // 1% of sum |w| |x| (a generous bound).
    for (int64_t tk = 0; tk < tokens; ++tk) {
      for (int64_t r = 0; r < rows; ++r) {
        float mag = 0.0f;
        for (int64_t j = 0; j < cols; ++j) mag += std::fabs(dense[r * cols + j] * x[tk * cols + j]);
        const size_t i = static_cast<size_t>(tk * rows + r);
        EXPECT_NEAR(y_active[i], y_dense[i], 0.01f * mag) << name(t);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
