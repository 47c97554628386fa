// K-quants (Q4_K, Q5_K, Q6_K, Q8_K): block layouts decoded from hand-built bytes written from the
// GGML format definition (not from our encoder), quantizer round trips within stated bounds,
// vec_dot against an f64 dot of the dequantized weights within the Q8_K activation error, and the
// AVX2 kernels bit for bit against the scalar references (skipped on CPUs without AVX2+FMA+F16C).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/ops.h"

namespace tessera::kernels {
namespace kquant_test {

const DType kWeightTypes[] = {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};
// Row lengths: one block, two, a Llama-7B hidden size, and the 11008 FFN width (43 blocks).
const int64_t kRowSizes[] = {256, 512, 4096, 11008};

bool have_avx2() { return cpu_features().has_avx2_set(); }

std::vector<std::byte> bytes_for(DType t, int64_t n) {
  return std::vector<std::byte>(dtype_row_bytes(t, n));
}

// ---- Layout ---------------------------------------------------------------------------------

TEST(KQuantLayout, SizesAndOffsetsMatchGgml) {
  EXPECT_EQ(dtype_info(DType::kQ4_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ4_K)));
  EXPECT_EQ(dtype_info(DType::kQ5_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_K)));
  EXPECT_EQ(dtype_info(DType::kQ6_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ6_K)));
  EXPECT_EQ(dtype_info(DType::kQ8_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ8_K)));
  EXPECT_EQ(offsetof(BlockQ4_K, dmin), 2u);
  EXPECT_EQ(offsetof(BlockQ4_K, scales), 4u);
  EXPECT_EQ(offsetof(BlockQ4_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qh), 16u);
  EXPECT_EQ(offsetof(BlockQ5_K, qs), 48u);
  EXPECT_EQ(offsetof(BlockQ6_K, qh), 128u);
  EXPECT_EQ(offsetof(BlockQ6_K, scales), 192u);
  EXPECT_EQ(offsetof(BlockQ6_K, d), 208u);
  EXPECT_EQ(offsetof(BlockQ8_K, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ8_K, bsums), 260u);
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K}) {
    EXPECT_TRUE(dtype_info(t).supported) << dtype_name(t);
    EXPECT_EQ(dtype_info(t).block_size, 256) << dtype_name(t);
  }
  EXPECT_EQ(kernels_for(DType::kQ4_K).vec_dot_type, DType::kQ8_K);
  EXPECT_EQ(kernels_for(DType::kQ6_K).vec_dot_type, DType::kQ8_K);
  EXPECT_EQ(kernels_for(DType::kQ8_K).vec_dot_type, DType::kF32);
}

// The Q4_K/Q5_K header (d = 1.0, dmin = 0.5) with scales sc = {1,2,3,4,5,6,7,63} and mins
// m = {0,1,2,3,4,5,6,33}, packed by hand from the format definition: bytes 0-3 hold sc0-3 in their
// low 6 bits and the top two bits of sc4-7 in bits 6-7; bytes 4-7 likewise for the mins; bytes
// 8-11 hold sc4-7's low nibbles with m4-7's low nibbles above them.
// sc7 = 63 = 0b11'1111 -> byte 3 = 4 | 0b11 << 6; m7 = 33 = 0b10'0001 -> byte 7 = 3 | 0b10 << 6.
constexpr uint8_t kHeader[16] = {0x00, 0x3c, 0x00, 0x38,   // d = 1.0, dmin = 0.5 (f16, LE)
                                 0x01, 0x02, 0x03, 0xc4,   // sc0..3, top bits of sc7
                                 0x00, 0x01, 0x02, 0x83,   // m0..3, top bits of m7
                                 0x45, 0x56, 0x67, 0x1f};  // (sc4|m4<<4) .. (sc7&15 | (m7&15)<<4)

