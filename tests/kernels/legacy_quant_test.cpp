// Q4_1, Q5_0, Q5_1: block layouts decoded from hand-built bytes written from the GGML format
// definition (not from our encoder), an independent dequantizer written here from that
// definition, quantizer round trips within stated bounds, dot and vec_dot against f64 dots, the
// AVX2 / AVX-512 vec_dots bit for bit against the scalar references (skipped where the CPU lacks
// the set), their vec_dot_tiles bit for bit against the vec_dots in every tile shape, and a matmul
// through the active kernel table (several tokens at once equal to one at a time).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/legacy_quant_blocks.h"
#include "tessera/kernels/legacy_quants.h"
#include "tessera/kernels/ops.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"
#include "tile_check.h"

namespace tessera::kernels {
namespace legacy_quant_test {

constexpr int kQK = 32;
const DType kTypes[] = {DType::kQ5_0, DType::kQ4_1, DType::kQ5_1};
// Row lengths in blocks: one, two, three (a partial SIMD group), five, a 576-wide row (SmolLM2's
// hidden size, 18 blocks), and 4096 (128).
const int64_t kRowBlocks[] = {1, 2, 3, 5, 18, 128};

std::vector<std::byte> bytes_for(DType t, int64_t n) {
  return std::vector<std::byte>(dtype_row_bytes(t, n));
}

std::string name(DType t) { return std::string(dtype_name(t)); }

// ---- Layout ---------------------------------------------------------------------------------

TEST(LegacyQuantLayout, SizesOffsetsAndRows) {
  EXPECT_EQ(dtype_info(DType::kQ4_1).block_bytes, static_cast<int64_t>(sizeof(BlockQ4_1)));
  EXPECT_EQ(dtype_info(DType::kQ5_0).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_0)));
  EXPECT_EQ(dtype_info(DType::kQ5_1).block_bytes, static_cast<int64_t>(sizeof(BlockQ5_1)));
  EXPECT_EQ(offsetof(BlockQ4_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ4_1, qs), 4u);
  EXPECT_EQ(offsetof(BlockQ5_0, qh), 2u);
  EXPECT_EQ(offsetof(BlockQ5_0, qs), 6u);
  EXPECT_EQ(offsetof(BlockQ5_1, m), 2u);
  EXPECT_EQ(offsetof(BlockQ5_1, qh), 4u);
  EXPECT_EQ(offsetof(BlockQ5_1, qs), 8u);
  for (DType t : kTypes) {
    EXPECT_TRUE(dtype_info(t).supported) << name(t);
    EXPECT_EQ(dtype_info(t).block_size, kQK) << name(t);
    EXPECT_EQ(kernels_for(t).vec_dot_type, DType::kQ8_0) << name(t);
    EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  }
  EXPECT_EQ(static_cast<uint32_t>(DType::kQ4_1), 3u);
  EXPECT_EQ(static_cast<uint32_t>(DType::kQ5_0), 6u);
  EXPECT_EQ(static_cast<uint32_t>(DType::kQ5_1), 7u);
}

// Q5_0 block: d = 0.5 (f16 0x3800), x = d * (q - 16). Fifth bits are bits of the little-endian
// word qh: element 0 -> byte 0 bit 0, element 17 -> byte 2 bit 1, element 31 -> byte 3 bit 7.
TEST(LegacyQuantLayout, Q5_0DecodesHandBuiltBlock) {
  uint8_t b[22] = {};
  b[0] = 0x00, b[1] = 0x38;               // d = 0.5
  b[2] = 0x01, b[4] = 0x02, b[5] = 0x80;  // qh
  b[6 + 0] = 0x3a;                        // element 0 low nibble 10, element 16 high nibble 3
  b[6 + 1] = 0x05;                        // element 1 = 5, element 17 = 0
  b[6 + 15] = 0xf0;                       // element 15 = 0, element 31 = 15
  float y[32];
  scalar::q5_0_to_float(b, y, 32);
  EXPECT_EQ(y[0], 5.0f);    // (10 | 16) - 16 = 10
  EXPECT_EQ(y[16], -6.5f);  // 3 - 16
  EXPECT_EQ(y[1], -5.5f);   // 5 - 16
  EXPECT_EQ(y[17], 0.0f);   // (0 | 16) - 16
  EXPECT_EQ(y[15], -8.0f);  // 0 - 16
  EXPECT_EQ(y[31], 7.5f);   // (15 | 16) - 16
  EXPECT_EQ(y[2], -8.0f);
}

