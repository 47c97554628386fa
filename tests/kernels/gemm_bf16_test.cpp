// The bf16 GEMM (gemm_bf16.h): the scalar row against the definition written out element by
// element (bit for bit) and against a double product of the unrounded inputs (within bf16's
// rounding), every SIMD row against the scalar one bit for bit (forms, odd shapes and tails, f32
// or bf16 operands, values small enough to make subnormal sums), and the same bits for any thread
// count and buffer offset.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/gemm_bf16.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace gemm_bf16_test {

std::vector<float> random_values(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng) * scale;
  return v;
}

struct Row {
  std::string name;
  GemmBf16Kernel kernel;
};

std::vector<Row> rows_here() {
  std::vector<Row> rows = {{"scalar", scalar_gemm_bf16_kernel()}};
  if (cpu_features().has_avx512_set() && cpu_features().avx512_bf16) {
    rows.push_back({"avx512_bf16", avx512bf16_gemm_bf16_kernel()});
  }
  return rows;
}

enum class Form { kForward, kBackwardData, kBackwardWeight };

struct Case {
  Form form;
  int64_t m, n, k;
  bool b_bf16 = false;  // B given as bf16 bits (the trainer's weight copy)
  Bf16Operand a(const float* buf) const {
    return form == Form::kBackwardWeight ? Bf16Operand{buf, nullptr, 1, m}
                                         : Bf16Operand{buf, nullptr, k, 1};
  }
  Bf16Operand b(const float* buf, const uint16_t* bits) const {
    Bf16Operand o = form == Form::kForward ? Bf16Operand{buf, nullptr, 1, k}
                                           : Bf16Operand{buf, nullptr, n, 1};
    if (b_bf16) o.f32 = nullptr, o.bf16 = bits;
    return o;
  }
};

float at(const Bf16Operand& o, int64_t r, int64_t c) {
  const int64_t i = r * o.row_stride + c * o.col_stride;
  return bf16_to_f32(o.bf16 != nullptr ? o.bf16[i] : f32_to_bf16(o.f32[i]));
}
float flush(float x) { return std::fabs(x) < 1.17549435e-38f ? std::copysign(0.0f, x) : x; }

// gemm_bf16.h's definition, element by element.
std::vector<float> definition(const Case& cs, const Bf16Operand& a, const Bf16Operand& b,
                              const float* c0) {
  std::vector<float> c(static_cast<size_t>(cs.m * cs.n));
  for (int64_t i = 0; i < cs.m; ++i) {
    for (int64_t j = 0; j < cs.n; ++j) {
      float s = c0 != nullptr ? flush(c0[i * cs.n + j]) : 0.0f;
      for (int64_t q = 0; 2 * q < cs.k; ++q) {
        const bool odd = 2 * q + 1 < cs.k;
        s = flush(std::fma(odd ? flush(at(a, i, 2 * q + 1)) : 0.0f,
                           odd ? flush(at(b, 2 * q + 1, j)) : 0.0f, s));
        s = flush(std::fma(flush(at(a, i, 2 * q)), flush(at(b, 2 * q, j)), s));
      }
      c[static_cast<size_t>(i * cs.n + j)] = s;
    }
  }
  return c;
}

const int64_t kSizes[][3] = {{1, 1, 1},   {1, 7, 3},    {5, 1, 2},      {13, 17, 11},
                             {12, 32, 1}, {37, 65, 29}, {97, 131, 300}, {150, 70, 513},
                             {2, 300, 257}, {25, 40, 1025}};

TEST(GemmBf16, ScalarRowIsTheDefinitionAndNearTheF32Product) {
  const GemmBf16Kernel kr = scalar_gemm_bf16_kernel();
  for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
    for (const auto& sz : kSizes) {
      for (bool b_bf16 : {false, true}) {
        const Case cs{form, sz[0], sz[1], sz[2], b_bf16};
        const auto a = random_values(static_cast<size_t>(cs.m * cs.k), 1);
        const auto b = random_values(static_cast<size_t>(cs.k * cs.n), 2);
        std::vector<uint16_t> bbits(b.size());
        round_to_bf16(b.data(), static_cast<int64_t>(b.size()), bbits.data());
        const auto c0 = random_values(static_cast<size_t>(cs.m * cs.n), 3);
        for (bool accumulate : {false, true}) {
          std::vector<float> c = accumulate ? c0 : std::vector<float>(c0.size(), 123.0f);
          const Bf16Operand oa = cs.a(a.data()), ob = cs.b(b.data(), bbits.data());
          gemm_bf16(cs.m, cs.n, cs.k, oa, ob, c.data(), cs.n, accumulate, nullptr, &kr);
          const auto want = definition(cs, oa, ob, accumulate ? c0.data() : nullptr);
          ASSERT_EQ(0, std::memcmp(c.data(), want.data(), c.size() * sizeof(float)))
              << "form " << static_cast<int>(form) << " m=" << cs.m << " n=" << cs.n
              << " k=" << cs.k << " accumulate=" << accumulate << " b_bf16=" << b_bf16;
          // Against the exact product of the f32 inputs: each input moves by at most 2^-9 of
          // itself, each term (|a b| <= 1) by ~2^-8, the f32 sum by k ulps.
          const double tol = (std::ldexp(1.0, -8) + 1e-6) * static_cast<double>(cs.k) + 1e-6;
          for (int64_t i = 0; i < cs.m; ++i) {
            for (int64_t j = 0; j < cs.n; ++j) {
              double s = accumulate ? c0[static_cast<size_t>(i * cs.n + j)] : 0.0;
              for (int64_t p = 0; p < cs.k; ++p) {
                const Bf16Operand fa = cs.a(a.data());
                const Bf16Operand fb = Case{form, cs.m, cs.n, cs.k, false}.b(b.data(), nullptr);
                s += static_cast<double>(fa.f32[i * fa.row_stride + p * fa.col_stride]) *
                     fb.f32[p * fb.row_stride + j * fb.col_stride];
              }
              ASSERT_NEAR(c[static_cast<size_t>(i * cs.n + j)], s, tol);
            }
          }
        }
      }
    }
  }
}