TEST(KQuantLayout, Q4_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(144, 0);
  std::memcpy(block.data(), kHeader, 16);
  block[16 + 0] = 0x9a;       // element 0 (low nibble) = 10, element 32 (high nibble) = 9
  block[16 + 96 + 5] = 0xf3;  // group 3: element 197 = 3, element 229 = 15
  std::vector<float> y(256);
  scalar::q4_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[0], 10.0f);            // 1 * 1 * 10 - 0.5 * 0
  EXPECT_EQ(y[32], 17.5f);           // 1 * 2 * 9 - 0.5 * 1
  EXPECT_EQ(y[33], -0.5f);           // level 0 of sub-block 1: just the min
  EXPECT_EQ(y[197], 18.0f);          // sub-block 6: 7 * 3 - 0.5 * 6
  EXPECT_EQ(y[229], 928.5f);         // sub-block 7: 63 * 15 - 0.5 * 33
  EXPECT_EQ(y[255], -16.5f);
  uint8_t sc = 0, m = 0;
  unpack_scale_min(kHeader + 4, 7, &sc, &m);
  EXPECT_EQ(sc, 63);
  EXPECT_EQ(m, 33);
  const uint8_t want_sc[8] = {1, 2, 3, 4, 5, 6, 7, 63}, want_m[8] = {0, 1, 2, 3, 4, 5, 6, 33};
  uint8_t packed[12];
  pack_scales_mins(want_sc, want_m, packed);
  EXPECT_EQ(std::memcmp(packed, kHeader + 4, 12), 0);
}

TEST(KQuantLayout, Q5_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(176, 0);
  std::memcpy(block.data(), kHeader, 16);
  block[16 + 0] = 0x02;        // qh[0] bit 1: fifth bit of element 32 (group 0, high nibbles)
  block[16 + 5] = 0xc0;        // qh[5] bits 6, 7: fifth bits of elements 197 and 229 (group 3)
  block[48 + 0] = 0x9a;
  block[48 + 96 + 5] = 0xf3;
  std::vector<float> y(256);
  scalar::q5_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[0], 10.0f);
  EXPECT_EQ(y[32], 49.5f);     // 2 * (9 + 16) - 0.5
  EXPECT_EQ(y[197], 130.0f);   // 7 * (3 + 16) - 3
  EXPECT_EQ(y[229], 1936.5f);  // 63 * (15 + 16) - 16.5
  EXPECT_EQ(y[5], 0.0f);
}

TEST(KQuantLayout, Q6_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(210, 0);
  block[0] = 0x21;             // ql[0]: element 0 low nibble 1, element 64 high nibble 2
  block[32] = 0x05;            // ql[32]: element 32 low nibble 5, element 96 high nibble 0
  block[127] = 0xf0;           // ql[127]: element 255 (half 1, quarter 3, l 31) high nibble 15
  block[128 + 0] = 0xe4;       // qh[0] = 0b11'10'01'00: high bits of elements 0, 32, 64, 96
  block[128 + 63] = 0xc0;      // qh[63] bits 6-7: high bits 3 of element 255
  block[192 + 0] = 2;          // scales[0]
  block[192 + 2] = 0xff;       // scales[2] = -1
  block[192 + 4] = 3;          // scales[4]
  block[192 + 15] = 0x80;      // scales[15] = -128
  block[208] = 0x00;
  block[209] = 0x38;           // d = 0.5
  std::vector<float> y(256);
  scalar::q6_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[0], -31.0f);     // 0.5 * 2 * (1 - 32)
  EXPECT_EQ(y[1], -32.0f);     // level 0
  EXPECT_EQ(y[32], 5.5f);      // level 5 | 1 << 4 = 21: 0.5 * -1 * (21 - 32)
  EXPECT_EQ(y[64], 3.0f);      // level 2 | 2 << 4 = 34: 0.5 * 3 * 2
  EXPECT_EQ(y[96], 0.0f);      // scales[6] = 0
  EXPECT_EQ(y[255], -1984.0f); // level 63: 0.5 * -128 * 31
}

TEST(KQuantLayout, Q8_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(292, 0);
  const float d = 0.25f;
  std::memcpy(block.data(), &d, 4);
  block[4 + 3] = static_cast<uint8_t>(-7);
  std::vector<float> y(256);
  scalar::q8_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[3], -1.75f);
  EXPECT_EQ(y[4], 0.0f);
}