// Q4_1 block: d = 0.5, m = -1.0 (f16 0xbc00), x = d * q + m.
TEST(LegacyQuantLayout, Q4_1DecodesHandBuiltBlock) {
  uint8_t b[20] = {};
  b[0] = 0x00, b[1] = 0x38;  // d = 0.5
  b[2] = 0x00, b[3] = 0xbc;  // m = -1
  b[4 + 0] = 0x3a;           // element 0 = 10, element 16 = 3
  b[4 + 15] = 0xf0;          // element 15 = 0, element 31 = 15
  float y[32];
  scalar::q4_1_to_float(b, y, 32);
  EXPECT_EQ(y[0], 4.0f);
  EXPECT_EQ(y[16], 0.5f);
  EXPECT_EQ(y[15], -1.0f);
  EXPECT_EQ(y[31], 6.5f);
  EXPECT_EQ(y[7], -1.0f);
}

// Q5_1 block: d = 0.25 (0x3400), m = 2.0 (0x4000); fifth bits of elements 5 (byte 0 bit 5) and
// 16 (byte 2 bit 0).
TEST(LegacyQuantLayout, Q5_1DecodesHandBuiltBlock) {
  uint8_t b[24] = {};
  b[0] = 0x00, b[1] = 0x34;  // d = 0.25
  b[2] = 0x00, b[3] = 0x40;  // m = 2
  b[4 + 0] = 0x20;           // qh byte 0: bit 5
  b[4 + 2] = 0x01;           // qh byte 2: bit 0
  b[8 + 0] = 0x3a;           // element 0 = 10, element 16 = 3 (| 16)
  b[8 + 5] = 0x01;           // element 5 = 1 (| 16), element 21 = 0
  float y[32];
  scalar::q5_1_to_float(b, y, 32);
  EXPECT_EQ(y[0], 4.5f);    // 10 * 0.25 + 2
  EXPECT_EQ(y[16], 6.75f);  // 19 * 0.25 + 2
  EXPECT_EQ(y[5], 6.25f);   // 17 * 0.25 + 2
  EXPECT_EQ(y[21], 2.0f);
  EXPECT_EQ(y[31], 2.0f);
}

// ---- An independent dequantizer, from the format definition ----------------------------------

uint16_t u16_at(const uint8_t* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }

// One block at p of type t into y[32]: the level of element e is nibble (e < 16 ? low : high) of
// byte e % 16 of the quants, plus 16 times bit e of the 32-bit qh word for the 5-bit types.
void reference_decode(DType t, const uint8_t* p, float* y) {
  const bool has_min = t != DType::kQ5_0;
  const bool five = t != DType::kQ4_1;
  const float d = f16_to_f32(u16_at(p));
  const float m = has_min ? f16_to_f32(u16_at(p + 2)) : 0.0f;
  const uint8_t* after = p + (has_min ? 4 : 2);
  uint32_t qh = 0;
  if (five) qh = after[0] | after[1] << 8 | after[2] << 16 | static_cast<uint32_t>(after[3]) << 24;
  const uint8_t* qs = after + (five ? 4 : 0);
  for (int e = 0; e < 32; ++e) {
    int q = e < 16 ? (qs[e] & 0xf) : (qs[e - 16] >> 4);
    if (five && ((qh >> e) & 1u)) q += 16;
    y[e] = t == DType::kQ5_0 ? d * static_cast<float>(q - 16) : d * static_cast<float>(q) + m;
  }
}

