// The device kernels against the CPU's scalar references on the OpenCL device (PoCL in CI):
// matmul for F32, F16, Q8_0, Q4_0, Q5_0, Q4_K and Q6_K weights (one token and tiles of several,
// shapes that are not multiples of the work-group or the token tile), rmsnorm, silu_mul, rope
// (normal and NeoX) and softmax, each within a tolerance stated beside it; and the matmul's
// refusals. The decoder step's other kernels (kv_store, attention, elementwise): device_step_test.
//
// Tolerances: device and reference both sum in f32, in different orders, so neither is exact.
// For a sum of n rounded terms the textbook bound is |fl(s) - s| <= n u sum|terms| (u = 2^-24),
// so two such sums differ by at most 2 n u sum|terms|; n counts every rounding on the way (the
// products, the block sums, the scale by d). Each check below uses that bound with its n.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device_fixture.h"
#include "tessera/base/rng.h"
#include "tessera/device/device_kernels.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/legacy_quants.h"
#include "tessera/kernels/ops.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::device {
namespace device_kernels_test {

using kernels::DType;
constexpr double kU = 0x1p-24;  // unit roundoff of f32

using device_fixture::dev;
using device_fixture::dk;
using device_fixture::download;
using device_fixture::random_floats;
using device_fixture::upload;

struct Scalar {
  void (*from_float)(const float*, void*, int64_t);
  void (*to_float)(const void*, float*, int64_t);
  float (*dot)(const void*, const float*, int64_t);
};

Scalar scalar_row(DType t) {
  namespace s = kernels::scalar;
  switch (t) {
    case DType::kF32: return {s::f32_from_float, s::f32_to_float, s::f32_dot};
    case DType::kF16: return {s::f16_from_float, s::f16_to_float, s::f16_dot};
    case DType::kQ8_0: return {s::q8_0_from_float, s::q8_0_to_float, s::q8_0_dot};
    case DType::kQ4_K: return {s::q4_k_from_float, s::q4_k_to_float, s::q4_k_dot};
    case DType::kQ6_K: return {s::q6_k_from_float, s::q6_k_to_float, s::q6_k_dot};
    case DType::kQ5_0: return {s::q5_0_from_float, s::q5_0_to_float, s::q5_0_dot};
    default: return {s::q4_0_from_float, s::q4_0_to_float, s::q4_0_dot};
  }
}

struct Shape {
  int64_t rows, cols, tokens;
};

// R rows of C weights of type t. Q4_K and Q6_K: random bytes, every one of which is a valid level,
// 6-bit or int8 scale (so every bit of the packing is exercised, more than a quantizer's output
// would), with each super-block's f16 d (and Q4_K's dmin) then set to a random value that keeps
// the weights near [-1, 1]. Other types: random floats in [-1, 1] quantized by from_float.
std::vector<std::byte> random_weights(DType t, Rng& rng, int64_t rows, int64_t cols) {
  const size_t row_bytes = kernels::dtype_row_bytes(t, cols);
  std::vector<std::byte> w(row_bytes * static_cast<size_t>(rows));
  if (t == DType::kQ4_K || t == DType::kQ6_K) {
    for (std::byte& b : w) b = static_cast<std::byte>(rng.next_u64());
    // Writes a random f16 in [lo, hi) at byte `offset` of block i.
    const size_t block_bytes = static_cast<size_t>(kernels::dtype_info(t).block_bytes);
    const auto set_f16 = [&](size_t i, size_t offset, double lo, double hi) {
      const uint16_t h = kernels::f32_to_f16(static_cast<float>(lo + (hi - lo) * rng.uniform()));
      std::memcpy(w.data() + i * block_bytes + offset, &h, sizeof(h));
    };
    for (size_t i = 0; i < w.size() / block_bytes; ++i) {
      if (t == DType::kQ4_K) {
        set_f16(i, offsetof(kernels::BlockQ4_K, d), 0.2e-3, 2e-3);     // |d sc q| <= 945 d < 2
        set_f16(i, offsetof(kernels::BlockQ4_K, dmin), 0.2e-3, 1e-2);  // dmin m <= 63 dmin < 1
      } else {
        set_f16(i, offsetof(kernels::BlockQ6_K, d), 0.5e-4, 5e-4);  // |d sc (q - 32)| <= 4096 d
      }
    }
    return w;
  }
  const std::vector<float> wf = random_floats(rng, static_cast<size_t>(rows * cols), -1, 1);
  for (int64_t r = 0; r < rows; ++r) {
    scalar_row(t).from_float(wf.data() + r * cols, w.data() + r * row_bytes, cols);
  }
  return w;
}

// Y = W X on the device against scalar *_dot per output, within 2 n u sum|w x| with n = C + C/32
// + 2 (products, per-block sums, scales, the total). Q4_K and Q6_K: both sides first decode the
// same f32 weights (the device with the reference's operations, unfused), so only the products
// and sums round differently, well within that n. Records the largest error in units of the
// bound as a test property (in the XML report).
void check_matmul(DType t, const Shape& s, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << kernels::dtype_name(t) << " R=" << s.rows << " C=" << s.cols
                                    << " T=" << s.tokens);
  Rng rng(seed);
  const Scalar ref = scalar_row(t);
  const size_t row_bytes = kernels::dtype_row_bytes(t, s.cols);
  const std::vector<std::byte> w = random_weights(t, rng, s.rows, s.cols);
  const std::vector<float> x = random_floats(rng, static_cast<size_t>(s.tokens * s.cols), -2, 2);
  Buffer wb = upload(w.data(), w.size());
  Buffer xb = upload(x);
  auto yb = dev().alloc(static_cast<size_t>(s.tokens * s.rows) * sizeof(float));
  ASSERT_TRUE(yb.is_ok());
  const DeviceMatrix m{t, &wb, s.rows, s.cols};
  const Status st = dk().matmul(m, xb, s.tokens, *yb);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const std::vector<float> y = download(*yb, static_cast<size_t>(s.tokens * s.rows));

