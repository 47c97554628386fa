// The AVX2 attention kernel against the scalar reference (a one-position-at-a-time online
// softmax), and the reference against a float64 two-pass softmax, on random inputs over odd
// shapes: head sizes, GQA groups, lengths that do and do not fill a 32-position block, f16 and
// f32 caches, contiguous and paged layouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "tessera/kernels/attention.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/half.h"

namespace tessera::kernels {
namespace attention_test {

// Outputs are convex combinations of V rows (|v| <= 1); the two kernels differ only in float
// summation order and in rescaling per block instead of per position.
constexpr double kAttentionTolerance = 2e-5;

struct Case {
  int64_t head_dim, n_heads, n_kv_heads, n_pos;
  DType dtype;
  int64_t block_size;  // 0: contiguous
};

struct Cache {
  std::vector<std::byte> k, v;
  std::vector<int32_t> blocks;
  KvRows rows;
  std::vector<double> kd, vd;  // the values as stored, for the float64 reference
};

Cache make_cache(const Case& c, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;
  const size_t elem = c.dtype == DType::kF16 ? 2 : 4;
  const size_t row_bytes = static_cast<size_t>(kv_dim) * elem;
  Cache cache;
  int64_t n_slots = c.n_pos;
  if (c.block_size > 0) {
    const int64_t n_blocks = (c.n_pos + c.block_size - 1) / c.block_size;
    // Blocks in a shuffled order with a spare one, as a pool would hand them out.
    for (int32_t b = 0; b <= n_blocks; ++b) cache.blocks.push_back(b);
    std::shuffle(cache.blocks.begin(), cache.blocks.end(), rng);
    n_slots = (n_blocks + 1) * c.block_size;
  }
  cache.k.resize(static_cast<size_t>(n_slots) * row_bytes);
  cache.v.resize(cache.k.size());
  cache.rows = {c.dtype, cache.k.data(), cache.v.data(), row_bytes};
  if (c.block_size > 0) {
    cache.rows.blocks = cache.blocks.data();
    cache.rows.block_size = c.block_size;
    cache.rows.block_stride = static_cast<size_t>(c.block_size) * row_bytes;
  }
  cache.kd.resize(static_cast<size_t>(c.n_pos * kv_dim));
  cache.vd.resize(cache.kd.size());
  for (int64_t p = 0; p < c.n_pos; ++p) {
    for (int64_t i = 0; i < kv_dim; ++i) {
      for (int which = 0; which < 2; ++which) {
        float x = u(rng) * (which == 0 ? 3.0f : 1.0f);  // larger K: peaky softmax
        std::byte* base = (which == 0 ? cache.k.data() : cache.v.data()) + cache.rows.offset(p);
        if (c.dtype == DType::kF16) {
          const uint16_t h = f32_to_f16(x);
          std::memcpy(base + i * 2, &h, 2);
          x = f16_to_f32(h);
        } else {
          std::memcpy(base + i * 4, &x, 4);
        }
        (which == 0 ? cache.kd : cache.vd)[static_cast<size_t>(p * kv_dim + i)] = x;
      }
    }
  }
  return cache;
}

// softcap > 0: each score s becomes softcap * tanh(s / softcap) before the softmax.
std::vector<double> reference(const Case& c, const std::vector<float>& q, const Cache& cache,
                              double softcap = 0.0) {
  const int64_t H = c.head_dim, group = c.n_heads / c.n_kv_heads, kv_dim = c.n_kv_heads * H;
  std::vector<double> out(static_cast<size_t>(c.n_heads * H), 0.0);
  for (int64_t h = 0; h < c.n_heads; ++h) {
    const int64_t kvh = h / group;
    std::vector<double> s(static_cast<size_t>(c.n_pos));
    double max = -1e300;
    for (int64_t p = 0; p < c.n_pos; ++p) {
      double d = 0.0;
      for (int64_t i = 0; i < H; ++i) {
        d += q[static_cast<size_t>(h * H + i)] * cache.kd[static_cast<size_t>(p * kv_dim + kvh * H + i)];
      }
      d /= std::sqrt(static_cast<double>(H));
      if (softcap > 0.0) d = softcap * std::tanh(d / softcap);
      s[static_cast<size_t>(p)] = d;
      max = std::max(max, s[static_cast<size_t>(p)]);
    }
    double z = 0.0;
    for (double& x : s) z += (x = std::exp(x - max));
    for (int64_t p = 0; p < c.n_pos; ++p) {
      for (int64_t i = 0; i < H; ++i) {
        out[static_cast<size_t>(h * H + i)] +=
            s[static_cast<size_t>(p)] / z * cache.vd[static_cast<size_t>(p * kv_dim + kvh * H + i)];
      }
    }
  }
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType dt : {DType::kF16, DType::kF32}) {
    for (int64_t bs : {0, 16, 5}) {
      out.push_back({64, 9, 3, 1, dt, bs});
      out.push_back({64, 9, 3, 33, dt, bs});
      out.push_back({64, 32, 4, 100, dt, bs});
      out.push_back({8, 2, 2, 7, dt, bs});
      out.push_back({24, 4, 1, 64, dt, bs});
      out.push_back({128, 8, 8, 31, dt, bs});
      out.push_back({6, 4, 2, 40, dt, bs});  // head_dim % 8 != 0: the SIMD path falls back
    }
  }
  return out;
}

TEST(Attention, ReferenceMatchesFloat64TwoPassSoftmax) {
  std::mt19937 rng(1);
  for (const Case& c : cases()) {
    SCOPED_TRACE(::testing::Message() << "H=" << c.head_dim << " NH=" << c.n_heads << " NKV="
                                      << c.n_kv_heads << " n_pos=" << c.n_pos << " bs=" << c.block_size);
    const Cache cache = make_cache(c, rng);
    std::vector<float> q(static_cast<size_t>(c.n_heads * c.head_dim));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : q) x = u(rng);
    std::vector<float> out(q.size());
    scalar::attention_row(q.data(), cache.rows, c.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                          c.n_kv_heads, out.data());
    const std::vector<double> want = reference(c, q, cache);
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-5) << i;
  }
}