// ---- Round trips ----------------------------------------------------------------------------

enum class Shape { kNormal, kUniform, kOutliers, kPositive, kNegative };

std::vector<float> make_data(Shape shape, size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    float x = 0.0f;
    switch (shape) {
      case Shape::kNormal: x = normal(rng); break;
      case Shape::kUniform: x = uniform(rng); break;
      case Shape::kOutliers: x = normal(rng) * (i % 97 == 0 ? 20.0f : 1.0f); break;
      case Shape::kPositive: x = std::fabs(normal(rng)) + 0.5f; break;
      case Shape::kNegative: x = -std::fabs(normal(rng)) - 0.5f; break;
    }
    v[i] = x * scale;
  }
  return v;
}

// Stated round-trip errors (kquants.h: measured 0.070 / 0.035 / 0.017 RMS and 0.116 / 0.057 /
// 0.028 worst-case), with some margin; these are regression guards for the quantizer:
//  * RMS error over N(0,1) data, relative to the data's RMS;
//  * per super-block, max |x - x'| <= ratio * (largest |x| in the block) + an absolute term for
//    f16 super-block scales in f16's subnormal range (spacing 2^-24; sub-scales multiply it by up
//    to 63 or 128, and levels by up to 31 or 32).
struct Bound {
  double rms_ratio;   // on N(0,1)
  double max_ratio;   // of the block's max |x|, any shape
  double abs_term;    // absolute slack for tiny scales
};
Bound stated_bound(DType t) {
  switch (t) {
    case DType::kQ4_K: return {0.075, 0.15, 63.0 * 15 * 0x1p-24};
    case DType::kQ5_K: return {0.038, 0.075, 63.0 * 31 * 0x1p-24};
    case DType::kQ6_K: return {0.019, 0.04, 128.0 * 32 * 0x1p-24};
    default: return {0, 0, 0};
  }
}

struct RoundTripStats {
  double rms_ratio = 0;  // RMS error / RMS data
  double max_ratio = 0;  // worst block's max |err| / its max |x|
};

RoundTripStats round_trip(DType t, const std::vector<float>& x, std::vector<float>* y_out) {
  const auto& k = kernels_for(scalar_kernel_table(), t);
  const auto n = static_cast<int64_t>(x.size());
  auto q = bytes_for(t, n);
  std::vector<float> y(x.size());
  k.from_float(x.data(), q.data(), n);
  k.to_float(q.data(), y.data(), n);
  RoundTripStats s;
  double se = 0, sx = 0;
  for (size_t b = 0; b < x.size(); b += kQK_K) {
    double amax = 0, emax = 0;
    for (size_t i = b; i < b + kQK_K; ++i) {
      const double e = std::fabs(static_cast<double>(x[i]) - y[i]);
      amax = std::max(amax, std::fabs(static_cast<double>(x[i])));
      emax = std::max(emax, e);
      se += e * e;
      sx += static_cast<double>(x[i]) * x[i];
    }
    if (amax > 0) s.max_ratio = std::max(s.max_ratio, emax / amax);
  }
  s.rms_ratio = sx > 0 ? std::sqrt(se / sx) : 0;
  if (y_out != nullptr) *y_out = std::move(y);
  return s;
}

