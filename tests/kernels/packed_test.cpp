// Weights repacked into 16-row groups (packed_q4_0.h with IQ4_NL, packed_legacy.h, packed_q8_0.h,
// packed_q4_k.h, packed_q2_k.h, packed_q6_k.h, packed_f16.h), every layout through the same
// checks: the layout round-trips to the row layout's values, the scalar group kernel agrees with
// the row kernel's dot, each SIMD group kernel agrees with the scalar one bit for bit whatever
// the number of tokens (and writes only its outputs), and matmul on a packed matrix (tail rows, a
// pool, one token alone) matches matmul on the rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/kernels/avx2_packed.h"
#include "tessera/kernels/avx512_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"

namespace tessera::kernels {
namespace packed_test {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Format {
  std::string name;
  DType dtype;             // weights
  MatrixLayout layout;
  size_t header_bytes;     // bytes of a block kept from the quantizer (its scales); 0: no random row
  void (*pack)(const void* src, size_t row_bytes, int64_t n_groups, int64_t n_cols, void* dst);
  void (*row_to_float)(const void* group, int l, int64_t n_cols, float* dst);
  size_t (*group_bytes)(int64_t n_cols);
  void (*terms)(const void* x, size_t x_row_bytes, int64_t n_tokens, int64_t n_cols, int32_t* out);
  int64_t terms_per_block;  // per token and block of the weights
  Q4_0x16GemmFn scalar_gemm;
  Q4_0x16GemmFn avx512_gemm;
  std::vector<int64_t> sizes;  // column counts: one block, odd block counts, long rows
  bool needs_vbmi = false;     // the SIMD kernel needs AVX-512 VBMI besides the avx512 set
  size_t tail_bytes = 0;       // bytes at a block's end kept from the quantizer (Q2_K, Q6_K: d...)
};

const Format kFormats[] = {
    {"q4_0", DType::kQ4_0, MatrixLayout::kQ4_0x16, 2, pack_q4_0x16, q4_0x16_row_to_float,
     q4_0x16_group_bytes, q8_0_block_terms, 2, scalar::q4_0x16_q8_0_gemm, avx512::q4_0x16_q8_0_gemm,
     {32, 64, 96, 5632}},
    {"q8_0", DType::kQ8_0, MatrixLayout::kQ8_0x16, 2, pack_q8_0x16, q8_0x16_row_to_float,
     q8_0x16_group_bytes, q8_0_block_terms_x128, 2, scalar::q8_0x16_q8_0_gemm,
     avx512::q8_0x16_q8_0_gemm, {32, 64, 96, 5632}},
    {"q4_K", DType::kQ4_K, MatrixLayout::kQ4_Kx16, 4, pack_q4_kx16, q4_kx16_row_to_float,
     q4_kx16_group_bytes, q8_k_min_pairs, 4, scalar::q4_kx16_q8_k_gemm, avx512::q4_kx16_q8_k_gemm,
     {256, 768, 5632}},
    {"q2_K", DType::kQ2_K, MatrixLayout::kQ2_Kx16, 0, pack_q2_kx16, q2_kx16_row_to_float,
     q2_kx16_group_bytes, q8_k_bsum_pairs, 8, scalar::q2_kx16_q8_k_gemm, avx512::q2_kx16_q8_k_gemm,
     {256, 768, 5632}, false, 4},
    {"q6_K", DType::kQ6_K, MatrixLayout::kQ6_Kx16, 0, pack_q6_kx16, q6_kx16_row_to_float,
     q6_kx16_group_bytes, q8_k_bsum_pairs, 8, scalar::q6_kx16_q8_k_gemm, avx512::q6_kx16_q8_k_gemm,
     {256, 768, 5632}, false, 2},
    {"f16", DType::kF16, MatrixLayout::kF16x16, 0, pack_f16x16, f16x16_row_to_float,
     f16x16_group_bytes, nullptr, 0, scalar::f16x16_f32_gemm, avx512::f16x16_f32_gemm,
     {1, 3, 4, 7, 64, 576, 2051}},
    {"iq4_nl", DType::kIQ4_NL, MatrixLayout::kIQ4_NLx16, 2, pack_q4_0x16, iq4_nlx16_row_to_float,
     q4_0x16_group_bytes, q8_0_block_terms_x128, 2, scalar::iq4_nlx16_q8_0_gemm,
     avx512::iq4_nlx16_q8_0_gemm, {32, 64, 96, 5632}},
    {"q4_1", DType::kQ4_1, MatrixLayout::kQ4_1x16, 4, pack_q4_1x16, q4_1x16_row_to_float,
     q4_1x16_group_bytes, q8_0_block_terms_sum, 2, scalar::q4_1x16_q8_0_gemm,
     avx512::q4_1x16_q8_0_gemm, {32, 64, 96, 5632}},
    {"q5_0", DType::kQ5_0, MatrixLayout::kQ5_0x16, 2, pack_q5_0x16, q5_0x16_row_to_float,
     q5_0x16_group_bytes, q8_0_block_terms_x16, 2, scalar::q5_0x16_q8_0_gemm,
     avx512::q5_0x16_q8_0_gemm, {32, 64, 96, 5632}},
    {"q5_1", DType::kQ5_1, MatrixLayout::kQ5_1x16, 4, pack_q5_1x16, q5_1x16_row_to_float,
     q5_1x16_group_bytes, q8_0_block_terms_sum, 2, scalar::q5_1x16_q8_0_gemm,
     avx512::q5_1x16_q8_0_gemm, {32, 64, 96, 5632}},
    // 2:4 F16: no random row (random f16 bits would include NaNs and a mask must stay 2:4).
    {"f16_2of4", DType::kF16_2of4, MatrixLayout::kF16_2of4x16, 0, pack_f16_2of4x16,
     f16_2of4x16_row_to_float, f16_2of4x16_group_bytes, nullptr, 0, scalar::f16_2of4x16_f32_gemm,
     avx512::f16_2of4x16_f32_gemm, {32, 64, 96, 5632}},
    // 2:4: header d + mask kept, the kept quants of the last row random (-128 included).
    {"q8_0_2of4", DType::kQ8_0_2of4, MatrixLayout::kQ8_0_2of4x16, 6, pack_q8_0_2of4x16,
     q8_0_2of4x16_row_to_float, q8_0_2of4x16_group_bytes, q8_0_block_terms, 2,
     scalar::q8_0_2of4x16_q8_0_gemm, avx512vbmi::q8_0_2of4x16_q8_0_gemm, {32, 64, 96, 5632}, true},
};

std::vector<float> normal(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

class PackedTest : public ::testing::TestWithParam<Format> {
  // Public: the checks shared by several tests (expect_bit_identical) make their inputs here.
 public:
  const Format& f() const { return GetParam(); }
  DType act() const { return kernels_for(scalar_kernel_table(), f().dtype).vec_dot_type; }
  int64_t block() const { return dtype_info(f().dtype).block_size; }

  // n_rows rows in the file's layout, quantized from random floats; for block formats the last
  // row's quants (all but each block's scales) are random bytes: every nibble, -128, every
  // 6-bit scale and min.
  std::vector<std::byte> rows(int64_t n_rows, int64_t n, uint64_t seed) const {
    const auto w = normal(static_cast<size_t>(n_rows * n), seed);
    std::vector<std::byte> q(dtype_row_bytes(f().dtype, n_rows * n));
    kernels_for(scalar_kernel_table(), f().dtype).from_float(w.data(), q.data(), n_rows * n);
    if (f().header_bytes > 0 || f().tail_bytes > 0) {
      std::mt19937_64 rng(seed);
      const auto bb = static_cast<size_t>(dtype_info(f().dtype).block_bytes);
      for (size_t off = (n_rows - 1) * dtype_row_bytes(f().dtype, n); off < q.size(); off += bb) {
        for (size_t j = f().header_bytes; j < bb - f().tail_bytes; ++j) q[off + j] = static_cast<std::byte>(rng());
      }
    }
    return q;
  }
  // n_tokens activation rows in the kernels' format (unless `in_range`, the last Q8_0 row with
  // some -128 quants, which q8_0_from_float never makes but the reference and AVX-512 kernels take).
  std::vector<std::byte> tokens(int64_t n_tokens, int64_t n, uint64_t seed, bool in_range = false) const {
    const auto x = normal(static_cast<size_t>(n_tokens * n), seed);
    std::vector<std::byte> q(dtype_row_bytes(act(), n_tokens * n));
    kernels_for(scalar_kernel_table(), act()).from_float(x.data(), q.data(), n_tokens * n);
    if (act() == DType::kQ8_0 && !in_range) {
      std::mt19937_64 rng(seed);
      for (size_t off = (n_tokens - 1) * dtype_row_bytes(act(), n); off < q.size(); off += 34) {
        q[off + 2 + rng() % 32] = std::byte{0x80};
      }
    }
    return q;
  }
  std::vector<int32_t> terms_of(const std::vector<std::byte>& x, int64_t n_tokens, int64_t n) const {
    std::vector<int32_t> t(static_cast<size_t>(std::max<int64_t>(1, n_tokens * n / block() * f().terms_per_block)));
    if (f().terms != nullptr) f().terms(x.data(), dtype_row_bytes(act(), n), n_tokens, n, t.data());
    return t;
  }
};

TEST_P(PackedTest, RowsRoundTrip) {
  for (int64_t n : f().sizes) {
    const int64_t R = 32;
    const auto q = rows(R, n, 1 + n);
    const size_t rb = dtype_row_bytes(f().dtype, n);
    std::vector<std::byte> p(R / 16 * f().group_bytes(n));
    f().pack(q.data(), rb, R / 16, n, p.data());
    std::vector<float> want(n), got(n);
    for (int64_t r = 0; r < R; ++r) {
      kernels_for(scalar_kernel_table(), f().dtype).to_float(q.data() + r * rb, want.data(), n);
      f().row_to_float(p.data() + (r / 16) * f().group_bytes(n), static_cast<int>(r % 16), n, got.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "n " << n << " row " << r << " col " << i;
    }
  }
}

TEST_P(PackedTest, ScalarGemmMatchesTheRowDot) {
  for (int64_t n : f().sizes) {
    const int64_t R = 32, T = 3;
    const auto q = rows(R, n, 10 + n);
    const auto x = tokens(T, n, 20 + n);
    const size_t rb = dtype_row_bytes(f().dtype, n), xrb = dtype_row_bytes(act(), n);
    std::vector<std::byte> p(R / 16 * f().group_bytes(n));
    f().pack(q.data(), rb, R / 16, n, p.data());
    const auto t = terms_of(x, T, n);
    std::vector<float> y(static_cast<size_t>(T * R));
    f().scalar_gemm(p.data(), R / 16, x.data(), xrb, t.data(), T, y.data(), R, n);
    const DTypeKernels& k = kernels_for(scalar_kernel_table(), f().dtype);
    for (int64_t tk = 0; tk < T; ++tk) {
      for (int64_t r = 0; r < R; ++r) {
        const float want = k.vec_dot(q.data() + r * rb, x.data() + tk * xrb, n);
        EXPECT_NEAR(y[tk * R + r], want, 1e-5 * (1 + std::fabs(want)) * std::sqrt(static_cast<double>(n)))
            << "n " << n << " row " << r << " token " << tk;
      }
    }
  }
}

// The AVX2 kernel of a layout (null where there is none: AVX2 keeps those rows in GGUF layout).
Q4_0x16GemmFn avx2_gemm_of(DType d) {
  switch (d) {
    case DType::kQ4_0: return avx2::q4_0x16_q8_0_gemm;
    case DType::kQ8_0: return avx2::q8_0x16_q8_0_gemm;
    case DType::kIQ4_NL: return avx2::iq4_nlx16_q8_0_gemm;
    case DType::kQ4_1: return avx2::q4_1x16_q8_0_gemm;
    case DType::kQ5_0: return avx2::q5_0x16_q8_0_gemm;
    case DType::kQ5_1: return avx2::q5_1x16_q8_0_gemm;
    case DType::kQ8_0_2of4: return avx2::q8_0_2of4x16_q8_0_gemm;
    case DType::kF16: return avx2::f16x16_f32_gemm;
    case DType::kF16_2of4: return avx2::f16_2of4x16_f32_gemm;
    case DType::kQ4_K: return avx2::q4_kx16_q8_k_gemm;
    case DType::kQ2_K: return avx2::q2_kx16_q8_k_gemm;
    case DType::kQ6_K: return avx2::q6_kx16_q8_k_gemm;
    default: return nullptr;
  }
}

// `gemm` against the scalar reference, bit for bit, for every token count up to 19 and every
// size, writing nothing outside its outputs; with `in_range`, activation quants in [-127, 127]
// only (the AVX2 kernels' precondition, avx2_packed.h). Weights are any bytes either way.
void expect_bit_identical(const PackedTest& test, const Format& f, Q4_0x16GemmFn gemm,
                          bool in_range) {
  for (int64_t n : f.sizes) {
    const int64_t R = 48, T = 19, stride = R + 5;
    const auto q = test.rows(R, n, 30 + n);
    const auto x = test.tokens(T, n, 40 + n, in_range);
    const size_t rb = dtype_row_bytes(f.dtype, n), xrb = dtype_row_bytes(test.act(), n);
    std::vector<std::byte> p(R / 16 * f.group_bytes(n));
    f.pack(q.data(), rb, R / 16, n, p.data());
    const auto t = test.terms_of(x, T, n);
    std::vector<float> want(static_cast<size_t>(T * stride), -7.0f);
    f.scalar_gemm(p.data(), R / 16, x.data(), xrb, t.data(), T, want.data(), stride, n);
    for (int64_t nt = 1; nt <= T; ++nt) {
      std::vector<float> got(static_cast<size_t>(T * stride), -7.0f);
      gemm(p.data(), R / 16, x.data(), xrb, t.data(), nt, got.data(), stride, n);
      for (int64_t tk = 0; tk < T; ++tk) {
        for (int64_t r = 0; r < stride; ++r) {
          const float g = got[tk * stride + r];
          if (tk < nt && r < R) {
            ASSERT_EQ(bits_of(g), bits_of(want[tk * stride + r])) << "n " << n << " tokens " << nt << " t " << tk << " r " << r;
          } else {
            ASSERT_EQ(g, -7.0f) << "wrote outside its outputs: n " << n << " tokens " << nt;
          }
        }
      }
    }
  }
}

TEST_P(PackedTest, SimdGemmIsBitIdenticalToTheReference) {
  if (!cpu_features().has_avx512_set() || (f().needs_vbmi && !cpu_features().avx512_vbmi)) {
    GTEST_SKIP() << "CPU lacks the kernel's set (has: " << cpu_flags_string() << ")";
  }
  expect_bit_identical(*this, f(), f().avx512_gemm, false);
}

TEST_P(PackedTest, Avx2GemmIsBitIdenticalToTheReference) {
  if (avx2_gemm_of(f().dtype) == nullptr) GTEST_SKIP() << "no AVX2 kernel for " << f().name;
  if (!cpu_features().has_avx2_set()) GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
  expect_bit_identical(*this, f(), avx2_gemm_of(f().dtype), true);
}

TEST_P(PackedTest, MatmulOnPackedMatrix) {
  ThreadPool pool(3);
  const int64_t n = dtype_info(f().dtype).block_size == 256 ? 512 : 96;
  for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
    for (int64_t R : {16, 37, 64}) {
      const int64_t T = 11;
      const auto q = rows(R, n, 50 + R);
      const MatrixRef m{f().dtype, q.data(), R, n, dtype_row_bytes(f().dtype, n)};
      ASSERT_EQ(preferred_layout(scalar_kernel_table(), m), f().layout);
      std::vector<std::byte> p(matrix_bytes(m, f().layout));
      const MatrixRef packed = pack_matrix(m, f().layout, p.data());
      EXPECT_EQ(packed.bytes(), p.size());
      // Packing split over a pool writes the same bytes (groups and tail rows).
      std::vector<std::byte> p_pool(p.size());
      pack_matrix(m, f().layout, p_pool.data(), &pool);
      EXPECT_EQ(std::memcmp(p_pool.data(), p.data(), p.size()), 0) << "R " << R;
      const auto x = normal(static_cast<size_t>(T * n), 7);
      std::vector<float> y_rows(static_cast<size_t>(T * R)), y_packed(y_rows.size()), y_pool(y_rows.size());
      matmul(*table, m, x.data(), T, y_rows.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_packed.data(), nullptr);
      matmul(*table, packed, x.data(), T, y_pool.data(), &pool);
      for (size_t i = 0; i < y_rows.size(); ++i) {
        EXPECT_EQ(bits_of(y_pool[i]), bits_of(y_packed[i]));
        EXPECT_NEAR(y_packed[i], y_rows[i], 1e-3 * (1 + std::fabs(y_rows[i]))) << "R " << R << " i " << i;
      }
      // One token alone gets the same bits as inside the batch (decode == prefill).
      std::vector<float> y_one(static_cast<size_t>(R));
      matmul(*table, packed, x.data() + 5 * n, 1, y_one.data(), &pool);
      for (int64_t r = 0; r < R; ++r) EXPECT_EQ(bits_of(y_one[r]), bits_of(y_packed[5 * R + r]));
      std::vector<float> want(n), got(n);
      for (int64_t r = 0; r < R; ++r) {
        dequantize_row(m, r, want.data());
        dequantize_row(packed, r, got.data());
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(bits_of(got[i]), bits_of(want[i])) << "R " << R << " row " << r;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, PackedTest, ::testing::ValuesIn(kFormats),
                         [](const ::testing::TestParamInfo<Format>& p) { return p.param.name; });

// Several matrices on one input in one parallel region give what separate matmuls give, bit for
// bit, packed (tails included) or not (the fallback), for one token and several.
TEST(PackedMatmul, SharedInputIsSeparateMatmuls) {
  ThreadPool pool(3);
  const int64_t n = 128;
  const int64_t row_counts[] = {48, 21, 16};
  std::vector<std::vector<std::byte>> data, packed;
  std::vector<MatrixRef> plain, pk;
  for (int i = 0; i < 3; ++i) {
    const auto w = normal(static_cast<size_t>(row_counts[i] * n), 90 + i);
    data.emplace_back(dtype_row_bytes(DType::kQ4_0, row_counts[i] * n));
    kernels_for(DType::kQ4_0).from_float(w.data(), data.back().data(), row_counts[i] * n);
    plain.push_back(MatrixRef{DType::kQ4_0, data.back().data(), row_counts[i], n, dtype_row_bytes(DType::kQ4_0, n)});
    packed.emplace_back(matrix_bytes(plain.back(), MatrixLayout::kQ4_0x16));
    pk.push_back(pack_matrix(plain.back(), MatrixLayout::kQ4_0x16, packed.back().data()));
  }
  for (int64_t T : {1, 5}) {
    const auto x = normal(static_cast<size_t>(T * n), 3 + T);
    for (const auto* set : {&plain, &pk}) {
      std::vector<std::vector<float>> sep(3), together(3);
      std::vector<float*> outs;
      for (int i = 0; i < 3; ++i) {
        sep[i].resize(static_cast<size_t>(T * row_counts[i]));
        together[i].assign(static_cast<size_t>(T * row_counts[i]), -7.0f);
        matmul((*set)[i], x.data(), T, sep[i].data(), &pool);
        outs.push_back(together[i].data());
      }
      matmul_shared_input(*set, x.data(), T, outs, &pool);
      for (int i = 0; i < 3; ++i) {
        for (size_t j = 0; j < sep[i].size(); ++j) ASSERT_EQ(bits_of(together[i][j]), bits_of(sep[i][j])) << i << " " << j;
      }
    }
  }
}

TEST(PackedMatmul, PreferredLayout) {
  const KernelTable& s = scalar_kernel_table();
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ4_0, nullptr, 15, 64, 36}), MatrixLayout::kRows);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ4_0, nullptr, 64, 64, 36}), MatrixLayout::kQ4_0x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ8_0, nullptr, 64, 64, 68}), MatrixLayout::kQ8_0x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ4_K, nullptr, 64, 256, 144}), MatrixLayout::kQ4_Kx16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kF16, nullptr, 64, 64, 128}), MatrixLayout::kF16x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kIQ4_NL, nullptr, 64, 64, 36}), MatrixLayout::kIQ4_NLx16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ4_1, nullptr, 64, 64, 40}), MatrixLayout::kQ4_1x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ5_0, nullptr, 64, 64, 44}), MatrixLayout::kQ5_0x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ5_1, nullptr, 64, 64, 48}), MatrixLayout::kQ5_1x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ2_K, nullptr, 64, 256, 84}), MatrixLayout::kQ2_Kx16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ6_K, nullptr, 64, 256, 210}), MatrixLayout::kQ6_Kx16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kF16_2of4, nullptr, 64, 64, 72}), MatrixLayout::kF16_2of4x16);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kF32, nullptr, 64, 64, 256}), MatrixLayout::kRows);
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ8_0_2of4, nullptr, 64, 64, 44}), MatrixLayout::kQ8_0_2of4x16);
  // The AVX-512 gather kernel needs VBMI: an AVX-512 table without it keeps 2:4 rows.
  const std::string isa = kernel_table().isa;
  if (isa == "avx2") {  // a layout has its AVX2 kernel or none (the rows' vec_dots stay)
    const KernelTable& k = kernel_table();
    EXPECT_EQ(k.q8_0_2of4x16_gemm, avx2_gemm_of(DType::kQ8_0_2of4));
    EXPECT_EQ(k.q4_0x16_gemm, avx2_gemm_of(DType::kQ4_0));
    EXPECT_EQ(k.q8_0x16_gemm, avx2_gemm_of(DType::kQ8_0));
    EXPECT_EQ(k.iq4_nlx16_gemm, avx2_gemm_of(DType::kIQ4_NL));
    EXPECT_EQ(k.q4_1x16_gemm, avx2_gemm_of(DType::kQ4_1));
    EXPECT_EQ(k.q5_0x16_gemm, avx2_gemm_of(DType::kQ5_0));
    EXPECT_EQ(k.q5_1x16_gemm, avx2_gemm_of(DType::kQ5_1));
    EXPECT_EQ(k.f16x16_gemm, avx2_gemm_of(DType::kF16));
    EXPECT_EQ(k.f16_2of4x16_gemm, avx2_gemm_of(DType::kF16_2of4));
    EXPECT_EQ(k.q4_kx16_gemm, avx2_gemm_of(DType::kQ4_K));
    EXPECT_EQ(k.q2_kx16_gemm, avx2_gemm_of(DType::kQ2_K));
    EXPECT_EQ(k.q6_kx16_gemm, avx2_gemm_of(DType::kQ6_K));
  }
  if (isa == "avx512") {
    EXPECT_EQ(kernel_table().q8_0_2of4x16_gemm, cpu_features().avx512_vbmi ? avx512vbmi::q8_0_2of4x16_q8_0_gemm
                                                                          : avx2::q8_0_2of4x16_q8_0_gemm);
  }
  KernelTable no_kernel = s;
  no_kernel.q4_0x16_gemm = nullptr;
  EXPECT_EQ(preferred_layout(no_kernel, MatrixRef{DType::kQ4_0, nullptr, 64, 64, 36}), MatrixLayout::kRows);
  // An already packed matrix stays as it is.
  EXPECT_EQ(preferred_layout(s, MatrixRef{DType::kQ4_0, nullptr, 64, 64, 36, MatrixLayout::kQ4_0x16}),
            MatrixLayout::kRows);
}

}  // namespace packed_test
}  // namespace tessera::kernels