// Random bytes everywhere, then finite f16 scales and minimums of either sign.
void randomize_block(DType t, std::byte* block, std::mt19937_64& rng) {
  const auto bytes = static_cast<size_t>(dtype_info(t).block_bytes);
  for (size_t i = 0; i < bytes; ++i) block[i] = static_cast<std::byte>(rng());
  std::uniform_int_distribution<int> half(0x0001, 0x4bff);  // subnormal .. ~16
  auto set_half = [&](size_t off) {
    const auto h = static_cast<uint16_t>(half(rng) | (rng() & 1 ? 0x8000 : 0));
    std::memcpy(block + off, &h, 2);
  };
  set_half(0);
  if (t != DType::kQ5_0) set_half(2);
}

TEST(LegacyQuant, ToFloatMatchesIndependentDecoderBitForBit) {
  std::mt19937_64 rng(11);
  for (DType t : kTypes) {
    const int64_t nb = 64;
    auto q = bytes_for(t, nb * kQK);
    for (int64_t b = 0; b < nb; ++b) {
      randomize_block(t, q.data() + b * dtype_info(t).block_bytes, rng);
    }
    std::vector<float> want(nb * kQK);
    for (int64_t b = 0; b < nb; ++b) {
      reference_decode(t, reinterpret_cast<const uint8_t*>(q.data()) + b * dtype_info(t).block_bytes,
                       want.data() + b * kQK);
    }
    for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
      std::vector<float> got(want.size());
      kernels_for(*table, t).to_float(q.data(), got.data(), nb * kQK);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
          << name(t) << " " << table->isa;
    }
  }
}

// ---- Round trips ----------------------------------------------------------------------------

enum class Shape { kNormal, kUniform, kOutliers, kPositive };

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
      case Shape::kOutliers: x = normal(rng) * (i % 37 == 0 ? 20.0f : 1.0f); break;
      case Shape::kPositive: x = std::fabs(normal(rng)) + 0.5f; break;
    }
    v[i] = x * scale;
  }
  return v;
}

// Stated errors (legacy_quants.h: RMS 0.040 / 0.070 / 0.034, worst 0.066 / 0.067 / 0.032) with
// some margin: RMS error / RMS data on N(0,1), and per block
// max |x - x'| <= max_ratio * (the block's largest |x|, or its range for the affine types) +
// an absolute term for f16 steps in f16's subnormal range (spacing 2^-24, times up to 16 levels).
struct Bound {
  double rms_ratio;
  double max_ratio;
};
Bound stated_bound(DType t) {
  switch (t) {
    case DType::kQ5_0: return {0.042, 0.075};
    case DType::kQ4_1: return {0.073, 0.075};
    case DType::kQ5_1: return {0.036, 0.036};
    default: return {0, 0};
  }
}
constexpr double kAbsTerm = 32 * 0x1p-24;

TEST(LegacyQuant, RoundTripWithinStatedError) {
  const size_t n = kQK * 2048;
  for (DType t : kTypes) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    const Bound bound = stated_bound(t);
    for (Shape shape : {Shape::kNormal, Shape::kUniform, Shape::kOutliers, Shape::kPositive}) {
      for (float scale : {1e-3f, 1.0f, 100.0f}) {
        const auto x = make_data(shape, n, 7 + static_cast<uint64_t>(shape), scale);
        auto q = bytes_for(t, static_cast<int64_t>(n));
        std::vector<float> y(n);
        k.from_float(x.data(), q.data(), static_cast<int64_t>(n));
        k.to_float(q.data(), y.data(), static_cast<int64_t>(n));
        double se = 0, sx = 0, worst = 0;
        for (size_t b = 0; b < n; b += kQK) {
          double lo = x[b], hi = x[b], amax = 0, emax = 0;
          for (size_t i = b; i < b + kQK; ++i) {
            const double e = std::fabs(double{x[i]} - y[i]);
            lo = std::min(lo, double{x[i]});
            hi = std::max(hi, double{x[i]});
            amax = std::max(amax, std::fabs(double{x[i]}));
            emax = std::max(emax, e);
            se += e * e;
            sx += double{x[i]} * x[i];
          }
          const double ref = t == DType::kQ5_0 ? amax : hi - lo;
          EXPECT_LE(emax, bound.max_ratio * ref + kAbsTerm)
              << name(t) << " shape " << static_cast<int>(shape) << " scale " << scale
              << " block " << b / kQK;
          worst = std::max(worst, (emax - kAbsTerm) / ref);
        }
        const double rms = std::sqrt(se / sx);
        if (shape == Shape::kNormal && scale == 1.0f) {
          EXPECT_LE(rms, bound.rms_ratio) << name(t);
        }
        std::printf("[ measured ] %s shape %d scale %g: rms err / rms x %.4f, worst block %.4f\n",
                    name(t).c_str(), static_cast<int>(shape), scale, rms, worst);
      }
    }
  }
}

