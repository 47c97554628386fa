// Q2_K and Q3_K: block layouts decoded from hand-built bytes written from the GGML format
// definition (not from our encoder), an independent dequantizer written here from the documented
// layout against to_float, quantizer round trips within stated bounds, special values, vec_dot and
// dot against f64 dots, the AVX2 and AVX-512 vec_dots bit for bit against the scalar references
// (skipped on CPUs without them), their vec_dot_tiles bit for bit against the vec_dots in every
// tile shape, and matmuls through the active kernel table (several tokens at once equal to one at
// a time).
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
#include "tessera/kernels/kquant_low_blocks.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/kquants_low.h"
#include "tessera/kernels/ops.h"
#include "tile_check.h"

namespace tessera::kernels {
namespace {

const DType kTypes[] = {DType::kQ3_K, DType::kQ2_K};
// Row lengths: one block, two, a Llama-7B hidden size, and the 11008 FFN width (43 blocks).
const int64_t kRowSizes[] = {256, 512, 4096, 11008};

std::vector<std::byte> bytes_for(DType t, int64_t n) {
  return std::vector<std::byte>(dtype_row_bytes(t, n));
}

// ---- Layout ---------------------------------------------------------------------------------

TEST(KQuantLowLayout, SizesAndOffsetsMatchGgml) {
  EXPECT_EQ(dtype_info(DType::kQ2_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ2_K)));
  EXPECT_EQ(dtype_info(DType::kQ3_K).block_bytes, static_cast<int64_t>(sizeof(BlockQ3_K)));
  EXPECT_EQ(offsetof(BlockQ2_K, qs), 16u);
  EXPECT_EQ(offsetof(BlockQ2_K, d), 80u);
  EXPECT_EQ(offsetof(BlockQ2_K, dmin), 82u);
  EXPECT_EQ(offsetof(BlockQ3_K, qs), 32u);
  EXPECT_EQ(offsetof(BlockQ3_K, scales), 96u);
  EXPECT_EQ(offsetof(BlockQ3_K, d), 108u);
  for (DType t : kTypes) {
    EXPECT_TRUE(dtype_info(t).supported) << dtype_name(t);
    EXPECT_EQ(dtype_info(t).block_size, 256) << dtype_name(t);
    EXPECT_EQ(kernels_for(t).vec_dot_type, DType::kQ8_K) << dtype_name(t);
    EXPECT_EQ(kernels_for(scalar_kernel_table(), t).vec_dot_type, DType::kQ8_K);
  }
  EXPECT_EQ(dtype_from_name("q3_K"), DType::kQ3_K);
  EXPECT_EQ(dtype_from_name("Q2_K"), DType::kQ2_K);
}

// Q3_K with d = 1.0 and scale codes s0 = 33 (+1), s5 = 30 (-2), s9 = 63 (+31), s15 = 0 (-32), all
// others 32 (0). Packed by hand: byte b < 8 holds s[b]'s low nibble and s[b+8]'s above it; byte
// 8 + m holds the top two bits of s[m], s[m+4], s[m+8], s[m+12] at bits 0, 2, 4, 6.
//   bytes 0-7: s0 low 1 -> 0x01; s9 low 15 -> byte 1 = 0xf0; s5 low 14 -> byte 5 = 0x0e.
//   byte 8: tops 2,2,2,2 -> 0xaa; byte 9: s1=2, s5=1, s9=3, s13=2 -> 0xb6; byte 10: 0xaa;
//   byte 11: s3=2, s7=2, s11=2, s15=0 -> 0x2a.
TEST(KQuantLowLayout, Q3_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(110, 0);
  const uint8_t scales[12] = {0x01, 0xf0, 0, 0, 0, 0x0e, 0, 0, 0xaa, 0xb6, 0xaa, 0x2a};
  std::memcpy(block.data() + 96, scales, 12);
  block[108] = 0x00;  // d = 1.0 (f16 0x3c00, little-endian)
  block[109] = 0x3c;
  // Element e: low bits at qs[32 * (e / 128) + e % 32] bits 2k (k = e / 32 % 4), high bit at
  // hmask[e % 32] bit e / 32; level = low + 4 * high - 4.
  block[32 + 0] = 0x03;   // e = 0: low 3
  block[0] = 0x01;        //        high 1 -> level 3, scale 1 -> 3
  block[32 + 21] = 0x10;  // e = 85 (sub-block 5, k = 2, l = 21): low 1
  block[21] = 0x04;       //        high (bit 2) 1 -> level 1, scale -2 -> -2
  block[32 + 54] = 0x02;  // e = 150 (sub-block 9, h = 1, k = 0, l = 22): low 2, high 0
                          //        -> level -2, scale 31 -> -62
  block[32 + 63] = 0x40;  // e = 255 (sub-block 15, h = 1, k = 3, l = 31): low 1
  block[31] = 0x80;       //        high (bit 7) 1 -> level 1, scale -32 -> -32
  std::vector<float> y(256);
  scalar::q3_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[0], 3.0f);
  EXPECT_EQ(y[1], -4.0f);     // all bits 0: level -4, scale 1
  EXPECT_EQ(y[16], 0.0f);     // sub-block 1: scale 0
  EXPECT_EQ(y[85], -2.0f);
  EXPECT_EQ(y[84], 8.0f);     // level -4, scale -2
  EXPECT_EQ(y[150], -62.0f);
  EXPECT_EQ(y[151], -124.0f);  // level -4, scale 31
  EXPECT_EQ(y[255], -32.0f);
  EXPECT_EQ(y[254], 128.0f);   // level -4, scale -32
  int8_t s[16];
  unpack_q3_k_scales(scales, s);
  const int8_t want[16] = {1, 0, 0, 0, 0, -2, 0, 0, 0, 31, 0, 0, 0, 0, 0, -32};
  for (int j = 0; j < 16; ++j) EXPECT_EQ(s[j], want[j]) << j;
  uint8_t repacked[12];
  pack_q3_k_scales(want, repacked);
  EXPECT_EQ(std::memcmp(repacked, scales, 12), 0);
}

