// The f32 GEMM (gemm_f32.h): every micro-kernel row against a plain double reference on odd
// shapes (primes, ones, sizes off the block multiples), every SIMD row against the scalar one bit
// for bit (all are the same fma chains), the three strided forms the trainer uses, accumulation,
// and bit-identical results over thread counts and buffer offsets.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "tessera/base/thread_pool.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/gemm_f32.h"
#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace gemm_f32_test {

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

struct Row {
  std::string name;
  GemmF32Kernel kernel;
};

std::vector<Row> rows_here() {
  std::vector<Row> rows = {{"scalar", scalar_gemm_f32_kernel()}};
  if (cpu_features().has_avx2_set()) rows.push_back({"avx2", avx2_gemm_f32_kernel()});
  if (cpu_features().has_avx512_set()) rows.push_back({"avx512", avx512_gemm_f32_kernel()});
  return rows;
}

// The three forms, by which operand is transposed: y = x W^T, dx += dy W, dW += dy^T x.
enum class Form { kForward, kBackwardData, kBackwardWeight };

// One product of shape (m, n, k) in `form`, with inputs `a_buf` and `b_buf` laid out as the
// trainer has them, run through gemm_f32; and its double reference.
struct Case {
  Form form;
  int64_t m, n, k;
  StridedMatrix a(const float* buf) const {
    // kForward/kBackwardData: A is [m, k] row-major; kBackwardWeight: A(i, p) = buf[p * m + i].
    return form == Form::kBackwardWeight ? StridedMatrix{buf, 1, m} : StridedMatrix{buf, k, 1};
  }
  StridedMatrix b(const float* buf) const {
    // kForward: B(p, j) = W[j, p] (W is [n, k]); otherwise B is [k, n] row-major.
    return form == Form::kForward ? StridedMatrix{buf, 1, k} : StridedMatrix{buf, n, 1};
  }
  std::vector<double> reference(const float* abuf, const float* bbuf, const float* c0) const {
    const StridedMatrix sa = a(abuf), sb = b(bbuf);
    std::vector<double> c(static_cast<size_t>(m * n));
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double s = c0 != nullptr ? c0[i * n + j] : 0.0;
        for (int64_t p = 0; p < k; ++p) {
          s += static_cast<double>(sa.data[i * sa.row_stride + p * sa.col_stride]) *
               sb.data[p * sb.row_stride + j * sb.col_stride];
        }
        c[static_cast<size_t>(i * n + j)] = s;
      }
    }
    return c;
  }
};

const int64_t kSizes[][3] = {{1, 1, 1},   {1, 7, 3},    {5, 1, 2},     {13, 17, 11},
                             {12, 32, 1}, {37, 65, 29}, {97, 131, 300}, {150, 70, 513},
                             {2, 300, 257}};

TEST(GemmF32, EveryRowMatchesADoubleReferenceInEveryForm) {
  for (const Row& row : rows_here()) {
    for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
      for (const auto& sz : kSizes) {
        const Case cs{form, sz[0], sz[1], sz[2]};
        const auto a = random_values(static_cast<size_t>(cs.m * cs.k), 1);
        const auto b = random_values(static_cast<size_t>(cs.k * cs.n), 2);
        const auto c0 = random_values(static_cast<size_t>(cs.m * cs.n), 3);
        for (bool accumulate : {false, true}) {
          std::vector<float> c = accumulate ? c0 : std::vector<float>(c0.size(), 123.0f);
          gemm_f32(cs.m, cs.n, cs.k, cs.a(a.data()), cs.b(b.data()), c.data(), cs.n, accumulate,
                   nullptr, &row.kernel);
          const auto want = cs.reference(a.data(), b.data(), accumulate ? c0.data() : nullptr);
          // Each term below 1 in size: a chain of k fma roundings stays within k ulps of ~k.
          const double tol = 1e-6 * static_cast<double>(cs.k + 4);
          for (size_t e = 0; e < c.size(); ++e) {
            ASSERT_NEAR(c[e], want[e], tol)
                << row.name << " form " << static_cast<int>(form) << " m=" << cs.m << " n=" << cs.n
                << " k=" << cs.k << " accumulate=" << accumulate << " element " << e;
          }
        }
      }
    }
  }
}