TEST(LegacyQuant, ZerosTinyAndConstantBlocks) {
  for (DType t : kTypes) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    std::vector<float> x(4 * kQK, 0.0f), y(4 * kQK, 1.0f);
    auto q = bytes_for(t, 4 * kQK);
    k.from_float(x.data(), q.data(), 4 * kQK);
    k.to_float(q.data(), y.data(), 4 * kQK);
    for (float v : y) ASSERT_EQ(v, 0.0f) << name(t);
    EXPECT_EQ(k.dot(q.data(), x.data(), 4 * kQK), 0.0f);
    // Tiny values (f16 steps subnormal or zero), one block each; then a constant block.
    const float tiny[] = {1e-30f, 1e-9f, 3e-6f};
    for (int b = 0; b < 3; ++b) {
      for (int i = 0; i < kQK; ++i) x[b * kQK + i] = tiny[b] * static_cast<float>((i % 5) - 2);
    }
    for (int i = 0; i < kQK; ++i) x[3 * kQK + i] = -0.75f;
    k.from_float(x.data(), q.data(), 4 * kQK);
    k.to_float(q.data(), y.data(), 4 * kQK);
    for (int i = 0; i < 3 * kQK; ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << name(t) << " " << i;
      ASSERT_LE(std::fabs(y[i] - x[i]), 2 * 3e-6 / 16 + kAbsTerm) << name(t) << " " << i;
    }
    for (int i = 3 * kQK; i < 4 * kQK; ++i) EXPECT_EQ(y[i], -0.75f) << name(t);
  }
}

// ---- Dot products ---------------------------------------------------------------------------

// vec_dot(w, Q8_0(x)) is exact in integers per block, so it equals the f64 dot of the dequantized
// weights with the dequantized activations up to f32 rounding of the per-block scaling and the
// running sum; against the unquantized activations it may further differ by the activation
// rounding, at most (d_x / 2 + the f16 rounding of d_x times 127) per value.
TEST(LegacyQuant, DotAndVecDotMatchF64Dots) {
  for (DType t : kTypes) {
    for (int64_t nb : kRowBlocks) {
      const int64_t n = nb * kQK;
      const auto w = make_data(Shape::kNormal, static_cast<size_t>(n), 100 + n, 0.05f);
      const auto x = make_data(Shape::kOutliers, static_cast<size_t>(n), 200 + n, 1.0f);
      auto q = bytes_for(t, n);
      kernels_for(scalar_kernel_table(), t).from_float(w.data(), q.data(), n);
      std::vector<float> wd(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
      kernels_for(scalar_kernel_table(), t).to_float(q.data(), wd.data(), n);
      std::vector<BlockQ8_0> xq(static_cast<size_t>(nb));
      scalar::q8_0_from_float(x.data(), xq.data(), n);
      scalar::q8_0_to_float(xq.data(), xd.data(), n);
      double exact = 0, quantized = 0, mag = 0, act_err = 0;
      for (int64_t b = 0; b < nb; ++b) {
        double wabs = 0, amax = 0;
        for (int64_t i = b * kQK; i < (b + 1) * kQK; ++i) {
          exact += double{wd[i]} * x[i];
          quantized += double{wd[i]} * xd[i];
          mag += std::fabs(double{wd[i]} * x[i]);
          wabs += std::fabs(double{wd[i]});
          amax = std::max(amax, std::fabs(double{x[i]}));
        }
        act_err += (amax / 127 * 0.5 + amax / 127 * 0x1p-11 * 127) * wabs;
      }
      for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
        const auto& k = kernels_for(*table, t);
        const float v = k.vec_dot(q.data(), xq.data(), n);
        EXPECT_NEAR(v, quantized, 2e-6 * mag + 1e-30) << name(t) << " " << table->isa << " " << n;
        EXPECT_NEAR(v, exact, act_err + 2e-6 * mag) << name(t) << " " << table->isa << " " << n;
        EXPECT_NEAR(k.dot(q.data(), x.data(), n), exact, 2e-6 * mag) << name(t) << " " << n;
      }
    }
  }
}

