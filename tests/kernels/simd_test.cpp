// SIMD kernel rows against the scalar references, per ISA the CPU supports: conversions and the
// Q8_0 activation quantizer bit for bit, dot products within a named per-dtype tolerance, on random
// inputs and odd shapes. Each ISA builds its own table (scalar rows + that ISA's install), so the
// tests mean the same with TESSERA_FORCE_SCALAR=1 set; an ISA the CPU lacks is skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/avx2_kernels.h"
#include "tessera/kernels/avx512_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/quant_blocks.h"

namespace tessera::kernels {
namespace simd_test {

// |simd - scalar| <= tolerance * sum_i |w_i * x_i| (the products' magnitude, in double). Both sides
// round every product the same way (or, for integer block dots, not at all); only the order of the
// f32 additions differs (8 lanes and several accumulators vs one running sum), whose error grows
// like sqrt(n) * 2^-24 of that magnitude for random data. 1e-5 holds n up to ~10^4 with margin.
constexpr double kF32DotTolerance = 1e-5;
constexpr double kF16DotTolerance = 1e-5;
constexpr double kBF16DotTolerance = 1e-5;
// Q8_0/Q4_0: each block's integer dot is exact; the per-block scale is applied per lane before
// summing (SIMD) instead of after (scalar): one extra rounding per block, same order of magnitude.
constexpr double kQ8_0DotTolerance = 1e-5;
constexpr double kQ4_0DotTolerance = 1e-5;

double dot_tolerance(DType t) {
  switch (t) {
    case DType::kF32: return kF32DotTolerance;
    case DType::kF16: return kF16DotTolerance;
    case DType::kBF16: return kBF16DotTolerance;
    case DType::kQ8_0: return kQ8_0DotTolerance;
    case DType::kQ4_0: return kQ4_0DotTolerance;
    default: return 0.0;
  }
}

const DType kDTypes[] = {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0};

// Float formats: one element, partial vectors, exact vectors, vector + tail, long rows.
const int64_t kFloatSizes[] = {1, 3, 7, 8, 9, 15, 16, 31, 32, 33, 63, 100, 257, 4096, 4099};
// Block formats: one block, two, odd counts (the unrolled loop's leftover), long rows.
const int64_t kBlockSizes[] = {32, 64, 96, 160, 4096, 4096 + 32, 5632, 32 * 175};

struct Isa {
  std::string name;
  bool (*available)();
  void (*install)(KernelTable&);
};

const Isa kIsas[] = {
    {"avx2", [] { return cpu_features().has_avx2_set(); }, install_avx2_rows},
    // As dispatch installs it: AVX-512 rows on top of the AVX2 ones.
    {"avx512", [] { return cpu_features().has_avx512_set(); },
     [](KernelTable& t) {
       install_avx2_rows(t);
       install_avx512_rows(t);
     }},
};

std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class SimdTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (!GetParam().available()) {
      GTEST_SKIP() << "CPU lacks the " << GetParam().name << " kernel set (has: " << cpu_flags_string()
                   << ")";
    }
    simd_ = scalar_kernel_table();
    GetParam().install(simd_);
  }
  const DTypeKernels& simd(DType t) const { return kernels_for(simd_, t); }
  static const DTypeKernels& ref(DType t) { return kernels_for(scalar_kernel_table(), t); }

  KernelTable simd_;
};

std::vector<int64_t> sizes_for(DType t) {
  if (dtype_info(t).block_size == 1) return {std::begin(kFloatSizes), std::end(kFloatSizes)};
  return {std::begin(kBlockSizes), std::end(kBlockSizes)};
}

// Weights of dtype `t` quantized (by the reference) from random floats.
std::vector<std::byte> random_row(DType t, int64_t n, uint64_t seed) {
  auto w = random_floats(static_cast<size_t>(n), seed);
  std::vector<std::byte> q(dtype_row_bytes(t, n));
  kernels_for(scalar_kernel_table(), t).from_float(w.data(), q.data(), n);
  return q;
}