TEST(KQuant, RoundTripWithinStatedError) {
  const size_t n = kQK_K * 64;
  for (DType t : kWeightTypes) {
    const Bound bound = stated_bound(t);
    for (Shape shape : {Shape::kNormal, Shape::kUniform, Shape::kOutliers, Shape::kPositive,
                        Shape::kNegative}) {
      for (float scale : {1e-3f, 1.0f, 100.0f}) {
        auto x = make_data(shape, n, 7 + static_cast<uint64_t>(shape), scale);
        std::vector<float> y;
        const RoundTripStats s = round_trip(t, x, &y);
        if (shape == Shape::kNormal && scale == 1.0f) {
          EXPECT_LE(s.rms_ratio, bound.rms_ratio) << dtype_name(t);
          std::printf("[ measured ] %s N(0,1): rms err / rms x %.4f, max err / block max %.4f\n",
                      std::string(dtype_name(t)).c_str(), s.rms_ratio, s.max_ratio);
        }
        for (size_t b = 0; b < n; b += kQK_K) {
          double amax = 0;
          for (size_t i = b; i < b + kQK_K; ++i) amax = std::max(amax, std::fabs(double{x[i]}));
          for (size_t i = b; i < b + kQK_K; ++i) {
            ASSERT_LE(std::fabs(double{x[i]} - y[i]), bound.max_ratio * amax + bound.abs_term)
                << dtype_name(t) << " shape " << static_cast<int>(shape) << " scale " << scale
                << " i " << i << " x " << x[i] << " y " << y[i];
          }
        }
      }
    }
  }
}

// Sub-blocks whose values sit far below the super-block's largest keep small 6-bit scales; the
// quantizer must still place them on a usable grid, not collapse them to their offset.
TEST(KQuant, SmallSubBlocksKeepTheirResolution) {
  for (DType t : kWeightTypes) {
    auto x = make_data(Shape::kNormal, kQK_K, 5, 1.0f);
    for (int i = 0; i < 32; ++i) x[i] *= 50.0f;  // one loud sub-block
    std::vector<float> y;
    round_trip(t, x, &y);
    double se = 0, sx = 0;
    for (int i = 32; i < kQK_K; ++i) {
      se += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
      sx += double{x[i]} * x[i];
    }
    // A quantizer that zeroed the quiet sub-blocks would score 1.0 here.
    EXPECT_LT(std::sqrt(se / sx), t == DType::kQ4_K ? 0.5 : 0.3) << dtype_name(t);
  }
}

TEST(KQuant, Q8_KRoundTripWithinHalfAStep) {
  for (float scale : {1e-3f, 1.0f, 100.0f}) {
    auto x = make_data(Shape::kOutliers, kQK_K * 8, 3, scale);
    std::vector<BlockQ8_K> q(8);
    std::vector<float> y(x.size());
    scalar::q8_k_from_float(x.data(), q.data(), kQK_K * 8);
    scalar::q8_k_to_float(q.data(), y.data(), kQK_K * 8);
    for (size_t b = 0; b < 8; ++b) {
      for (int g = 0; g < 16; ++g) {
        int sum = 0;
        for (int e = 16 * g; e < 16 * g + 16; ++e) sum += q[b].qs[e];
        EXPECT_EQ(q[b].bsums[g], sum);
      }
      for (int e = 0; e < kQK_K; ++e) {
        const size_t i = b * kQK_K + e;
        ASSERT_GE(q[b].qs[e], -127);
        ASSERT_LE(std::fabs(double{x[i]} - y[i]), q[b].d * (0.5 + 1e-5)) << i;
      }
    }
  }
}

TEST(KQuant, ZeroBlocksStayZero) {
  for (DType t : {DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kQ8_K}) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    std::vector<float> x(512, 0.0f), y(512, 1.0f);
    auto q = bytes_for(t, 512);
    k.from_float(x.data(), q.data(), 512);
    k.to_float(q.data(), y.data(), 512);
    for (float v : y) ASSERT_EQ(v, 0.0f) << dtype_name(t);
    EXPECT_EQ(k.dot(q.data(), x.data(), 512), 0.0f);
  }
  // Zero activations: Q8_K all zero (d, qs, bsums), and every vec_dot 0.
  std::vector<float> zeros(512, 0.0f);
  std::vector<BlockQ8_K> a(2);
  std::memset(a.data(), 0x5a, sizeof(BlockQ8_K) * 2);
  scalar::q8_k_from_float(zeros.data(), a.data(), 512);
  EXPECT_EQ(a[0].d, 0.0f);
  for (int g = 0; g < 16; ++g) EXPECT_EQ(a[1].bsums[g], 0);
  auto w = make_data(Shape::kNormal, 512, 1, 1.0f);
  for (DType t : kWeightTypes) {
    auto q = bytes_for(t, 512);
    kernels_for(t).from_float(w.data(), q.data(), 512);
    EXPECT_EQ(kernels_for(scalar_kernel_table(), t).vec_dot(q.data(), a.data(), 512), 0.0f);
    EXPECT_EQ(kernels_for(t).vec_dot(q.data(), a.data(), 512), 0.0f);
  }
}