TEST(GemmBf16, SimdRowsAreBitIdenticalToTheScalarOne) {
  const auto rows = rows_here();
  if (rows.size() == 1) GTEST_SKIP() << "this CPU (or TESSERA_FORCE_SCALAR) has no bf16 SIMD row";
  for (float scale : {1.0f, 1e-19f}) {  // 1e-19: products and sums near and below FLT_MIN
    for (const auto& sz : kSizes) {
      for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
        for (bool b_bf16 : {false, true}) {
          const Case cs{form, sz[0], sz[1], sz[2], b_bf16};
          const auto a = random_values(static_cast<size_t>(cs.m * cs.k), 4, scale);
          const auto b = random_values(static_cast<size_t>(cs.k * cs.n), 5, scale);
          std::vector<uint16_t> bbits(b.size());
          round_to_bf16(b.data(), static_cast<int64_t>(b.size()), bbits.data());
          const auto c0 = random_values(static_cast<size_t>(cs.m * cs.n), 6, scale * scale);
          std::vector<float> want = c0;
          gemm_bf16(cs.m, cs.n, cs.k, cs.a(a.data()), cs.b(b.data(), bbits.data()), want.data(),
                    cs.n, true, nullptr, &rows[0].kernel);
          for (size_t r = 1; r < rows.size(); ++r) {
            std::vector<float> got = c0;
            gemm_bf16(cs.m, cs.n, cs.k, cs.a(a.data()), cs.b(b.data(), bbits.data()), got.data(),
                      cs.n, true, nullptr, &rows[r].kernel);
            ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
                << rows[r].name << " scale " << scale << " form " << static_cast<int>(form)
                << " m=" << cs.m << " n=" << cs.n << " k=" << cs.k << " b_bf16=" << b_bf16;
          }
        }
      }
    }
  }
}

TEST(GemmBf16, SameBitsForAnyThreadCountAndBufferOffset) {
  const int64_t m = 203, n = 171, k = 389;
  for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
    const Case cs{form, m, n, k};
    const auto a = random_values(static_cast<size_t>(m * k), 7);
    const auto b = random_values(static_cast<size_t>(k * n), 8);
    const auto c0 = random_values(static_cast<size_t>(m * n), 9);
    std::vector<float> want = c0;
    gemm_bf16(m, n, k, cs.a(a.data()), cs.b(b.data(), nullptr), want.data(), n, true, nullptr);
    for (int threads : {2, 3}) {
      ThreadPool pool(threads);
      const size_t shift = static_cast<size_t>(1 + threads);
      std::vector<float> as(a.size() + shift), bs(b.size() + shift), cbuf(c0.size() + shift);
      std::copy(a.begin(), a.end(), as.begin() + static_cast<ptrdiff_t>(shift));
      std::copy(b.begin(), b.end(), bs.begin() + static_cast<ptrdiff_t>(shift));
      std::copy(c0.begin(), c0.end(), cbuf.begin() + static_cast<ptrdiff_t>(shift));
      gemm_bf16(m, n, k, cs.a(as.data() + shift), cs.b(bs.data() + shift, nullptr),
                cbuf.data() + shift, n, true, &pool);
      ASSERT_EQ(0, std::memcmp(cbuf.data() + shift, want.data(), want.size() * sizeof(float)))
          << "form " << static_cast<int>(form) << " threads " << threads;
    }
  }
}

TEST(GemmBf16, RoundsInputsAndRespectsTheRowStride) {
  // 1 + 2^-9 rounds down to 1 in bf16 (a quarter of its ulp); 1 + 3 * 2^-9 rounds up to 1 + 2^-7.
  const float a[] = {1.0f + 0x1p-9f, 1.0f + 3 * 0x1p-9f};  // [1, 2]
  const float b[] = {1.0f, 1.0f};                           // [2, 1]
  std::vector<float> c(3, 7.0f);
  gemm_bf16(1, 1, 2, {a, nullptr, 2, 1}, {b, nullptr, 1, 1}, c.data(), 3, false, nullptr);
  EXPECT_EQ(c[0], 2.0f + 0x1p-7f);
  EXPECT_EQ(c[1], 7.0f);
  gemm_bf16(1, 1, 2, {a, nullptr, 2, 1}, {b, nullptr, 1, 1}, c.data(), 3, true, nullptr);
  EXPECT_EQ(c[0], 4.0f + 0x1p-6f);
  gemm_bf16(1, 1, 0, {a, nullptr, 2, 1}, {b, nullptr, 1, 1}, c.data(), 3, false, nullptr);
  EXPECT_EQ(c[0], 0.0f);
  EXPECT_EQ(c[2], 7.0f);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-9f), f32_to_bf16(1.0f));
}

}  // namespace gemm_bf16_test
}  // namespace tessera::kernels