TEST_P(SimdTest, ToFloatIsBitExact) {
  for (DType t : kDTypes) {
    for (int64_t n : sizes_for(t)) {
      const auto q = random_row(t, n, 100 + static_cast<uint64_t>(n));
      std::vector<float> want(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1.0f);
      ref(t).to_float(q.data(), want.data(), n);
      simd(t).to_float(q.data(), got.data(), n);
      ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0)
          << dtype_name(t) << " n " << n;
    }
  }
}

// Every quant value, including -128 (valid in files though never produced by the quantizer).
TEST_P(SimdTest, BlockToFloatCoversEveryQuant) {
  std::mt19937_64 rng(7);
  for (DType t : {DType::kQ8_0, DType::kQ4_0}) {
    const int64_t n = 32 * 64;
    std::vector<std::byte> q(dtype_row_bytes(t, n));
    for (auto& b : q) b = static_cast<std::byte>(rng());
    // Finite scales: overwrite each block's f16 d with a random finite value.
    const size_t block_bytes = static_cast<size_t>(dtype_info(t).block_bytes);
    for (size_t off = 0; off < q.size(); off += block_bytes) {
      const uint16_t d = f32_to_f16(std::ldexp(static_cast<float>(rng() % 1000) / 1000.0f, -static_cast<int>(rng() % 20)));
      std::memcpy(q.data() + off, &d, 2);
    }
    std::vector<float> want(n), got(n);
    ref(t).to_float(q.data(), want.data(), n);
    simd(t).to_float(q.data(), got.data(), n);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0) << dtype_name(t);
  }
}

// All 65536 half patterns. F16C turns signalling NaNs quiet where the reference keeps the payload
// as is; both are NaN, which is all the format promises.
TEST_P(SimdTest, HalfToFloatExhaustive) {
  std::vector<uint16_t> all(65536);
  for (uint32_t i = 0; i < 65536; ++i) all[i] = static_cast<uint16_t>(i);
  for (DType t : {DType::kF16, DType::kBF16}) {
    std::vector<float> want(65536), got(65536);
    ref(t).to_float(all.data(), want.data(), 65536);
    simd(t).to_float(all.data(), got.data(), 65536);
    for (size_t i = 0; i < all.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << dtype_name(t) << " pattern " << i;
        if (t == DType::kBF16) {
          ASSERT_EQ(bits_of(want[i]), bits_of(got[i])) << " pattern " << i;
        }
      } else {
        ASSERT_EQ(bits_of(want[i]), bits_of(got[i])) << dtype_name(t) << " pattern " << i;
      }
    }
  }
}

// Float -> f16/bf16 rounding, bit for bit: random magnitudes over the whole float range, exact
// ties, the subnormal and overflow boundaries, infinities and NaNs (with payloads).
TEST_P(SimdTest, FloatToHalfIsBitExact) {
  std::mt19937_64 rng(9);
  std::vector<float> x;
  for (int i = 0; i < 20000; ++i) {
    uint32_t u = static_cast<uint32_t>(rng());
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 1e-8f, 2.98e-8f, 5.96e-8f, 6.1e-5f,
                  std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::denorm_min()}) {
    x.push_back(f);
  }
  for (int i = 0; i < 2000; ++i) {  // halfway cases: exactly between two halves / bfloat16s
    const uint32_t u = (static_cast<uint32_t>(rng()) & 0xffffe000u) | 0x1000u;
    const uint32_t v = (static_cast<uint32_t>(rng()) & 0xffff0000u) | 0x8000u;
    float f;
    std::memcpy(&f, &u, 4);
    x.push_back(f);
    std::memcpy(&f, &v, 4);
    x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size());  // not a multiple of 8: exercises the tail
  for (DType t : {DType::kF16, DType::kBF16}) {
    std::vector<uint16_t> want(x.size()), got(x.size());
    ref(t).from_float(x.data(), want.data(), n);
    simd(t).from_float(x.data(), got.data(), n);
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(want[i], got[i]) << dtype_name(t) << " x=" << x[i] << " bits " << std::hex << bits_of(x[i]);
    }
  }
}