// Q2_K with d = 1.0, dmin = 0.5; scales[0] = 0x21 (sc 1, m 2), scales[7] = 0xf3 (sc 3, m 15),
// scales[15] = 0x0a (sc 10, m 0), others 0.
TEST(KQuantLowLayout, Q2_KDecodesHandBuiltBlock) {
  std::vector<uint8_t> block(84, 0);
  block[0] = 0x21;
  block[7] = 0xf3;
  block[15] = 0x0a;
  block[80] = 0x00;  // d = 1.0
  block[81] = 0x3c;
  block[82] = 0x00;  // dmin = 0.5
  block[83] = 0x38;
  block[16 + 0] = 0x03;   // e = 0: level 3 -> 1 * 3 - 0.5 * 2 = 2
  block[16 + 24] = 0x80;  // e = 120 (sub-block 7, k = 3, l = 24): level 2 -> 3 * 2 - 7.5 = -1.5
  block[16 + 63] = 0xc0;  // e = 255 (sub-block 15, h = 1, k = 3, l = 31): level 3 -> 30
  std::vector<float> y(256);
  scalar::q2_k_to_float(block.data(), y.data(), 256);
  EXPECT_EQ(y[0], 2.0f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_EQ(y[120], -1.5f);
  EXPECT_EQ(y[121], -7.5f);
  EXPECT_EQ(y[130], 0.0f);
  EXPECT_EQ(y[255], 30.0f);
  EXPECT_EQ(y[254], 0.0f);
}

// ---- An independent decoder, byte by byte from the documented layout ------------------------

// Walks the packed bytes (not the elements): qs byte b, bit pair k -> element
// 128 * (b / 32) + 32 * k + b % 32; hmask byte l, bit t -> element 32 * t + l.
void reference_q3_k(const uint8_t* blk, float* y) {
  const uint8_t* hmask = blk;
  const uint8_t* qs = blk + 32;
  const uint8_t* sc = blk + 96;
  uint16_t dh;
  std::memcpy(&dh, blk + 108, 2);
  const float d = f16_to_f32(dh);
  int level[256];
  for (int b = 0; b < 64; ++b) {
    for (int k = 0; k < 4; ++k) level[128 * (b / 32) + 32 * k + b % 32] = (qs[b] >> (2 * k)) & 3;
  }
  for (int l = 0; l < 32; ++l) {
    for (int t = 0; t < 8; ++t) level[32 * t + l] -= ((hmask[l] >> t) & 1) ? 0 : 4;
  }
  for (int j = 0; j < 16; ++j) {
    const int lowbits = j < 8 ? sc[j] & 0xf : sc[j - 8] >> 4;
    const int topbits = (sc[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    const float step = d * static_cast<float>(lowbits + 16 * topbits - 32);
    for (int e = 16 * j; e < 16 * j + 16; ++e) y[e] = step * static_cast<float>(level[e]);
  }
}

void reference_q2_k(const uint8_t* blk, float* y) {
  const uint8_t* sc = blk;
  const uint8_t* qs = blk + 16;
  uint16_t dh, mh;
  std::memcpy(&dh, blk + 80, 2);
  std::memcpy(&mh, blk + 82, 2);
  const float d = f16_to_f32(dh), dmin = f16_to_f32(mh);
  int level[256];
  for (int b = 0; b < 64; ++b) {
    for (int k = 0; k < 4; ++k) level[128 * (b / 32) + 32 * k + b % 32] = (qs[b] >> (2 * k)) & 3;
  }
  for (int j = 0; j < 16; ++j) {
    const float step = d * static_cast<float>(sc[j] & 0xf);
    const float offset = dmin * static_cast<float>(sc[j] >> 4);
    for (int e = 16 * j; e < 16 * j + 16; ++e) y[e] = step * static_cast<float>(level[e]) - offset;
  }
}

// Random bytes cover what our quantizer never emits; d fields are finite f16 of either sign.
void randomize_block(DType t, std::byte* block, std::mt19937_64& rng) {
  const size_t bytes = static_cast<size_t>(dtype_info(t).block_bytes);
  for (size_t i = 0; i < bytes; ++i) block[i] = static_cast<std::byte>(rng());
  std::uniform_int_distribution<int> half(0x1000, 0x3bff);  // ~2.4e-4 .. ~0.99
  auto set_half = [&](size_t off) {
    const auto h = static_cast<uint16_t>(half(rng) | (rng() & 1 ? 0x8000 : 0));
    std::memcpy(block + off, &h, 2);
  };
  if (t == DType::kQ3_K) {
    set_half(108);
  } else {
    set_half(80);
    set_half(82);
  }
}

TEST(KQuantLowLayout, IndependentDecoderAgreesBitForBit) {
  std::mt19937_64 rng(11);
  for (DType t : kTypes) {
    const int64_t n = 256 * 64;
    auto q = bytes_for(t, n);
    const auto bb = static_cast<size_t>(dtype_info(t).block_bytes);
    for (int64_t b = 0; b < n / 256; ++b) randomize_block(t, q.data() + b * bb, rng);
    std::vector<float> got(n), want(n);
    kernels_for(scalar_kernel_table(), t).to_float(q.data(), got.data(), n);
    for (int64_t b = 0; b < n / 256; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(q.data() + b * bb);
      if (t == DType::kQ3_K) reference_q3_k(blk, want.data() + b * 256);
      else reference_q2_k(blk, want.data() + b * 256);
    }
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << dtype_name(t);
    // And on what our quantizer writes.
    std::vector<float> x(n);
    std::normal_distribution<float> normal;
    for (auto& v : x) v = normal(rng);
    kernels_for(t).from_float(x.data(), q.data(), n);
    kernels_for(t).to_float(q.data(), got.data(), n);
    for (int64_t b = 0; b < n / 256; ++b) {
      const auto* blk = reinterpret_cast<const uint8_t*>(q.data() + b * bb);
      if (t == DType::kQ3_K) reference_q3_k(blk, want.data() + b * 256);
      else reference_q2_k(blk, want.data() + b * 256);
    }
    EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0) << dtype_name(t);
  }
}

// ---- Round trips ----------------------------------------------------------------------------

enum class Shape { kNormal, kUniform, kLaplace, kOutliers, kPositive, kNegative };

std::vector<float> make_data(Shape shape, size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::exponential_distribution<float> expo(1.0f);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    float x = 0.0f;
    switch (shape) {
      case Shape::kNormal: x = normal(rng); break;
      case Shape::kUniform: x = uniform(rng); break;
      case Shape::kLaplace: x = expo(rng) * (rng() & 1 ? 1.0f : -1.0f); break;
      case Shape::kOutliers: x = normal(rng) * (i % 97 == 0 ? 20.0f : 1.0f); break;
      case Shape::kPositive: x = std::fabs(normal(rng)) + 0.5f; break;
      case Shape::kNegative: x = -std::fabs(normal(rng)) - 0.5f; break;
    }
    v[i] = x * scale;
  }
  return v;
}

// Stated round-trip errors (kquants_low.h: 0.144 / 0.263 RMS, 0.26 / 0.50 worst), with some margin: RMS error / RMS of N(0,1) data;
// per super-block, max |x - x'| <= ratio * (block's largest |x|) + an absolute term for f16
// super-block scales near f16's subnormal range.
struct Bound {
  double rms_ratio;
  double max_ratio;
  double abs_term;
};
Bound stated_bound(DType t) {
  switch (t) {
    case DType::kQ3_K: return {0.15, 0.30, 32.0 * 4 * 0x1p-24};
    case DType::kQ2_K: return {0.275, 0.55, 15.0 * 3 * 0x1p-24};
    default: return {0, 0, 0};
  }
}

struct RoundTripStats {
  double rms_ratio = 0;
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

TEST(KQuantLow, RoundTripWithinStatedError) {
  const size_t n = kQK_K * 256;
  for (DType t : kTypes) {
    const Bound bound = stated_bound(t);
    double worst = 0;
    for (Shape shape : {Shape::kNormal, Shape::kUniform, Shape::kLaplace, Shape::kOutliers,
                        Shape::kPositive, Shape::kNegative}) {
      for (float scale : {1e-3f, 1.0f, 100.0f}) {
        auto x = make_data(shape, n, 7 + static_cast<uint64_t>(shape), scale);
        std::vector<float> y;
        const RoundTripStats s = round_trip(t, x, &y);
        worst = std::max(worst, s.max_ratio);
        if (shape == Shape::kNormal && scale == 1.0f) {
          EXPECT_LE(s.rms_ratio, bound.rms_ratio) << dtype_name(t);
          std::printf("[ measured ] %s N(0,1): rms err / rms x %.4f\n",
                      std::string(dtype_name(t)).c_str(), s.rms_ratio);
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
    std::printf("[ measured ] %s worst max err / block max over all shapes %.4f\n",
                std::string(dtype_name(t)).c_str(), worst);
  }
}

// A loud sub-block must not collapse the quiet ones of its super-block to nothing.
TEST(KQuantLow, SmallSubBlocksKeepTheirResolution) {
  for (DType t : kTypes) {
    auto x = make_data(Shape::kNormal, kQK_K, 5, 1.0f);
    for (int i = 0; i < 16; ++i) x[i] *= 20.0f;  // one loud sub-block
    std::vector<float> y;
    round_trip(t, x, &y);
    double se = 0, sx = 0;
    for (int i = 16; i < kQK_K; ++i) {
      se += (double{x[i]} - y[i]) * (double{x[i]} - y[i]);
      sx += double{x[i]} * x[i];
    }
    // A quantizer that zeroed the quiet sub-blocks would score 1.0 here.
    EXPECT_LT(std::sqrt(se / sx), 0.6) << dtype_name(t);
  }
}

TEST(KQuantLow, SpecialValuesStayFinite) {
  for (DType t : kTypes) {
    const auto& k = kernels_for(scalar_kernel_table(), t);
    // All zeros decode to +0 exactly.
    std::vector<float> x(512, 0.0f), y(512, 1.0f);
    auto q = bytes_for(t, 512);
    k.from_float(x.data(), q.data(), 512);
    k.to_float(q.data(), y.data(), 512);
    for (float v : y) {
      ASSERT_EQ(v, 0.0f) << dtype_name(t);
      ASSERT_FALSE(std::signbit(v)) << dtype_name(t);
    }
    EXPECT_EQ(k.dot(q.data(), x.data(), 512), 0.0f);
    // Tiny, subnormal and mixed-magnitude values: finite, and no value grows.
    for (float scale : {1e-30f, 1e-38f, 1e-8f, 1e-5f, 3e4f}) {
      auto v = make_data(Shape::kOutliers, 512, 9, scale);
      v[3] = 0.0f;
      v[4] = -0.0f;
      k.from_float(v.data(), q.data(), 512);
      k.to_float(q.data(), y.data(), 512);
      double amax = 0;
      for (float a : v) amax = std::max(amax, std::fabs(double{a}));
      for (int i = 0; i < 512; ++i) {
        ASSERT_TRUE(std::isfinite(y[i])) << dtype_name(t) << " scale " << scale << " i " << i;
        ASSERT_LE(std::fabs(double{y[i]}), 1.5 * amax + 1e-6) << dtype_name(t) << " " << scale;
      }
    }
  }
}

// Q2_K codes constant blocks through its offset (mins): a negative constant exactly up to f16
// rounding of dmin and the 4-bit min code; Q3_K through its symmetric grid.
TEST(KQuantLow, ConstantBlocks) {
  std::vector<float> x(256, -0.75f), y;
  round_trip(DType::kQ2_K, x, &y);
  for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], -0.75f, 0.75 * 0x1p-10);
  round_trip(DType::kQ3_K, x, &y);
  for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], -0.75f, 0.75 * 0x1p-10);
  std::fill(x.begin(), x.end(), 0.6f);
  round_trip(DType::kQ3_K, x, &y);
  for (int i = 0; i < 256; ++i) ASSERT_NEAR(y[i], 0.6f, 0.6 * 0x1p-10);
}

// ---- Dot products ---------------------------------------------------------------------------

// vec_dot(w, Q8_K(x)) is exact in the blocks' integers, so against the f64 dot of the dequantized
// weights with the unquantized x it may differ by the activation rounding (d_x / 2 per value,
// times sum |w'|) plus f32 rounding of the block scaling and running sum (1e-5 of magnitude).
TEST(KQuantLow, VecDotAndDotMatchF64) {
  for (DType t : kTypes) {
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
      for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
        const auto& k = kernels_for(*table, t);
        EXPECT_NEAR(k.vec_dot(q.data(), xq.data(), n), want, act_err + 1e-5 * mag)
            << dtype_name(t) << " " << table->isa << " n " << n;
        EXPECT_NEAR(k.dot(q.data(), x.data(), n), want, 1e-5 * mag) << dtype_name(t) << " n " << n;
      }
    }
  }
}