// A constant negative sub-block is coded by the Q4_K/Q5_K offset alone: exactly up to f16 rounding
// of dmin when every sub-block is that constant, within half an offset step (dmin/2, dmin ~ the
// largest offset / 63) when its neighbours set dmin.
TEST(KQuant, ConstantBlocks) {
  for (DType t : {DType::kQ4_K, DType::kQ5_K}) {
    std::vector<float> x(256, -0.75f), y;
    round_trip(t, x, &y);
    for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], -0.75f, 0.75 * 0x1p-10) << dtype_name(t);
    for (int i = 32; i < 256; ++i) x[i] = static_cast<float>(i % 7) * 0.25f - 0.75f;
    round_trip(t, x, &y);
    for (int i = 0; i < 32; ++i) ASSERT_NEAR(y[i], -0.75f, 0.8 / 63 / 2) << dtype_name(t);
  }
}

// ---- Dot products ---------------------------------------------------------------------------

// vec_dot(w, Q8_K(x)) = sum w'_i * x'_i exactly in the blocks' integers, so against the f64 dot of
// the dequantized weights with the *unquantized* x it may differ by the activation rounding,
// |x_i - x'_i| <= d_x / 2 per value, i.e. sum over blocks of d_x/2 * sum |w'_i|, plus f32
// rounding of the per-block scaling and the running sum (1e-5 of the products' magnitude).
TEST(KQuant, VecDotMatchesDequantizedDotWithinActivationError) {
  for (DType t : kWeightTypes) {
    for (int64_t n : kRowSizes) {
      auto w = make_data(Shape::kNormal, static_cast<size_t>(n), 100 + n, 0.05f);
      auto x = make_data(Shape::kOutliers, static_cast<size_t>(n), 200 + n, 1.0f);
      auto q = bytes_for(t, n);
      kernels_for(scalar_kernel_table(), t).from_float(w.data(), q.data(), n);
      std::vector<float> wd(static_cast<size_t>(n));
      kernels_for(scalar_kernel_table(), t).to_float(q.data(), wd.data(), n);
      std::vector<BlockQ8_K> xq(static_cast<size_t>(n / kQK_K));
      scalar::q8_k_from_float(x.data(), xq.data(), n);
      double want = 0, mag = 0, act_err = 0;
      for (int64_t b = 0; b < n / kQK_K; ++b) {
        double wabs = 0;
        for (int64_t i = b * kQK_K; i < (b + 1) * kQK_K; ++i) {
          want += double{wd[i]} * x[i];
          mag += std::fabs(double{wd[i]} * x[i]);
          wabs += std::fabs(double{wd[i]});
        }
        act_err += xq[b].d * 0.5 * wabs;
      }
      const double tol = act_err + 1e-5 * mag;
      for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
        const auto& k = kernels_for(*table, t);
        EXPECT_NEAR(k.vec_dot(q.data(), xq.data(), n), want, tol)
            << dtype_name(t) << " " << table->isa << " n " << n;
        EXPECT_NEAR(k.dot(q.data(), x.data(), n), want, 1e-5 * mag) << dtype_name(t) << " n " << n;
      }
    }
  }
}