  std::vector<float> deq(static_cast<size_t>(s.cols));
  const double n = static_cast<double>(s.cols + s.cols / 32 + 2);
  double worst = 0;
  for (int64_t r = 0; r < s.rows; ++r) {
    ref.to_float(w.data() + r * row_bytes, deq.data(), s.cols);
    for (int64_t tok = 0; tok < s.tokens; ++tok) {
      const float* xt = x.data() + tok * s.cols;
      double abs_sum = 0;
      for (int64_t c = 0; c < s.cols; ++c) abs_sum += std::fabs(double(deq[c]) * xt[c]);
      const float expect = ref.dot(w.data() + r * row_bytes, xt, s.cols);
      const float got = y[static_cast<size_t>(tok * s.rows + r)];
      const double bound = 2 * n * kU * abs_sum + 1e-30;
      const double err = std::fabs(double(got) - expect);
      worst = std::max(worst, err / bound);
      ASSERT_LE(err, bound) << "row " << r << " token " << tok << ": device " << got
                            << ", reference " << expect;
    }
  }
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst));
}

// Rows and columns that are not multiples of the work-group (64) or of 64 blocks, token counts
// around the tile (4): one token (decode), a partial tile, a full tile, tiles plus a tail.
const Shape kQuantShapes[] = {{1, 32, 1},   {67, 96, 1},   {37, 160, 3},
                              {130, 416, 4}, {19, 2080, 9}, {3, 4096, 2}};
// Float weights also take columns that are no multiple of 32.
const Shape kFloatShapes[] = {{5, 37, 1}, {66, 131, 6}};
// k-quants: one super-block (fewer 32-value pieces than work-items), two, and eleven (2,816: a
// piece count that is no multiple of the work-group).
const Shape kKQuantShapes[] = {{1, 256, 1},   {67, 256, 5},  {37, 512, 3},
                               {130, 512, 4}, {19, 2816, 9}, {3, 2816, 1}};