// The activation quantizer is on the hot path and must match the reference exactly, including its
// rounding of ties away from zero (std::lround), which a plain _mm256_round_ps would not do.
TEST_P(SimdTest, Q8_0QuantizationIsBitExact) {
  std::vector<std::vector<float>> inputs;
  for (float scale : {1e-6f, 1e-3f, 1.0f, 100.0f, 1e5f}) {
    for (int64_t n : {int64_t{32}, int64_t{64}, int64_t{96}, int64_t{4096}, int64_t{32 * 175}}) {
      inputs.push_back(random_floats(static_cast<size_t>(n), 17 + static_cast<uint64_t>(n), scale));
    }
  }
  // amax 127 makes d = 1 and id = 1, so x.5 values are exact ties.
  std::vector<float> ties(64, 0.0f);
  ties[0] = 127.0f;
  for (int j = 1; j < 32; ++j) ties[j] = static_cast<float>(j % 7) - 3.5f;
  for (int j = 32; j < 64; ++j) ties[j] = 0.0f;  // an all-zero block: d = 0, all quants 0
  inputs.push_back(ties);
  std::vector<float> tiny(32, 1e-30f);  // the scale underflows f16 to zero
  tiny[3] = -1e-30f;
  inputs.push_back(tiny);
  for (const auto& x : inputs) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<std::byte> want(dtype_row_bytes(DType::kQ8_0, n)), got(want.size());
    ref(DType::kQ8_0).from_float(x.data(), want.data(), n);
    simd(DType::kQ8_0).from_float(x.data(), got.data(), n);
    ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size()), 0) << "n " << n << " x[0] " << x[0];
  }
}

// A copy of `bytes` starting `offset` bytes past a 64-byte boundary (kernels that align their
// loads peel a head whose length depends on it).
class OffsetCopy {
 public:
  OffsetCopy(const std::vector<std::byte>& bytes, size_t offset) : buf_(bytes.size() + 128) {
    const auto addr = reinterpret_cast<uintptr_t>(buf_.data());
    data_ = buf_.data() + (64 - addr % 64) % 64 + offset;
    std::memcpy(data_, bytes.data(), bytes.size());
  }
  const std::byte* data() const { return data_; }

 private:
  std::vector<std::byte> buf_;
  std::byte* data_;
};

// Weight offsets from a 64-byte boundary: element-aligned (the dtypes' natural alignment) but
// otherwise arbitrary.
std::vector<size_t> weight_offsets(DType t) {
  if (t == DType::kF32) return {0, 4, 12, 36, 60};
  return {0, 2, 4, 30, 36, 62};
}

// dot (f32 activations) against the reference, at unaligned addresses.
TEST_P(SimdTest, DotMatchesReference) {
  for (DType t : kDTypes) {
    for (int64_t n : sizes_for(t)) {
      const auto q = random_row(t, n, 200 + static_cast<uint64_t>(n));
      auto xbuf = random_floats(static_cast<size_t>(n) + 1, 300 + static_cast<uint64_t>(n));
      const float* x = xbuf.data() + 1;  // misaligned by 4 bytes
      std::vector<float> wd(static_cast<size_t>(n));
      ref(t).to_float(q.data(), wd.data(), n);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wd[i]) * x[i]);
      const float want = ref(t).dot(q.data(), x, n);
      for (size_t offset : weight_offsets(t)) {
        const OffsetCopy w(q, offset);
        const float got = simd(t).dot(w.data(), x, n);
        EXPECT_NEAR(got, want, dot_tolerance(t) * mag) << dtype_name(t) << " n " << n << " offset " << offset;
      }
    }
  }
}