// matmul on k-quant weights converts activations to Q8_K once per token and runs vec_dot per row.
TEST(KQuant, MatmulUsesQ8_KActivations) {
  const int64_t rows = 8, cols = 512, tokens = 3;
  for (DType t : kWeightTypes) {
    auto w = make_data(Shape::kNormal, static_cast<size_t>(rows * cols), 700, 0.05f);
    auto x = make_data(Shape::kNormal, static_cast<size_t>(tokens * cols), 701, 1.0f);
    const size_t row_bytes = dtype_row_bytes(t, cols);
    std::vector<std::byte> q(row_bytes * rows);
    std::vector<float> wd(w.size());
    for (int64_t r = 0; r < rows; ++r) {
      kernels_for(t).from_float(w.data() + r * cols, q.data() + r * row_bytes, cols);
      kernels_for(t).to_float(q.data() + r * row_bytes, wd.data() + r * cols, cols);
    }
    std::vector<float> y(static_cast<size_t>(tokens * rows));
    matmul(MatrixRef{t, q.data(), rows, cols, row_bytes}, x.data(), tokens, y.data(), nullptr);
    for (int64_t tok = 0; tok < tokens; ++tok) {
      std::vector<BlockQ8_K> xq(static_cast<size_t>(cols / kQK_K));
      scalar::q8_k_from_float(x.data() + tok * cols, xq.data(), cols);
      for (int64_t r = 0; r < rows; ++r) {
        double want = 0, tol = 0;
        for (int64_t c = 0; c < cols; ++c) {
          want += double{wd[r * cols + c]} * x[tok * cols + c];
          tol += std::fabs(double{wd[r * cols + c]}) * (xq[c / kQK_K].d * 0.5) +
                 1e-5 * std::fabs(double{wd[r * cols + c]} * x[tok * cols + c]);
        }
        EXPECT_NEAR(y[tok * rows + r], want, tol)
            << dtype_name(t) << " token " << tok << " row " << r;
      }
    }
  }
}

// Random bytes cover what our quantizer never emits (every scale code, Q6_K scales down to
// -128, levels at both ends); d fields are set to small finite f16 values.
void randomize_block(DType t, std::byte* block, std::mt19937_64& rng) {
  const size_t bytes = static_cast<size_t>(dtype_info(t).block_bytes);
  for (size_t i = 0; i < bytes; ++i) block[i] = static_cast<std::byte>(rng());
  std::uniform_int_distribution<int> half(0x1000, 0x3bff);  // f16 ~2.4e-4 .. ~0.99, positive
  auto set_half = [&](size_t off) {
    const auto h = static_cast<uint16_t>(half(rng) | (rng() & 1 ? 0x8000 : 0));
    std::memcpy(block + off, &h, 2);
  };
  if (t == DType::kQ6_K) {
    set_half(208);
  } else {
    set_half(0);
    set_half(2);
  }
}

std::vector<BlockQ8_K> random_q8_k(int64_t n, std::mt19937_64& rng) {
  std::vector<BlockQ8_K> a(static_cast<size_t>(n / kQK_K));
  std::uniform_int_distribution<int> q(-127, 127);
  for (auto& b : a) {
    b.d = std::uniform_real_distribution<float>(1e-3f, 1.0f)(rng);
    for (auto& v : b.qs) v = static_cast<int8_t>(q(rng));
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int e = 16 * g; e < 16 * g + 16; ++e) s += b.qs[e];
      b.bsums[g] = static_cast<int16_t>(s);
    }
  }
  return a;
}

using VecDot = float (*)(const void*, const void*, int64_t);
struct VecDotPair {
  DType type;
  VecDot scalar;
  VecDot simd;
};
const VecDotPair kVecDots[] = {
    {DType::kQ4_K, scalar::q4_k_q8_k_vec_dot, avx2::q4_k_q8_k_vec_dot},
    {DType::kQ5_K, scalar::q5_k_q8_k_vec_dot, avx2::q5_k_q8_k_vec_dot},
    {DType::kQ6_K, scalar::q6_k_q8_k_vec_dot, avx2::q6_k_q8_k_vec_dot},
};