TEST(DeviceMatmulTest, MatchesScalarReferenceForEveryDType) {
  TS_DEVICE_OR_SKIP();
  uint64_t seed = 1;
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ5_0}) {
    ASSERT_TRUE(DeviceKernels::supports(t));
    for (const Shape& s : kQuantShapes) check_matmul(t, s, seed++);
    if (t == DType::kF32 || t == DType::kF16) {
      for (const Shape& s : kFloatShapes) check_matmul(t, s, seed++);
    }
  }
  for (DType t : {DType::kQ4_K, DType::kQ6_K}) {
    ASSERT_TRUE(DeviceKernels::supports(t));
    for (const Shape& s : kKQuantShapes) check_matmul(t, s, seed++);
  }
}

TEST(DeviceMatmulTest, RefusesWhatItCannotRun) {
  TS_DEVICE_OR_SKIP();
  Buffer w = upload(std::vector<float>(64 * 64, 1.0f));
  Buffer x = upload(std::vector<float>(64 * 4, 1.0f));
  auto y = dev().alloc(64 * 4 * sizeof(float));
  ASSERT_TRUE(y.is_ok());
  EXPECT_FALSE(DeviceKernels::supports(DType::kQ5_K));
  Status s = dk().matmul({DType::kQ5_K, &w, 1, 256}, x, 1, *y);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("q5_K"), std::string::npos) << s.message();
  EXPECT_FALSE(DeviceKernels::supports(DType::kIQ4_NL));
  EXPECT_EQ(dk().matmul({DType::kIQ4_NL, &w, 1, 32}, x, 1, *y).code(),
            ErrorCode::kInvalidArgument);
  // Columns must be whole blocks: 32 values for Q8_0, 256 for the k-quants.
  EXPECT_EQ(dk().matmul({DType::kQ8_0, &w, 2, 48}, x, 1, *y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dk().matmul({DType::kQ4_K, &w, 1, 64}, x, 1, *y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dk().matmul({DType::kQ6_K, &w, 1, 128}, x, 1, *y).code(),
            ErrorCode::kInvalidArgument);
  // Buffers too small for the shape: weights, input, output.
  EXPECT_EQ(dk().matmul({DType::kF32, &w, 65, 64}, x, 1, *y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dk().matmul({DType::kF32, &w, 64, 64}, x, 5, *y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dk().matmul({DType::kF32, &w, 64, 8}, x, 32, *y).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(dk().matmul({DType::kF32, &w, 64, 64}, x, 0, *y).code(), ErrorCode::kInvalidArgument);
}

TEST(DeviceOpsTest, RmsnormMatchesReference) {
  TS_DEVICE_OR_SKIP();
  Rng rng(11);
  for (int64_t n : {5, 64, 1001}) {
    const int64_t rows = 3;
    const auto x = random_floats(rng, static_cast<size_t>(rows * n), -3, 3);
    const auto weight = random_floats(rng, static_cast<size_t>(n), 0.5, 1.5);
    Buffer xb = upload(x);
    Buffer wb = upload(weight);
    auto out = dev().alloc(x.size() * sizeof(float));
    ASSERT_TRUE(out.is_ok());
    ASSERT_TRUE(dk().rmsnorm(xb, wb, rows, n, 1e-5f, *out).is_ok());
    // In place (out == x) too.
    ASSERT_TRUE(dk().rmsnorm(xb, wb, rows, n, 1e-5f, xb).is_ok());
    const auto got = download(*out, x.size());
    const auto got_in_place = download(xb, x.size());
    // Sum of squares: n roundings; then division, sqrt (3 ulp in OpenCL), two products.
    const double rel = 2 * (static_cast<double>(n) + 8) * kU;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> expect(static_cast<size_t>(n));
      kernels::rmsnorm(x.data() + r * n, weight.data(), n, 1e-5f, expect.data());
      for (int64_t i = 0; i < n; ++i) {
        const size_t k = static_cast<size_t>(r * n + i);
        ASSERT_NEAR(got[k], expect[i], rel * std::fabs(expect[i]) + 1e-30) << "n=" << n << " " << k;
        ASSERT_EQ(got_in_place[k], got[k]) << k;
      }
    }
  }
}

TEST(DeviceOpsTest, SiluMulMatchesReference) {
  TS_DEVICE_OR_SKIP();
  Rng rng(12);
  const int64_t n = 1001;
  const auto gate = random_floats(rng, n, -12, 12);
  const auto up = random_floats(rng, n, -2, 2);
  Buffer gb = upload(gate);
  Buffer ub = upload(up);
  ASSERT_TRUE(dk().silu_mul(gb, ub, n).is_ok());
  const auto got = download(gb, n);
  std::vector<float> expect = gate;
  kernels::scalar::silu_mul(expect.data(), up.data(), n);
  // exp within 3 ulp (OpenCL) and 1 (libm), then an add, a division and a product: 8 u each side.
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_NEAR(got[i], expect[i], 16 * kU * std::fabs(expect[i]) + 1e-30) << i;
  }
}

TEST(DeviceOpsTest, RopeMatchesReferenceBothStyles) {
  TS_DEVICE_OR_SKIP();
  Rng rng(13);
  for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
    for (int64_t head_dim : {6, 64}) {
      const int64_t n_heads = 5;
      const int64_t positions[] = {0, 7, 1000};
      const int64_t n_tokens = 3;
      std::vector<float> inv_freq(static_cast<size_t>(head_dim / 2));
      for (int64_t i = 0; i < head_dim / 2; ++i) {
        inv_freq[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / head_dim));
      }
      std::vector<float> cs(static_cast<size_t>(n_tokens * head_dim));
      for (int64_t t = 0; t < n_tokens; ++t) {
        kernels::rope_angles(positions[t], inv_freq.data(), head_dim, cs.data() + t * head_dim);
      }
      const auto x = random_floats(rng, static_cast<size_t>(n_tokens * n_heads * head_dim), -1, 1);
      Buffer xb = upload(x);
      Buffer cb = upload(cs);
      ASSERT_TRUE(dk().rope(xb, cb, n_tokens, n_heads, head_dim, style).is_ok());
      const auto got = download(xb, x.size());
      std::vector<float> expect = x;
      for (int64_t t = 0; t < n_tokens; ++t) {
        float* row = expect.data() + t * n_heads * head_dim;
        if (style == RopeStyle::kNormal) {
          kernels::rope_rotate(row, n_heads, head_dim, cs.data() + t * head_dim);
        } else {
          kernels::rope_rotate_neox(row, n_heads, head_dim, cs.data() + t * head_dim);
        }
      }
      // a c - b s: two products and a difference (a fused multiply-add on the device changes
      // the roundings), |a|, |b| <= 1: within 3 u (|a| + |b|) <= 6 u each side.
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_NEAR(got[i], expect[i], 12 * kU) << "head_dim " << head_dim << " value " << i;
      }
    }
  }
}

TEST(DeviceOpsTest, SoftmaxMatchesReference) {
  TS_DEVICE_OR_SKIP();
  Rng rng(14);
  for (int64_t n : {1, 3, 1003}) {
    const int64_t rows = 4;
    const auto x = random_floats(rng, static_cast<size_t>(rows * n), -20, 20);
    Buffer xb = upload(x);
    ASSERT_TRUE(dk().softmax(xb, rows, n).is_ok());
    const auto got = download(xb, x.size());
    // exp (3 ulp), the sum of n terms, the reciprocal and the product: (n + 8) u each side.
    const double rel = 2 * (static_cast<double>(n) + 8) * kU;
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> expect(x.begin() + r * n, x.begin() + (r + 1) * n);
      kernels::softmax(expect.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_NEAR(got[static_cast<size_t>(r * n + i)], expect[i],
                    rel * expect[i] + 1e-30) << "n=" << n << " row " << r << " " << i;
      }
    }
  }
}

}  // namespace device_kernels_test
}  // namespace tessera::device