// vec_dot with activations in vec_dot_type (Q8_0 for the block formats), including weight quants
// of -128 for Q8_0 (random bytes), which the maddubs sign trick must handle.
TEST_P(SimdTest, VecDotMatchesReference) {
  std::mt19937_64 rng(11);
  for (DType t : kDTypes) {
    const DType xt = ref(t).vec_dot_type;
    for (int64_t n : sizes_for(t)) {
      for (bool random_bytes : {false, true}) {
        if (random_bytes && t != DType::kQ8_0 && t != DType::kQ4_0) continue;
        auto q = random_row(t, n, 400 + static_cast<uint64_t>(n));
        if (random_bytes) {
          const size_t bb = static_cast<size_t>(dtype_info(t).block_bytes);
          for (size_t off = 0; off < q.size(); off += bb) {
            for (size_t j = 2; j < bb; ++j) q[off + j] = static_cast<std::byte>(rng());
          }
        }
        const auto x = random_floats(static_cast<size_t>(n), 500 + static_cast<uint64_t>(n));
        std::vector<std::byte> xq(dtype_row_bytes(xt, n));
        ref(xt).from_float(x.data(), xq.data(), n);
        std::vector<float> wd(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
        ref(t).to_float(q.data(), wd.data(), n);
        ref(xt).to_float(xq.data(), xd.data(), n);
        double mag = 0;
        for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
        const float want = ref(t).vec_dot(q.data(), xq.data(), n);
        for (size_t offset : weight_offsets(t)) {
          const OffsetCopy w(q, offset);
          const float got = simd(t).vec_dot(w.data(), xq.data(), n);
          EXPECT_NEAR(got, want, dot_tolerance(t) * mag)
              << dtype_name(t) << " n " << n << " offset " << offset << (random_bytes ? " random bytes" : "");
        }
      }
    }
  }
}

// vec_dot_tile: every output of every tile shape within vec_dot's tolerance of the reference
// vec_dot and bit-identical to the same ISA's vec_dot, nothing written outside the tile, and each
// output bit-identical whatever the tile's shape (matmul's results must not depend on how it
// tiles or how many tokens share it). Random quant bytes included.
TEST_P(SimdTest, VecDotTileMatchesReference) {
  std::mt19937_64 rng(13);
  for (DType t : kDTypes) {
    if (simd(t).vec_dot_tile == nullptr) continue;
    const DType xt = ref(t).vec_dot_type;
    for (int64_t n : {int64_t{32}, int64_t{64}, int64_t{96}, int64_t{160}, int64_t{224}, int64_t{5632}}) {
      const size_t wrb = dtype_row_bytes(t, n);
      const size_t xrb = dtype_row_bytes(xt, n);
      std::vector<std::byte> w(wrb * kMaxTile), xq(xrb * kMaxTile);
      for (int r = 0; r < kMaxTile; ++r) {
        auto q = random_row(t, n, 700 + static_cast<uint64_t>(n * 8 + r));
        if (r == kMaxTile - 1) {  // random quant bytes, including -128 / every nibble
          const size_t bb = static_cast<size_t>(dtype_info(t).block_bytes);
          for (size_t off = 0; off < q.size(); off += bb) {
            for (size_t j = 2; j < bb; ++j) q[off + j] = static_cast<std::byte>(rng());
          }
        }
        std::memcpy(w.data() + r * wrb, q.data(), wrb);
        const auto x = random_floats(static_cast<size_t>(n), 800 + static_cast<uint64_t>(n * 8 + r));
        ref(xt).from_float(x.data(), xq.data() + r * xrb, n);
      }
      float one[kMaxTile][kMaxTile];  // [token][row] from 1x1 tiles
      for (int tk = 0; tk < kMaxTile; ++tk) {
        for (int r = 0; r < kMaxTile; ++r) {
          simd(t).vec_dot_tile(w.data() + r * wrb, wrb, 1, xq.data() + tk * xrb, xrb, 1,
                               &one[tk][r], 1, n);
          std::vector<float> wd(static_cast<size_t>(n)), xd(static_cast<size_t>(n));
          ref(t).to_float(w.data() + r * wrb, wd.data(), n);
          ref(xt).to_float(xq.data() + tk * xrb, xd.data(), n);
          double mag = 0;
          for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wd[i]) * xd[i]);
          const float want = ref(t).vec_dot(w.data() + r * wrb, xq.data() + tk * xrb, n);
          EXPECT_NEAR(one[tk][r], want, dot_tolerance(t) * mag)
              << dtype_name(t) << " n " << n << " row " << r << " token " << tk;
          // Batch invariance: matmul uses vec_dot for one token and tiles for several, so a
          // tile's output must be the same ISA's vec_dot bit for bit.
          const float same_isa = simd(t).vec_dot(w.data() + r * wrb, xq.data() + tk * xrb, n);
          EXPECT_EQ(bits_of(one[tk][r]), bits_of(same_isa))
              << dtype_name(t) << " n " << n << " row " << r << " token " << tk;
        }
      }
      for (int nr = 1; nr <= kMaxTile; ++nr) {
        for (int nt = 1; nt <= kMaxTile; ++nt) {
          const int64_t stride = kMaxTile + 1;
          std::vector<float> y(static_cast<size_t>(stride * kMaxTile), -7.0f);
          simd(t).vec_dot_tile(w.data(), wrb, nr, xq.data(), xrb, nt, y.data(), stride, n);
          for (int tk = 0; tk < kMaxTile; ++tk) {
            for (int r = 0; r < stride; ++r) {
              const float got = y[static_cast<size_t>(tk * stride + r)];
              if (tk < nt && r < nr) {
                EXPECT_EQ(bits_of(got), bits_of(one[tk][r]))
                    << dtype_name(t) << " n " << n << " tile " << nr << "x" << nt;
              } else {
                EXPECT_EQ(got, -7.0f) << "wrote outside the tile " << nr << "x" << nt;
              }
            }
          }
        }
      }
    }
  }
}