TEST(KQuantAvx2, VecDotIsBitIdenticalToScalarOnRandomBlocks) {
  if (!have_avx2()) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
  std::mt19937_64 rng(42);
  for (const auto& p : kVecDots) {
    for (int64_t n : kRowSizes) {
      for (int rep = 0; rep < 4; ++rep) {
        auto w = bytes_for(p.type, n);
        for (int64_t b = 0; b < n / kQK_K; ++b) {
          randomize_block(p.type, w.data() + b * dtype_info(p.type).block_bytes, rng);
        }
        auto a = random_q8_k(n, rng);
        const float want = p.scalar(w.data(), a.data(), n);
        const float got = p.simd(w.data(), a.data(), n);
        ASSERT_TRUE(std::isfinite(want));
        EXPECT_EQ(got, want) << dtype_name(p.type) << " n " << n << " rep " << rep;
      }
    }
  }
}

TEST(KQuantAvx2, VecDotIsBitIdenticalToScalarOnQuantizedData) {
  if (!have_avx2()) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
  for (const auto& p : kVecDots) {
    for (int64_t n : kRowSizes) {
      auto w = make_data(Shape::kNormal, static_cast<size_t>(n), 300 + n, 0.02f);
      auto x = make_data(Shape::kOutliers, static_cast<size_t>(n), 400 + n, 3.0f);
      auto q = bytes_for(p.type, n);
      kernels_for(scalar_kernel_table(), p.type).from_float(w.data(), q.data(), n);
      std::vector<BlockQ8_K> xq(static_cast<size_t>(n / kQK_K));
      scalar::q8_k_from_float(x.data(), xq.data(), n);
      EXPECT_EQ(p.simd(q.data(), xq.data(), n), p.scalar(q.data(), xq.data(), n))
          << dtype_name(p.type) << " n " << n;
    }
  }
}

TEST(KQuantAvx2, Q8_KQuantizerIsBitIdenticalToScalar) {
  if (!have_avx2()) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
  for (int64_t n : kRowSizes) {
    for (float scale : {1e-20f, 1e-3f, 1.0f, 1e4f}) {
      auto x = make_data(Shape::kOutliers, static_cast<size_t>(n), 500 + n, scale);
      // Exact ties at the rounding boundary (x/d = k + 0.5) and special values.
      x[1] = x[0] * 0.5f / 127.0f;
      x[7] = 0.0f;
      x[8] = -0.0f;
      if (n > 512) {
        x[300] = std::numeric_limits<float>::quiet_NaN();
        std::fill(x.begin() + 512, x.begin() + 768, 0.0f);  // one all-zero block
      }
      std::vector<BlockQ8_K> want(static_cast<size_t>(n / kQK_K));
      std::vector<BlockQ8_K> got(want.size());
      scalar::q8_k_from_float(x.data(), want.data(), n);
      avx2::q8_k_from_float(x.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(BlockQ8_K)), 0)
          << "n " << n << " scale " << scale;
    }
  }
}

// The active table's rows: k-quant matmul through kernel_table() agrees with the scalar table.
TEST(KQuant, ActiveTableAgreesWithScalarTable) {
  for (DType t : kWeightTypes) {
    const int64_t n = 4096;
    auto w = make_data(Shape::kNormal, n, 600, 0.05f);
    auto x = make_data(Shape::kNormal, n, 601, 1.0f);
    auto q = bytes_for(t, n);
    kernels_for(t).from_float(w.data(), q.data(), n);
    auto xa = bytes_for(DType::kQ8_K, n), xs = bytes_for(DType::kQ8_K, n);
    kernels_for(DType::kQ8_K).from_float(x.data(), xa.data(), n);
    kernels_for(scalar_kernel_table(), DType::kQ8_K).from_float(x.data(), xs.data(), n);
    EXPECT_EQ(std::memcmp(xa.data(), xs.data(), xa.size()), 0);
    EXPECT_EQ(kernels_for(t).vec_dot(q.data(), xa.data(), n),
              kernels_for(scalar_kernel_table(), t).vec_dot(q.data(), xs.data(), n))
        << dtype_name(t) << " isa " << kernel_table().isa;
  }
}

}  // namespace kquant_test
}  // namespace tessera::kernels