// ---- SIMD against the scalar references -------------------------------------------------------

std::vector<BlockQ8_0> random_q8_0(int64_t nb, std::mt19937_64& rng) {
  std::vector<BlockQ8_0> a(static_cast<size_t>(nb));
  std::uniform_int_distribution<int> q(-128, 127);  // -128 too: the kernels do not exclude it
  std::uniform_real_distribution<float> d(1e-3f, 1.0f);
  for (auto& b : a) {
    b.d = f32_to_f16(d(rng));
    for (auto& v : b.qs) v = static_cast<int8_t>(q(rng));
  }
  return a;
}

using VecDot = float (*)(const void*, const void*, int64_t);
struct Variant {
  DType type;
  const char* isa;
  VecDot scalar;
  VecDot simd;
  bool available;
};

std::vector<Variant> variants() {
  const bool avx2 = cpu_features().has_avx2_set();
  const bool avx512 = cpu_features().has_avx512_set();
  return {
      {DType::kQ5_0, "avx2", scalar::q5_0_q8_0_vec_dot, avx2::q5_0_q8_0_vec_dot, avx2},
      {DType::kQ4_1, "avx2", scalar::q4_1_q8_0_vec_dot, avx2::q4_1_q8_0_vec_dot, avx2},
      {DType::kQ5_1, "avx2", scalar::q5_1_q8_0_vec_dot, avx2::q5_1_q8_0_vec_dot, avx2},
      {DType::kQ5_0, "avx512", scalar::q5_0_q8_0_vec_dot, avx512::q5_0_q8_0_vec_dot, avx512},
      {DType::kQ4_1, "avx512", scalar::q4_1_q8_0_vec_dot, avx512::q4_1_q8_0_vec_dot, avx512},
      {DType::kQ5_1, "avx512", scalar::q5_1_q8_0_vec_dot, avx512::q5_1_q8_0_vec_dot, avx512},
  };
}

TEST(LegacyQuantSimd, VecDotIsBitIdenticalToScalar) {
  std::mt19937_64 rng(42);
  int ran = 0;
  for (const Variant& v : variants()) {
    if (!v.available) continue;
    ++ran;
    const int64_t block_bytes = dtype_info(v.type).block_bytes;
    for (int64_t nb : kRowBlocks) {
      const int64_t n = nb * kQK;
      for (int rep = 0; rep < 4; ++rep) {  // random bytes: every level and qh pattern
        auto w = bytes_for(v.type, n);
        for (int64_t b = 0; b < nb; ++b) randomize_block(v.type, w.data() + b * block_bytes, rng);
        const auto a = random_q8_0(nb, rng);
        const float want = v.scalar(w.data(), a.data(), n);
        ASSERT_TRUE(std::isfinite(want));
        EXPECT_EQ(v.simd(w.data(), a.data(), n), want)
            << name(v.type) << " " << v.isa << " blocks " << nb << " rep " << rep;
      }
      // Quantized data, as a model runs it.
      const auto wf = make_data(Shape::kNormal, static_cast<size_t>(n), 300 + n, 0.02f);
      const auto xf = make_data(Shape::kOutliers, static_cast<size_t>(n), 400 + n, 3.0f);
      auto w = bytes_for(v.type, n);
      kernels_for(scalar_kernel_table(), v.type).from_float(wf.data(), w.data(), n);
      std::vector<BlockQ8_0> a(static_cast<size_t>(nb));
      scalar::q8_0_from_float(xf.data(), a.data(), n);
      EXPECT_EQ(v.simd(w.data(), a.data(), n), v.scalar(w.data(), a.data(), n))
          << name(v.type) << " " << v.isa << " blocks " << nb;
    }
  }
  if (ran == 0) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
}