// Gemma 2's soft-capped scores, with a cap that bites (scores here reach about 3) and one too
// large to matter, which must give attention_row's result.
TEST(Attention, SoftcapMatchesFloat64Reference) {
  std::mt19937 rng(5);
  for (const Case& c : cases()) {
    SCOPED_TRACE(::testing::Message() << "H=" << c.head_dim << " NH=" << c.n_heads << " NKV="
                                      << c.n_kv_heads << " n_pos=" << c.n_pos << " bs=" << c.block_size);
    const Cache cache = make_cache(c, rng);
    std::vector<float> q(static_cast<size_t>(c.n_heads * c.head_dim));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : q) x = u(rng);
    std::vector<float> out(q.size()), plain(q.size());
    for (double cap : {0.7, 1e6}) {
      attention_row_softcap(q.data(), cache.rows, c.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                            c.n_kv_heads, static_cast<float>(cap), out.data());
      const std::vector<double> want = reference(c, q, cache, cap);
      for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 1e-5) << cap << " " << i;
    }
    scalar::attention_row(q.data(), cache.rows, c.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                          c.n_kv_heads, plain.data());
    for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], plain[i], 1e-6) << i;
  }
}

TEST(Attention, Avx2MatchesTheScalarReference) {
  if (!cpu_features().has_avx2_set()) GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C";
  std::mt19937 rng(2);
  for (const Case& c : cases()) {
    SCOPED_TRACE(::testing::Message() << "H=" << c.head_dim << " NH=" << c.n_heads << " NKV="
                                      << c.n_kv_heads << " n_pos=" << c.n_pos << " bs=" << c.block_size);
    const Cache cache = make_cache(c, rng);
    std::vector<float> q(static_cast<size_t>(c.n_heads * c.head_dim));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : q) x = u(rng);
    std::vector<float> want(q.size()), got(q.size(), 99.0f);
    scalar::attention_row(q.data(), cache.rows, c.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                          c.n_kv_heads, want.data());
    // Split by KV head as the model does: each call writes only its heads.
    for (int64_t kvh = 0; kvh < c.n_kv_heads; ++kvh) {
      avx2::attention_row(q.data(), cache.rows, c.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, kvh,
                          kvh + 1, got.data());
    }
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], kAttentionTolerance) << i;
  }
}