TEST(GemmF32, SimdRowsAreBitIdenticalToTheScalarOne) {
  const auto rows = rows_here();
  if (rows.size() == 1) GTEST_SKIP() << "this CPU has no SIMD row";
  for (const auto& sz : kSizes) {
    for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
      const Case cs{form, sz[0], sz[1], sz[2]};
      const auto a = random_values(static_cast<size_t>(cs.m * cs.k), 4);
      const auto b = random_values(static_cast<size_t>(cs.k * cs.n), 5);
      const auto c0 = random_values(static_cast<size_t>(cs.m * cs.n), 6);
      std::vector<float> want = c0;
      gemm_f32(cs.m, cs.n, cs.k, cs.a(a.data()), cs.b(b.data()), want.data(), cs.n, true, nullptr,
               &rows[0].kernel);
      for (size_t r = 1; r < rows.size(); ++r) {
        std::vector<float> got = c0;
        gemm_f32(cs.m, cs.n, cs.k, cs.a(a.data()), cs.b(b.data()), got.data(), cs.n, true, nullptr,
                 &rows[r].kernel);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
            << rows[r].name << " m=" << cs.m << " n=" << cs.n << " k=" << cs.k;
      }
    }
  }
}

TEST(GemmF32, SameBitsForAnyThreadCountAndBufferOffset) {
  const int64_t m = 203, n = 171, k = 389;  // big enough to split over the pool
  for (Form form : {Form::kForward, Form::kBackwardData, Form::kBackwardWeight}) {
    const Case cs{form, m, n, k};
    const auto a = random_values(static_cast<size_t>(m * k), 7);
    const auto b = random_values(static_cast<size_t>(k * n), 8);
    const auto c0 = random_values(static_cast<size_t>(m * n), 9);
    std::vector<float> want = c0;
    gemm_f32(m, n, k, cs.a(a.data()), cs.b(b.data()), want.data(), n, true, nullptr);
    for (int threads : {2, 3, 4}) {
      ThreadPool pool(threads);
      for (int repeat = 0; repeat < 2; ++repeat) {
        // Shifted copies: the inputs and output at other alignments.
        const size_t shift = static_cast<size_t>(1 + repeat + threads);
        std::vector<float> as(a.size() + shift), bs(b.size() + shift), cs_buf(c0.size() + shift);
        std::copy(a.begin(), a.end(), as.begin() + static_cast<ptrdiff_t>(shift));
        std::copy(b.begin(), b.end(), bs.begin() + static_cast<ptrdiff_t>(shift));
        std::copy(c0.begin(), c0.end(), cs_buf.begin() + static_cast<ptrdiff_t>(shift));
        gemm_f32(m, n, k, cs.a(as.data() + shift), cs.b(bs.data() + shift),
                 cs_buf.data() + shift, n, true, &pool);
        ASSERT_EQ(0, std::memcmp(cs_buf.data() + shift, want.data(), want.size() * sizeof(float)))
            << "form " << static_cast<int>(form) << " threads " << threads;
      }
    }
  }
}

TEST(GemmF32, OverwritesOrAccumulatesAndRespectsTheRowStride) {
  // C is a 3 x 2 window of a 3 x 5 buffer: the columns outside it stay untouched.
  const float a[] = {1, 2, 3, 4, 5, 6};          // [3, 2]
  const float b[] = {1, 0, 0, 1};                // [2, 2]: identity
  std::vector<float> c(15, 7.0f);
  gemm_f32(3, 2, 2, {a, 2, 1}, {b, 2, 1}, c.data(), 5, false, nullptr);
  const float want[] = {1, 2, 7, 7, 7, 3, 4, 7, 7, 7, 5, 6, 7, 7, 7};
  for (int i = 0; i < 15; ++i) EXPECT_EQ(c[static_cast<size_t>(i)], want[i]) << i;
  gemm_f32(3, 2, 2, {a, 2, 1}, {b, 2, 1}, c.data(), 5, true, nullptr);
  EXPECT_EQ(c[0], 2.0f);
  EXPECT_EQ(c[11], 12.0f);
  EXPECT_EQ(c[2], 7.0f);
  gemm_f32(3, 2, 0, {a, 2, 1}, {b, 2, 1}, c.data(), 5, false, nullptr);  // k = 0: zeroes
  EXPECT_EQ(c[0], 0.0f);
  EXPECT_EQ(c[2], 7.0f);
}

}  // namespace gemm_f32_test
}  // namespace tessera::kernels