using tile_check::VecDotTile;
struct TileVariant {
  DType type;
  const char* isa;
  VecDot vec_dot;
  VecDotTile tile;
  bool available;
};

std::vector<TileVariant> tile_variants() {
  const bool avx2 = cpu_features().has_avx2_set();
  const bool avx512 = cpu_features().has_avx512_set();
  return {
      {DType::kQ5_0, "avx2", avx2::q5_0_q8_0_vec_dot, avx2::q5_0_q8_0_vec_dot_tile, avx2},
      {DType::kQ4_1, "avx2", avx2::q4_1_q8_0_vec_dot, avx2::q4_1_q8_0_vec_dot_tile, avx2},
      {DType::kQ5_1, "avx2", avx2::q5_1_q8_0_vec_dot, avx2::q5_1_q8_0_vec_dot_tile, avx2},
      {DType::kQ5_0, "avx512", avx512::q5_0_q8_0_vec_dot, avx512::q5_0_q8_0_vec_dot_tile, avx512},
      {DType::kQ4_1, "avx512", avx512::q4_1_q8_0_vec_dot, avx512::q4_1_q8_0_vec_dot_tile, avx512},
      {DType::kQ5_1, "avx512", avx512::q5_1_q8_0_vec_dot, avx512::q5_1_q8_0_vec_dot_tile, avx512},
  };
}