// Several rows of one sequence against attention_row per row: a prefill chunk (row r sees
// base + r + 1 positions) and rows with unrelated lengths, over lane counts below, at and above
// one 16-lane register (GQA groups 1, 3, 8, 32), head sizes that do and do not take the AVX-512
// path, f16 and f32, contiguous and paged.
TEST(Attention, RowsMatchOneRowAtATime) {
  struct RowsCase {
    int64_t head_dim, n_heads, n_kv_heads, n_rows;
    bool prefill;
  };
  const RowsCase shapes[] = {{64, 9, 3, 5, true},   {64, 9, 3, 5, false}, {64, 32, 4, 2, true},
                             {64, 32, 4, 3, false}, {32, 4, 4, 16, true}, {128, 32, 1, 1, true},
                             {16, 6, 2, 7, false},  {48, 8, 8, 4, true},  {8, 4, 2, 3, true}};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (DType dt : {DType::kF16, DType::kF32}) {
    for (int64_t bs : {0, 16, 5}) {
      for (const RowsCase& rc : shapes) {
        const int64_t max_pos = 70;
        const Case c{rc.head_dim, rc.n_heads, rc.n_kv_heads, max_pos, dt, bs};
        SCOPED_TRACE(::testing::Message() << "H=" << c.head_dim << " NH=" << c.n_heads << " NKV="
                                          << c.n_kv_heads << " rows=" << rc.n_rows << " prefill="
                                          << rc.prefill << " bs=" << bs);
        const Cache cache = make_cache(c, rng);
        const int64_t q_dim = c.n_heads * c.head_dim;
        const size_t stride = static_cast<size_t>(q_dim + 3);  // rows need not be packed
        std::vector<float> q(stride * static_cast<size_t>(rc.n_rows));
        for (float& x : q) x = u(rng);
        std::vector<int64_t> n_pos(static_cast<size_t>(rc.n_rows));
        const int64_t base = std::uniform_int_distribution<int64_t>(0, max_pos - rc.n_rows)(rng);
        for (int64_t r = 0; r < rc.n_rows; ++r) {
          n_pos[static_cast<size_t>(r)] =
              rc.prefill ? base + r + 1 : std::uniform_int_distribution<int64_t>(1, max_pos)(rng);
        }
        std::vector<float> want(q.size(), 0.0f);
        for (int64_t r = 0; r < rc.n_rows; ++r) {
          scalar::attention_row(q.data() + r * stride, cache.rows, n_pos[static_cast<size_t>(r)],
                                c.n_heads, c.n_kv_heads, c.head_dim, 0, c.n_kv_heads,
                                want.data() + r * stride);
        }
        auto check = [&](AttentionRowsFn fn, const char* name) {
          std::vector<float> got(q.size(), 0.0f);
          for (int64_t kvh = 0; kvh < c.n_kv_heads; ++kvh) {  // split by KV head, as the model
            fn(q.data(), stride, n_pos.data(), rc.n_rows, cache.rows, c.n_heads, c.n_kv_heads,
               c.head_dim, kvh, kvh + 1, got.data(), stride);
          }
          for (int64_t r = 0; r < rc.n_rows; ++r) {
            for (int64_t i = 0; i < q_dim; ++i) {
              const size_t at = static_cast<size_t>(r) * stride + static_cast<size_t>(i);
              ASSERT_NEAR(got[at], want[at], kAttentionTolerance) << name << " row " << r << " i " << i;
            }
          }
        };
        check(scalar::attention_rows, "scalar");
        check([](const float* q_, size_t qs, const int64_t* np, int64_t nr, const KvRows& kv,
                 int64_t nh, int64_t nkv, int64_t hd, int64_t b, int64_t e, float* o, size_t os) {
                attention_rows(q_, qs, np, nr, kv, nh, nkv, hd, b, e, o, os);
              }, "dispatched");
        if (cpu_features().has_avx2_set()) check(avx2::attention_rows, "avx2");
        if (cpu_features().has_avx512_set()) check(avx512::attention_rows, "avx512");
      }
    }
  }
}

// A view that starts at a later position (KvRows::first, sliding-window attention) attends to
// exactly the suffix: against the float64 reference over positions [first, n_pos), for the
// scalar reference and the active (SIMD) kernels, one row and several, contiguous and paged with
// the view starting inside a block.
TEST(Attention, AViewFromALaterPositionAttendsToTheSuffix) {
  std::mt19937 rng(9);
  for (const Case& c : cases()) {
    if (c.n_pos < 4) continue;
    SCOPED_TRACE(::testing::Message() << "H=" << c.head_dim << " NH=" << c.n_heads << " NKV="
                                      << c.n_kv_heads << " n_pos=" << c.n_pos << " bs=" << c.block_size);
    const Cache cache = make_cache(c, rng);
    const int64_t first = c.n_pos / 3 + 1;
    const int64_t kv_dim = c.n_kv_heads * c.head_dim;
    Cache suffix = cache;  // the reference's values from `first` on
    suffix.kd.erase(suffix.kd.begin(), suffix.kd.begin() + first * kv_dim);
    suffix.vd.erase(suffix.vd.begin(), suffix.vd.begin() + first * kv_dim);
    Case sc = c;
    sc.n_pos = c.n_pos - first;
    std::vector<float> q(static_cast<size_t>(2 * c.n_heads * c.head_dim));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (float& x : q) x = u(rng);
    const std::vector<float> q0(q.begin(), q.begin() + c.n_heads * c.head_dim);
    const std::vector<double> want = reference(sc, q0, suffix);
    KvRows view = cache.rows;
    view.first = first;
    std::vector<float> got(q0.size());
    scalar::attention_row(q.data(), view, sc.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                          c.n_kv_heads, got.data());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << "scalar " << i;
    attention_row(q.data(), view, sc.n_pos, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                  c.n_kv_heads, got.data());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], kAttentionTolerance) << "active " << i;
    // Two rows through attention_rows: both see the whole suffix.
    const int64_t n_pos[2] = {sc.n_pos, sc.n_pos};
    const size_t stride = static_cast<size_t>(c.n_heads * c.head_dim);
    std::vector<float> got2(q.size());
    std::copy(q0.begin(), q0.end(), q.begin() + static_cast<std::ptrdiff_t>(stride));
    attention_rows(q.data(), stride, n_pos, 2, view, c.n_heads, c.n_kv_heads, c.head_dim, 0,
                   c.n_kv_heads, got2.data(), stride);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_NEAR(got2[i], want[i], kAttentionTolerance) << "rows " << i;
      ASSERT_NEAR(got2[stride + i], want[i], kAttentionTolerance) << "rows, second " << i;
    }
  }
}

}  // namespace attention_test
}  // namespace tessera::kernels