// Rows installed by an ISA replace only entries that exist, never the vec_dot_type.
TEST_P(SimdTest, RowsKeepTheirContracts) {
  for (DType t : kDTypes) {
    EXPECT_EQ(simd(t).vec_dot_type, ref(t).vec_dot_type) << dtype_name(t);
    EXPECT_NE(simd(t).to_float, nullptr);
    EXPECT_NE(simd(t).from_float, nullptr);
    EXPECT_NE(simd(t).dot, nullptr);
    EXPECT_NE(simd(t).vec_dot, nullptr);
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, SimdTest, ::testing::ValuesIn(kIsas),
                         [](const ::testing::TestParamInfo<Isa>& p) { return p.param.name; });

TEST(Dispatch, ActiveTableFollowsCpuAndEnvironment) {
  const char* force = std::getenv("TESSERA_FORCE_SCALAR");
  const bool forced = force != nullptr && std::string(force) != "" && std::string(force) != "0";
  const char* cap_env = std::getenv("TESSERA_ISA");
  const std::string cap = cap_env != nullptr ? cap_env : "";
  const CpuFeatures& cpu = cpu_features();
  std::string want = "scalar";
  if (!forced && cap != "scalar" && cpu.has_avx2_set()) want = "avx2";
  if (!forced && cap != "scalar" && cap != "avx2" && cpu.has_avx512_set()) want = "avx512";
  const std::string isa = kernel_table().isa;
  EXPECT_EQ(isa, want);
  EXPECT_FALSE(cpu_flags_string().empty());
  std::cout << "cpu flags: " << cpu_flags_string() << "; active kernels: " << isa << "\n";
}

}  // namespace simd_test
}  // namespace tessera::kernels