// Every tile shape against the same ISA's vec_dot (itself bit-identical to the scalar reference)
// on random blocks and on quantized data, rows and tokens not adjacent in memory.
TEST(LegacyQuantSimd, TileIsBitIdenticalToVecDot) {
  std::mt19937_64 rng(43);
  int ran = 0;
  for (const TileVariant& v : tile_variants()) {
    if (!v.available) continue;
    ++ran;
    const int64_t block_bytes = dtype_info(v.type).block_bytes;
    for (int64_t nb : kRowBlocks) {
      const int64_t n = nb * kQK;
      const size_t w_row_bytes = dtype_row_bytes(v.type, n) + 2 * block_bytes;  // padded rows
      const size_t x_row_bytes = (nb + 1) * sizeof(BlockQ8_0);
      std::vector<std::byte> w(w_row_bytes * kMaxTile), x(x_row_bytes * kMaxTile);
      for (int rep = 0; rep < 2; ++rep) {
        for (int r = 0; r < kMaxTile; ++r) {
          std::byte* row = w.data() + r * w_row_bytes;
          if (rep == 0) {
            for (int64_t b = 0; b < nb; ++b) randomize_block(v.type, row + b * block_bytes, rng);
          } else {
            const auto wf = make_data(Shape::kNormal, static_cast<size_t>(n), rng(), 0.02f);
            kernels_for(scalar_kernel_table(), v.type).from_float(wf.data(), row, n);
          }
        }
        for (int t = 0; t < kMaxTile; ++t) {
          const auto a = random_q8_0(nb, rng);
          std::memcpy(x.data() + t * x_row_bytes, a.data(), a.size() * sizeof(BlockQ8_0));
        }
        tile_check::expect_tile_equals_vec_dot(v.tile, v.vec_dot, w.data(), w_row_bytes, x.data(),
                                               x_row_bytes, n, name(v.type) + " " + v.isa);
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "CPU lacks AVX2+FMA+F16C";
}

// Batch invariance through matmul: 13 rows (a partial row tile), 576 columns (18 blocks), tokens
// in one call (tiles, partial token tiles) against one call per token (vec_dot).
TEST(LegacyQuant, MatmulOfSeveralTokensEqualsOneAtATime) {
  for (DType t : kTypes) {
    for (int64_t tokens : {2, 5, 9}) {
      const bool tiled = tile_check::expect_matmul_batch_invariant(t, 13, 576, tokens, 800 + tokens);
      EXPECT_EQ(tiled, cpu_features().has_avx2_set() && std::string(kernel_table().isa) != "scalar")
          << name(t);
    }
  }
}

// The active table agrees with the scalar table for every entry (conversions stay scalar).
TEST(LegacyQuantSimd, ActiveTableAgreesWithScalarTable) {
  for (DType t : kTypes) {
    const int64_t n = 4096;
    const auto w = make_data(Shape::kNormal, n, 600, 0.05f);
    const auto x = make_data(Shape::kNormal, n, 601, 1.0f);
    auto qa = bytes_for(t, n), qs = bytes_for(t, n);
    kernels_for(t).from_float(w.data(), qa.data(), n);
    kernels_for(scalar_kernel_table(), t).from_float(w.data(), qs.data(), n);
    ASSERT_EQ(std::memcmp(qa.data(), qs.data(), qa.size()), 0) << name(t);
    std::vector<float> ya(n), ys(n);
    kernels_for(t).to_float(qa.data(), ya.data(), n);
    kernels_for(scalar_kernel_table(), t).to_float(qs.data(), ys.data(), n);
    ASSERT_EQ(std::memcmp(ya.data(), ys.data(), n * sizeof(float)), 0) << name(t);
    auto xa = bytes_for(DType::kQ8_0, n), xs = bytes_for(DType::kQ8_0, n);
    kernels_for(DType::kQ8_0).from_float(x.data(), xa.data(), n);
    kernels_for(scalar_kernel_table(), DType::kQ8_0).from_float(x.data(), xs.data(), n);
    ASSERT_EQ(std::memcmp(xa.data(), xs.data(), xa.size()), 0);
    EXPECT_EQ(kernels_for(t).vec_dot(qa.data(), xa.data(), n),
              kernels_for(scalar_kernel_table(), t).vec_dot(qs.data(), xs.data(), n))
        << name(t) << " isa " << kernel_table().isa;
  }
}

// ---- A matmul through the kernel table, as the model runs these weights ----------------------

TEST(LegacyQuant, MatmulUsesQ8_0Activations) {
  const int64_t rows = 8, cols = 576, tokens = 3;  // SmolLM2's hidden size: not a multiple of 256
  for (DType t : kTypes) {
    const auto w = make_data(Shape::kNormal, static_cast<size_t>(rows * cols), 700, 0.05f);
    const auto x = make_data(Shape::kNormal, static_cast<size_t>(tokens * cols), 701, 1.0f);
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
      std::vector<BlockQ8_0> xq(static_cast<size_t>(cols / kQK));
      std::vector<float> xd(static_cast<size_t>(cols));
      scalar::q8_0_from_float(x.data() + tok * cols, xq.data(), cols);
      scalar::q8_0_to_float(xq.data(), xd.data(), cols);
      for (int64_t r = 0; r < rows; ++r) {
        double want = 0, mag = 0;
        for (int64_t c = 0; c < cols; ++c) {
          want += double{wd[r * cols + c]} * xd[c];
          mag += std::fabs(double{wd[r * cols + c]} * xd[c]);
        }
        EXPECT_NEAR(y[tok * rows + r], want, 2e-6 * mag)
            << name(t) << " token " << tok << " row " << r;
      }
    }
  }
}

}  // namespace legacy_quant_test
}  // namespace tessera::kernels
