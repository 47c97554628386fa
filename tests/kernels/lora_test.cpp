// lora_shrink / lora_expand: the scalar table and the active (SIMD) table against a plain f64
// reference, for ranks 1 to 256, odd widths, one and many rows, with and without a thread pool.
#include "tessera/kernels/lora.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace lora_test {

struct Case {
  int64_t rank, n_in, n_out, rows;
};

TEST(Lora, ShrinkAndExpandMatchPlainReference) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  for (const Case c : {Case{1, 7, 5, 1}, Case{4, 64, 96, 3}, Case{16, 333, 130, 8},
                       Case{64, 512, 512, 5}, Case{256, 300, 70, 2}}) {
    std::vector<float> a(c.rank * c.n_in), b(c.n_out * c.rank), x(c.rows * c.n_in), y0(c.rows * c.n_out);
    for (auto* v : {&a, &b, &x, &y0}) {
      for (float& f : *v) f = nd(rng);
    }
    const float scale = 0.375f;
    // Reference in f64.
    std::vector<double> t_ref(c.rows * c.rank), y_ref(y0.begin(), y0.end());
    for (int64_t r = 0; r < c.rows; ++r) {
      for (int64_t k = 0; k < c.rank; ++k) {
        double s = 0.0;
        for (int64_t i = 0; i < c.n_in; ++i) s += double(a[k * c.n_in + i]) * x[r * c.n_in + i];
        t_ref[r * c.rank + k] = s;
      }
      for (int64_t o = 0; o < c.n_out; ++o) {
        double s = 0.0;
        for (int64_t k = 0; k < c.rank; ++k) s += double(b[o * c.rank + k]) * t_ref[r * c.rank + k];
        y_ref[r * c.n_out + o] += scale * s;
      }
    }
    for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
      for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
        std::vector<float> t(c.rows * c.rank), y = y0;
        lora_shrink(*table, a.data(), c.rank, c.n_in, x.data(), c.n_in, c.rows, t.data(), p);
        for (size_t i = 0; i < t.size(); ++i) {
          EXPECT_NEAR(t[i], t_ref[i], 1e-4 * std::sqrt(double(c.n_in)) * 4) << table->isa << " rank " << c.rank;
        }
        // Expand from the reference t, so each product is checked on its own.
        std::vector<float> tf(t_ref.begin(), t_ref.end());
        std::vector<float> bt(b.size());
        for (int64_t o = 0; o < c.n_out; ++o) {
          for (int64_t k = 0; k < c.rank; ++k) bt[k * c.n_out + o] = b[o * c.rank + k];
        }
        lora_expand(*table, bt.data(), c.rank, c.n_out, tf.data(), c.rows, scale, y.data(), c.n_out, p);
        for (size_t i = 0; i < y.size(); ++i) {
          EXPECT_NEAR(y[i], y_ref[i], 1e-4 * std::sqrt(double(c.rank)) * 40) << table->isa << " rank " << c.rank;
        }
      }
    }
  }
}

// A and Bt held in f16/bf16: the same results as f32 buffers holding the same (widened) values;
// the expand's bits equal (it widens exactly, then runs the same axpys), the shrink's within the
// dtype's dot rounding.
TEST(Lora, HalfPrecisionStorageMatchesItsF32Values) {
  std::mt19937 rng(13);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  ThreadPool pool(2);
  for (const DType dtype : {DType::kF16, DType::kBF16}) {
    const auto& k = kernels_for(scalar_kernel_table(), dtype);
    for (const Case c : {Case{1, 7, 5, 1}, Case{16, 333, 1030, 8}, Case{64, 512, 700, 3}}) {
      std::vector<float> a(c.rank * c.n_in), bt(c.rank * c.n_out), x(c.rows * c.n_in), y0(c.rows * c.n_out);
      for (auto* v : {&a, &bt, &x, &y0}) {
        for (float& f : *v) f = nd(rng);
      }
      std::vector<uint16_t> ah(a.size()), bth(bt.size());
      k.from_float(a.data(), ah.data(), static_cast<int64_t>(a.size()));
      k.from_float(bt.data(), bth.data(), static_cast<int64_t>(bt.size()));
      k.to_float(ah.data(), a.data(), static_cast<int64_t>(a.size()));  // the values held
      k.to_float(bth.data(), bt.data(), static_cast<int64_t>(bt.size()));
      for (const KernelTable* table : {&scalar_kernel_table(), &kernel_table()}) {
        for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
          std::vector<float> t32(c.rows * c.rank), th(c.rows * c.rank);
          lora_shrink(*table, a.data(), c.rank, c.n_in, x.data(), c.n_in, c.rows, t32.data(), p);
          lora_shrink(*table, ah.data(), dtype, c.rank, c.n_in, x.data(), c.n_in, c.rows, th.data(), p);
          for (size_t i = 0; i < t32.size(); ++i) {
            EXPECT_NEAR(th[i], t32[i], 1e-4 * std::sqrt(double(c.n_in)) * 4) << dtype_name(dtype) << " " << table->isa;
          }
          std::vector<float> y32 = y0, yh = y0;
          lora_expand(*table, bt.data(), c.rank, c.n_out, t32.data(), c.rows, 0.5f, y32.data(), c.n_out, p);
          lora_expand(*table, bth.data(), dtype, c.rank, c.n_out, t32.data(), c.rows, 0.5f, yh.data(), c.n_out, p);
          EXPECT_EQ(yh, y32) << dtype_name(dtype) << " " << table->isa << " rank " << c.rank;
        }
      }
    }
  }
}

TEST(Lora, AxpyRowsGiveTheScalarBits) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {0, 1, 7, 16, 33, 512, 1001}) {
    std::vector<float> x(n), y0(n);
    for (float& f : x) f = nd(rng);
    for (float& f : y0) f = nd(rng);
    std::vector<float> ys = y0, yv = y0;
    scalar_kernel_table().axpy(0.37f, x.data(), ys.data(), n);
    kernel_table().axpy(0.37f, x.data(), yv.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      const float want = y0[i] + 0.37f * x[i];
      EXPECT_EQ(ys[i], want) << "scalar, n " << n << " i " << i;
      EXPECT_EQ(yv[i], ys[i]) << kernel_table().isa << ", n " << n << " i " << i;
    }
  }
}

TEST(FixedDot, SameBitsWhateverTheAddresses) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> a(1100), b(1100);
  for (float& f : a) f = nd(rng);
  for (float& f : b) f = nd(rng);
  for (const KernelTable* t : {&scalar_kernel_table(), &kernel_table()}) {
    for (int64_t n : {5, 64, 333, 1000}) {
      const float want = t->fixed_dot(a.data(), b.data(), n);
      double ref = 0.0;
      for (int64_t i = 0; i < n; ++i) ref += double(a[i]) * b[i];
      EXPECT_NEAR(want, ref, 1e-4 * n) << t->isa;
      for (int shift = 1; shift < 16; ++shift) {  // the same values at every alignment
        std::vector<float> a2(n + shift), b2(n + 2 * shift);
        std::copy_n(a.begin(), n, a2.begin() + shift);
        std::copy_n(b.begin(), n, b2.begin() + 2 * shift);
        EXPECT_EQ(t->fixed_dot(a2.data() + shift, b2.data() + 2 * shift, n), want) << t->isa << " n " << n;
      }
    }
  }
}

}  // namespace lora_test
}  // namespace tessera::kernels