// Matmul on Q2_K/Q3_K weights through the active table: activations converted to Q8_K once per
// token, vec_dot per row; each output within the activation error of the f64 dot.
TEST(KQuantLow, MatmulThroughKernelTable) {
  const int64_t rows = 8, cols = 512, tokens = 3;
  for (DType t : kTypes) {
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

// ---- SIMD against the scalar references -----------------------------------------------------

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
struct SimdVecDot {
  const char* isa;
  bool (*available)();
  DType type;
  VecDot simd;
  VecDot scalar;
};
bool have_avx2() { return cpu_features().has_avx2_set(); }
bool have_avx512() { return cpu_features().has_avx512_set(); }
const SimdVecDot kSimd[] = {
    {"avx2", have_avx2, DType::kQ3_K, avx2::q3_k_q8_k_vec_dot, scalar::q3_k_q8_k_vec_dot},
    {"avx2", have_avx2, DType::kQ2_K, avx2::q2_k_q8_k_vec_dot, scalar::q2_k_q8_k_vec_dot},
    {"avx512", have_avx512, DType::kQ3_K, avx512::q3_k_q8_k_vec_dot, scalar::q3_k_q8_k_vec_dot},
    {"avx512", have_avx512, DType::kQ2_K, avx512::q2_k_q8_k_vec_dot, scalar::q2_k_q8_k_vec_dot},
};

TEST(KQuantLowSimd, VecDotIsBitIdenticalToScalarOnRandomBlocks) {
  std::mt19937_64 rng(42);
  int ran = 0;
  for (const auto& p : kSimd) {
    if (!p.available()) {
      std::printf("[ skipped  ] %s %s: CPU lacks the set\n", p.isa,
                  std::string(dtype_name(p.type)).c_str());
      continue;
    }
    ++ran;
    for (int64_t n : kRowSizes) {
      for (int rep = 0; rep < 8; ++rep) {
        auto w = bytes_for(p.type, n);
        for (int64_t b = 0; b < n / kQK_K; ++b) {
          randomize_block(p.type, w.data() + b * dtype_info(p.type).block_bytes, rng);
        }
        auto a = random_q8_k(n, rng);
        const float want = p.scalar(w.data(), a.data(), n);
        ASSERT_TRUE(std::isfinite(want));
        EXPECT_EQ(p.simd(w.data(), a.data(), n), want)
            << p.isa << " " << dtype_name(p.type) << " n " << n << " rep " << rep;
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "CPU lacks AVX2 and AVX-512";
}

TEST(KQuantLowSimd, VecDotIsBitIdenticalToScalarOnQuantizedData) {
  int ran = 0;
  for (const auto& p : kSimd) {
    if (!p.available()) continue;
    ++ran;
    for (int64_t n : kRowSizes) {
      auto w = make_data(Shape::kNormal, static_cast<size_t>(n), 300 + n, 0.02f);
      auto x = make_data(Shape::kOutliers, static_cast<size_t>(n), 400 + n, 3.0f);
      auto q = bytes_for(p.type, n);
      kernels_for(scalar_kernel_table(), p.type).from_float(w.data(), q.data(), n);
      std::vector<BlockQ8_K> xq(static_cast<size_t>(n / kQK_K));
      scalar::q8_k_from_float(x.data(), xq.data(), n);
      EXPECT_EQ(p.simd(q.data(), xq.data(), n), p.scalar(q.data(), xq.data(), n))
          << p.isa << " " << dtype_name(p.type) << " n " << n;
    }
  }
  if (ran == 0) GTEST_SKIP() << "CPU lacks AVX2 and AVX-512";
}

// The active table's Q2_K/Q3_K rows: to_float and from_float are the scalar ones (bit-identical
// by construction) and vec_dot agrees bit for bit with the scalar table's.
TEST(KQuantLowSimd, ActiveTableAgreesWithScalarTable) {
  for (DType t : kTypes) {
    const int64_t n = 4096;
    auto w = make_data(Shape::kNormal, n, 600, 0.05f);
    auto x = make_data(Shape::kNormal, n, 601, 1.0f);
    auto qa = bytes_for(t, n), qs = bytes_for(t, n);
    kernels_for(t).from_float(w.data(), qa.data(), n);
    kernels_for(scalar_kernel_table(), t).from_float(w.data(), qs.data(), n);
    EXPECT_EQ(std::memcmp(qa.data(), qs.data(), qa.size()), 0) << dtype_name(t);
    std::vector<float> ya(n), ys(n);
    kernels_for(t).to_float(qa.data(), ya.data(), n);
    kernels_for(scalar_kernel_table(), t).to_float(qa.data(), ys.data(), n);
    EXPECT_EQ(std::memcmp(ya.data(), ys.data(), n * sizeof(float)), 0) << dtype_name(t);
    auto xa = bytes_for(DType::kQ8_K, n);
    kernels_for(DType::kQ8_K).from_float(x.data(), xa.data(), n);
    EXPECT_EQ(kernels_for(t).vec_dot(qa.data(), xa.data(), n),
              kernels_for(scalar_kernel_table(), t).vec_dot(qa.data(), xa.data(), n))
        << dtype_name(t) << " isa " << kernel_table().isa;
  }
}

// ---- Tiles ------------------------------------------------------------------------------------

struct TileVariant {
  const char* isa;
  bool (*available)();
  DType type;
  VecDot vec_dot;
  tile_check::VecDotTile tile;
};
const TileVariant kTiles[] = {
    {"avx2", have_avx2, DType::kQ3_K, avx2::q3_k_q8_k_vec_dot, avx2::q3_k_q8_k_vec_dot_tile},
    {"avx2", have_avx2, DType::kQ2_K, avx2::q2_k_q8_k_vec_dot, avx2::q2_k_q8_k_vec_dot_tile},
    {"avx512", have_avx512, DType::kQ3_K, avx512::q3_k_q8_k_vec_dot, avx512::q3_k_q8_k_vec_dot_tile},
    {"avx512", have_avx512, DType::kQ2_K, avx512::q2_k_q8_k_vec_dot, avx512::q2_k_q8_k_vec_dot_tile},
};

// Every tile shape against the same ISA's vec_dot (bit-identical to the scalar reference) on
// random blocks and quantized data: one, three and 43 super-blocks, rows and tokens padded apart.
TEST(KQuantLowSimd, TileIsBitIdenticalToVecDot) {
  std::mt19937_64 rng(44);
  int ran = 0;
  for (const auto& p : kTiles) {
    if (!p.available()) continue;
    ++ran;
    const int64_t block_bytes = dtype_info(p.type).block_bytes;
    for (int64_t n : {int64_t{256}, int64_t{768}, int64_t{11008}}) {
      const size_t w_row_bytes = dtype_row_bytes(p.type, n) + block_bytes;
      const size_t x_row_bytes = (n / kQK_K + 1) * sizeof(BlockQ8_K);
      std::vector<std::byte> w(w_row_bytes * kMaxTile), x(x_row_bytes * kMaxTile);
      for (int rep = 0; rep < 2; ++rep) {
        for (int r = 0; r < kMaxTile; ++r) {
          std::byte* row = w.data() + r * w_row_bytes;
          if (rep == 0) {
            for (int64_t b = 0; b < n / kQK_K; ++b) randomize_block(p.type, row + b * block_bytes, rng);
          } else {
            const auto wf = make_data(Shape::kNormal, static_cast<size_t>(n), rng(), 0.02f);
            kernels_for(scalar_kernel_table(), p.type).from_float(wf.data(), row, n);
          }
        }
        for (int t = 0; t < kMaxTile; ++t) {
          const auto a = random_q8_k(n, rng);
          std::memcpy(x.data() + t * x_row_bytes, a.data(), a.size() * sizeof(BlockQ8_K));
        }
        tile_check::expect_tile_equals_vec_dot(p.tile, p.vec_dot, w.data(), w_row_bytes, x.data(),
                                               x_row_bytes, n,
                                               std::string(dtype_name(p.type)) + " " + p.isa);
      }
    }
  }
  if (ran == 0) GTEST_SKIP() << "CPU lacks AVX2 and AVX-512";
}

// Batch invariance through matmul: 13 rows (a partial row tile), 512 columns, tokens in one call
// (tiles, partial token tiles) against one call per token (vec_dot).
TEST(KQuantLow, MatmulOfSeveralTokensEqualsOneAtATime) {
  for (DType t : kTypes) {
    for (int64_t tokens : {2, 5, 9}) {
      const bool tiled = tile_check::expect_matmul_batch_invariant(t, 13, 512, tokens, 900 + tokens);
      EXPECT_EQ(tiled, have_avx2() && std::string(kernel_table().isa) != "scalar") << dtype_name(t);
    }
  }
}

}  // namespace
}  // namespace tessera::kernels
