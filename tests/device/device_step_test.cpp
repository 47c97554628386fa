// The decoder step's device kernels besides matmul and the row operators: kv_store (bitwise
// against the CPU's KvCache conversion, kernels_for(dtype).from_float), paged attention (against
// kernels::scalar::attention_row and kernels::attention_row_softcap over a kernels::KvRows that
// describes a host copy of the same pool and block tables), and add, add_bias, scale, softcap,
// gelu_tanh_mul; with their refusals. The pool layout is built here by hand from
// device_kernels.h's description (the device layer knows no model::KvCache).
// u = 2^-24 (f32 unit roundoff); each tolerance is stated and justified beside its check.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "device_fixture.h"
#include "tessera/base/rng.h"
#include "tessera/device/device_kernels.h"
#include "tessera/kernels/attention.h"
#include "tessera/kernels/dtype.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/ops.h"

namespace tessera::device {
namespace device_step_test {

using device_fixture::dev;
using device_fixture::dk;
using device_fixture::download;
using device_fixture::random_floats;
using device_fixture::upload;
using kernels::DType;
constexpr double kU = 0x1p-24;

float bits_to_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

size_t elem_bytes(DType t) { return t == DType::kF16 ? 2 : 4; }

// A host pool in device_kernels.h's layout and its device twin.
struct Pool {
  DType dtype;
  int64_t n_layers, n_blocks, block_size, kv_dim;
  std::vector<std::byte> k, v;  // host copies
  Buffer kb, vb;
  DeviceKvPool view() {
    return {dtype, &kb, &vb, n_layers, n_blocks, block_size, kv_dim};
  }
  size_t row_bytes() const { return static_cast<size_t>(kv_dim) * elem_bytes(dtype); }
  size_t layer_bytes() const {
    return static_cast<size_t>(n_blocks * block_size) * row_bytes();
  }
};

// Every row of every layer filled: random bytes (f16: a random finite half; f32: a random float
// in [-1, 1]) so that a read from the wrong layer, block or row shows.
Pool make_pool(Rng& rng, DType dtype, int64_t n_layers, int64_t n_blocks, int64_t block_size,
               int64_t kv_dim) {
  Pool p{dtype, n_layers, n_blocks, block_size, kv_dim, {}, {}, {}, {}};
  const size_t n = static_cast<size_t>(n_layers * n_blocks * block_size * kv_dim);
  for (std::vector<std::byte>* side : {&p.k, &p.v}) {
    const std::vector<float> f = random_floats(rng, n, -1, 1);
    side->resize(n * elem_bytes(dtype));
    kernels::kernels_for(dtype).from_float(f.data(), side->data(), static_cast<int64_t>(n));
  }
  p.kb = upload(p.k.data(), p.k.size());
  p.vb = upload(p.v.data(), p.v.size());
  return p;
}

// ---- kv_store -----------------------------------------------------------------------------

// Floats that probe f32 -> f16 rounding: every finite half, the midpoint between it and the next
// (a tie: round to even), the floats one ulp either side of that midpoint, the subnormal
// halves' ties, f32 subnormals, the overflow threshold (65504, 65519.996, 65520), infinities,
// NaNs with payloads (quiet, signalling, negative), signed zeros, and random bit patterns.
std::vector<float> conversion_probes(Rng& rng) {
  std::vector<float> v;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float a = kernels::f16_to_f32(static_cast<uint16_t>(h | sign));
      const float b = kernels::f16_to_f32(static_cast<uint16_t>((h + 1) | sign));  // may be inf
      const double mid = (double(a) + double(b)) / 2;  // exact in f32: one more mantissa bit
      const float m = static_cast<float>(mid);
      v.push_back(a);
      if (std::isfinite(m)) {
        v.push_back(m);
        v.push_back(std::nextafter(m, 0.0f));
        v.push_back(std::nextafter(m, 2 * m));
      }
    }
  }
  for (uint32_t bits : {0x00000001u, 0x00400000u, 0x807fffffu, 0x477fe000u, 0x477fefffu,
                        0x477ff000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u, 0x7fc00000u,
                        0x7fc12345u, 0x7f800001u, 0xffc00001u, 0x7fffffffu, 0x80000000u,
                        0x33000000u, 0x33000001u, 0x337fffffu, 0x38800000u, 0x387fffffu}) {
    v.push_back(bits_to_float(bits));
  }
  for (int i = 0; i < 20000; ++i) v.push_back(bits_to_float(static_cast<uint32_t>(rng.next_u64())));
  return v;
}

// Stores `values` (padded to whole rows) into layer 1 of a 2-layer pool at a shuffled set of
// rows (some blocks left out), plus two tokens aimed outside the layer (-1 and n_rows) that must
// not be written; then compares every byte of both pool buffers with the host's conversion of
// the same rows into a copy of the initial pool: stored rows bitwise equal, all else untouched.
void check_kv_store(DType dtype, const std::vector<float>& values, int64_t kv_dim, uint64_t seed) {
  SCOPED_TRACE(kernels::dtype_name(dtype));
  Rng rng(seed);
  const int64_t n_tokens = (static_cast<int64_t>(values.size()) + kv_dim - 1) / kv_dim;
  const int64_t block_size = 16;
  const int64_t n_blocks = n_tokens / block_size + 4;  // spare blocks stay untouched
  const int64_t n_rows = n_blocks * block_size;
  Pool pool = make_pool(rng, dtype, 2, n_blocks, block_size, kv_dim);
  std::vector<float> k(static_cast<size_t>((n_tokens + 2) * kv_dim));
  std::copy(values.begin(), values.end(), k.begin());
  for (size_t i = values.size(); i < k.size(); ++i) k[i] = static_cast<float>(rng.uniform());
  std::vector<float> v(k.rbegin(), k.rend());  // V differs from K
  std::vector<int32_t> rows(static_cast<size_t>(n_rows));
  std::iota(rows.begin(), rows.end(), 0);
  for (size_t i = rows.size() - 1; i > 0; --i) std::swap(rows[i], rows[rng.next_u64() % (i + 1)]);
  rows.resize(static_cast<size_t>(n_tokens));
  rows.push_back(-1);
  rows.push_back(static_cast<int32_t>(n_rows));
  Buffer kb = upload(k);
  Buffer vb = upload(v);
  Buffer rb = upload(rows);
  DeviceKvPool view = pool.view();
  const Status s = dk().kv_store(kb, vb, rb, n_tokens + 2, 1, view);
  ASSERT_TRUE(s.is_ok()) << s.to_string();

  std::vector<std::byte> expect_k = pool.k;
  std::vector<std::byte> expect_v = pool.v;
  const auto& conv = kernels::kernels_for(dtype);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const size_t at = pool.layer_bytes() + static_cast<size_t>(rows[t]) * pool.row_bytes();
    conv.from_float(k.data() + t * kv_dim, expect_k.data() + at, kv_dim);
    conv.from_float(v.data() + t * kv_dim, expect_v.data() + at, kv_dim);
  }
  const auto got_k = download<std::byte>(pool.kb, pool.k.size());
  const auto got_v = download<std::byte>(pool.vb, pool.v.size());
  const size_t eb = elem_bytes(dtype);
  for (size_t i = 0; i < got_k.size(); i += eb) {
    if (std::memcmp(got_k.data() + i, expect_k.data() + i, eb) != 0 ||
        std::memcmp(got_v.data() + i, expect_v.data() + i, eb) != 0) {
      const size_t row = i / pool.row_bytes();
      const size_t e = (i % pool.row_bytes()) / eb;
      const auto it = std::find(rows.begin(), rows.end(), static_cast<int32_t>(row) -
                                                              static_cast<int32_t>(n_rows));
      const int64_t t = it == rows.end() ? -1 : it - rows.begin();
      uint32_t gk = 0, ek = 0, gv = 0, ev = 0;
      std::memcpy(&gk, got_k.data() + i, eb);
      std::memcpy(&ek, expect_k.data() + i, eb);
      std::memcpy(&gv, got_v.data() + i, eb);
      std::memcpy(&ev, expect_v.data() + i, eb);
      FAIL() << "pool row " << row << " (layer " << row / static_cast<size_t>(n_rows)
             << ") value " << e << ", token " << t << ": K bits 0x" << std::hex << gk
             << " (expected 0x" << ek << "), V bits 0x" << gv << " (expected 0x" << ev << ")";
    }
  }
}

TEST(DeviceKvStoreTest, F16IsBitwiseTheCpuConversion) {
  TS_DEVICE_OR_SKIP();
  Rng rng(21);
  check_kv_store(DType::kF16, conversion_probes(rng), 64, 22);
}

TEST(DeviceKvStoreTest, F32CopiesEveryBit) {
  TS_DEVICE_OR_SKIP();
  Rng rng(23);
  std::vector<float> values = random_floats(rng, 40 * 37, -1e6, 1e6);
  for (uint32_t bits : {0x00000001u, 0x807fffffu, 0x7f800000u, 0xff800000u, 0x7fc12345u,
                        0x80000000u}) {
    values.push_back(bits_to_float(bits));
  }
  check_kv_store(DType::kF32, values, 40, 24);
}

// ---- attention ----------------------------------------------------------------------------

struct RowSpec {
  int seq;        // which sequence (block table)
  int64_t first;  // first position attended (window)
  int64_t n_pos;  // positions [first, n_pos)
};

struct AttentionCase {
  DType dtype;
  int64_t n_heads, n_kv_heads, head_dim, block_size;
  float softcap;
};

// Rows of four sequences in one launch: decode rows (n_pos 1, 7, 300, 1,000: up to 16 chunks of
// 64), prefill-like rows of the same sequence at different lengths, and windows (first > 0, one
// starting mid-block and one past the first chunk).
const RowSpec kRows[] = {{0, 0, 1},     {1, 0, 7},     {2, 0, 300},  {3, 0, 1000}, {1, 0, 5},
                         {3, 0, 999},   {3, 200, 1000}, {2, 250, 300}, {1, 3, 7},   {3, 997, 998}};

// Block tables of kRows' four sequences (each as long as its longest row), concatenated, with
// the pool's blocks handed out in shuffled order and 5 spare blocks that no table names.
struct Paged {
  std::vector<int32_t> tables;
  std::vector<int32_t> offset;  // sequence s's table starts at tables[offset[s]]
  int64_t n_blocks = 0;
};

Paged shuffled_tables(Rng& rng, int64_t block_size) {
  std::vector<int64_t> seq_len(4, 0);
  for (const RowSpec& r : kRows) seq_len[r.seq] = std::max(seq_len[r.seq], r.n_pos);
  Paged p;
  p.n_blocks = 5;
  for (int64_t len : seq_len) p.n_blocks += (len + block_size - 1) / block_size;
  std::vector<int32_t> order(static_cast<size_t>(p.n_blocks));
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size() - 1; i > 0; --i) {
    std::swap(order[i], order[rng.next_u64() % (i + 1)]);
  }
  for (int64_t len : seq_len) {
    p.offset.push_back(static_cast<int32_t>(p.tables.size()));
    for (int64_t b = 0; b < (len + block_size - 1) / block_size; ++b) {
      p.tables.push_back(order[p.tables.size()]);
    }
  }
  return p;
}

// The tolerance of each output value of head q (KV head kvh) over n positions of kv, as
// check_attention's comment derives it: (4 kappa + (6 n + 40) u) A[d], in double.
std::vector<double> attention_bound(const AttentionCase& c, const kernels::KvRows& kv, int64_t n,
                                    const float* q, int64_t kvh) {
  const int64_t H = c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * H;
  const auto& conv = kernels::kernels_for(c.dtype);
  const float scale = 1.0f / std::sqrt(static_cast<float>(H));
  std::vector<float> row(static_cast<size_t>(kv_dim));
  std::vector<double> sc(static_cast<size_t>(n));
  double kappa = 0;
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t p = 0; p < n; ++p) {
    conv.to_float(kv.k + kv.offset(p), row.data(), kv_dim);
    double dot = 0, abs_dot = 0;
    for (int64_t i = 0; i < H; ++i) {
      dot += double(q[i]) * row[kvh * H + i];
      abs_dot += std::fabs(double(q[i]) * row[kvh * H + i]);
    }
    double sj = dot * scale;
    double kj = 2 * double(H + 2) * kU * scale * abs_dot;
    if (c.softcap > 0) {
      sj = c.softcap * std::tanh(sj / c.softcap);
      kj += 16 * kU * std::fabs(sj);
    }
    sc[static_cast<size_t>(p)] = sj;
    kappa = std::max(kappa, kj);
    mx = std::max(mx, sj);
  }
  std::vector<double> abs_acc(static_cast<size_t>(H), 0.0);
  double wsum = 0;
  for (int64_t p = 0; p < n; ++p) {
    conv.to_float(kv.v + kv.offset(p), row.data(), kv_dim);
    const double w = std::exp(sc[static_cast<size_t>(p)] - mx);
    wsum += w;
    for (int64_t d = 0; d < H; ++d) abs_acc[d] += w * std::fabs(double(row[kvh * H + d]));
  }
  const double rel = 4 * kappa + (6 * double(n) + 40) * kU;
  for (double& b : abs_acc) b = rel * b / wsum + 1e-30;
  return abs_acc;
}

// Device attention against the CPU's reference over layer 1 of a 2-layer pool whose blocks are
// handed out to the sequences in shuffled order (with spare blocks in between).
//
// Tolerance, per output value o[t, h, d] = sum_j w_j V[j][d] / sum_j w_j (w_j = exp(s_j - max)):
// - scores: both sides sum H products; at most 2 (H + 2) u scale sum_i |q_i k_i| apart (the
//   device sums in the reference's order, so in practice equal), plus, capped, tanh (OpenCL:
//   5 ulp; libm 1) and two products: 16 u |s_j|. Call the largest over j kappa. A weight's
//   relative error is then at most |ds_j| + |d max| <= 2 kappa, and the ratio's 4 kappa;
// - the softmax: exp within 3 ulp (OpenCL) and 1 (libm) for each weight and rescale; the sums of
//   n terms (numerator and denominator, each side: 4 n u); the rescales, per chunk on the device
//   and per new maximum in the reference (up to n times, 2 u each: 2 n u); the final reciprocal
//   and product. In all (6 n + 40) u,
// both relative to A[d] = sum_j w_j |V[j][d]| / sum_j w_j (computed in double), the size of the
// terms being summed. Records the largest error in units of the bound as a test property.
void check_attention(const AttentionCase& c, uint64_t seed) {
  SCOPED_TRACE(::testing::Message() << kernels::dtype_name(c.dtype) << " heads " << c.n_heads << "/"
                                    << c.n_kv_heads << " H=" << c.head_dim << " block "
                                    << c.block_size << " softcap " << c.softcap);
  Rng rng(seed);
  const int64_t H = c.head_dim;
  const int64_t kv_dim = c.n_kv_heads * H;
  const int64_t n_rows = std::size(kRows);
  const Paged paged = shuffled_tables(rng, c.block_size);
  const std::vector<int32_t>& tables = paged.tables;
  const int64_t n_blocks = paged.n_blocks;
  Pool pool = make_pool(rng, c.dtype, 2, n_blocks, c.block_size, kv_dim);
  const int64_t layer = 1;

  std::vector<int32_t> meta;
  for (const RowSpec& r : kRows) {
    meta.insert(meta.end(), {paged.offset[r.seq], static_cast<int32_t>(r.first),
                             static_cast<int32_t>(r.n_pos)});
  }
  // q in [-a, a] with a = sqrt(H) / 2: scores q . k / sqrt(H) of a few units, so the softmax has
  // peaks (and a cap of 2 bites) instead of averaging everything evenly.
  const double a = std::sqrt(static_cast<double>(H)) / 2;
  const std::vector<float> q =
      random_floats(rng, static_cast<size_t>(n_rows * c.n_heads * H), -a, a);
  Buffer qb = upload(q);
  Buffer mb = upload(meta);
  Buffer tb = upload(tables);
  auto ob = dev().alloc(q.size() * sizeof(float));
  ASSERT_TRUE(ob.is_ok());
  const DeviceKvPool view = pool.view();
  const Status s = dk().attention(qb, view, layer, mb, tb, n_rows, c.n_heads, c.n_kv_heads, H,
                                  c.softcap, *ob);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const std::vector<float> got = download(*ob, q.size());

  double worst = 0;
  std::vector<float> expect(static_cast<size_t>(c.n_heads * H));
  for (int64_t t = 0; t < n_rows; ++t) {
    const RowSpec& r = kRows[t];
    kernels::KvRows kv;
    kv.dtype = c.dtype;
    kv.k = pool.k.data() + layer * pool.layer_bytes();
    kv.v = pool.v.data() + layer * pool.layer_bytes();
    kv.row_stride = pool.row_bytes();
    kv.blocks = tables.data() + paged.offset[r.seq];
    kv.block_size = c.block_size;
    kv.block_stride = static_cast<size_t>(c.block_size) * pool.row_bytes();
    kv.first = r.first;
    const int64_t n = r.n_pos - r.first;
    const float* qt = q.data() + t * c.n_heads * H;
    if (c.softcap > 0) {
      kernels::attention_row_softcap(qt, kv, n, c.n_heads, c.n_kv_heads, H, 0, c.n_kv_heads,
                                     c.softcap, expect.data());
    } else {
      kernels::scalar::attention_row(qt, kv, n, c.n_heads, c.n_kv_heads, H, 0, c.n_kv_heads,
                                     expect.data());
    }
    for (int64_t h = 0; h < c.n_heads; ++h) {
      const std::vector<double> bound =
          attention_bound(c, kv, n, qt + h * H, h / (c.n_heads / c.n_kv_heads));
      for (int64_t d = 0; d < H; ++d) {
        const float e = expect[static_cast<size_t>(h * H + d)];
        const float g = got[static_cast<size_t>((t * c.n_heads + h) * H + d)];
        const double err = std::fabs(double(g) - e);
        worst = std::max(worst, err / bound[d]);
        ASSERT_LE(err, bound[d]) << "row " << t << " (positions " << r.first << ".."
                                 << r.n_pos << ") head " << h << " dim " << d << ": device "
                                 << g << ", reference " << e;
      }
    }
  }
  ::testing::Test::RecordProperty("worst_error_over_bound", std::to_string(worst));
}

TEST(DeviceAttentionTest, MatchesReferenceOverPagedPools) {
  TS_DEVICE_OR_SKIP();
  const AttentionCase cases[] = {
      {DType::kF16, 4, 1, 64, 16, 0.0f},    // GQA 4:1
      {DType::kF32, 4, 2, 128, 32, 0.0f},   // GQA 2:1
      {DType::kF16, 6, 2, 80, 16, 0.0f},    // 3:1, H not a multiple of the work-group
      {DType::kF32, 6, 2, 48, 32, 0.0f},    // H below the work-group
      {DType::kF16, 2, 2, 256, 32, 0.0f},   // the largest H: four dims per work-item
      {DType::kF16, 4, 2, 64, 16, 2.0f},    // soft-capped scores
      {DType::kF32, 8, 8, 128, 16, 50.0f},  // no GQA, Gemma 2's cap
  };
  uint64_t seed = 31;
  for (const AttentionCase& c : cases) check_attention(c, seed++);
}

// Metadata the kernel cannot use (first >= n_pos, a table range past the buffer, a block outside
// the pool) give that row NaN and leave the other rows right.
TEST(DeviceAttentionTest, MalformedMetadataGivesNaNNotAStrayRead) {
  TS_DEVICE_OR_SKIP();
  Rng rng(41);
  const int64_t H = 64, n_heads = 2, block_size = 16;
  Pool pool = make_pool(rng, DType::kF32, 1, 4, block_size, n_heads * H);
  const std::vector<int32_t> tables = {2, 0, 7};  // block 7: outside the pool's 4
  const std::vector<int32_t> meta = {0, 0, 20,    // fine: blocks 2, 0
                                     0, 5, 5,     // first >= n_pos
                                     2, 0, 3,     // block 7
                                     1, 0, 40,    // entries 1..3: past the table
                                     -1, 0, 1};   // negative offset
  const int64_t n_rows = 5;
  const auto q = random_floats(rng, static_cast<size_t>(n_rows * n_heads * H), -1, 1);
  Buffer qb = upload(q);
  Buffer mb = upload(meta);
  Buffer tb = upload(tables);
  auto ob = dev().alloc(q.size() * sizeof(float));
  ASSERT_TRUE(ob.is_ok());
  ASSERT_TRUE(dk().attention(qb, pool.view(), 0, mb, tb, n_rows, n_heads, n_heads, H, 0.0f, *ob)
                  .is_ok());
  const auto got = download(*ob, q.size());
  for (int64_t t = 0; t < n_rows; ++t) {
    for (int64_t i = 0; i < n_heads * H; ++i) {
      const float g = got[static_cast<size_t>(t * n_heads * H + i)];
      EXPECT_EQ(std::isnan(g), t != 0) << "row " << t << " value " << i << ": " << g;
    }
  }
}

TEST(DeviceAttentionTest, RefusesWhatItCannotRun) {
  TS_DEVICE_OR_SKIP();
  Rng rng(42);
  Pool pool = make_pool(rng, DType::kF16, 2, 4, 16, 128);
  DeviceKvPool view = pool.view();
  Buffer q = upload(std::vector<float>(3 * 4 * 64, 0.5f));
  Buffer meta = upload(std::vector<int32_t>{0, 0, 1, 0, 0, 1, 0, 0, 1});
  Buffer tables = upload(std::vector<int32_t>{0});
  auto out = dev().alloc(3 * 4 * 64 * sizeof(float));
  ASSERT_TRUE(out.is_ok());
  ASSERT_TRUE(dk().attention(q, view, 1, meta, tables, 3, 4, 2, 64, 0.0f, *out).is_ok());
  const auto expect_error = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_error(dk().attention(q, view, 2, meta, tables, 3, 4, 2, 64, 0.0f, *out),
               "layer 2 outside the pool's 2 layers");
  expect_error(dk().attention(q, view, -1, meta, tables, 3, 4, 2, 64, 0.0f, *out), "layer -1");
  expect_error(dk().attention(q, view, 1, meta, tables, 3, 4, 3, 64, 0.0f, *out),
               "4 query heads over 3 KV heads");
  expect_error(dk().attention(q, view, 1, meta, tables, 3, 4, 4, 64, 0.0f, *out),
               "4 KV heads of 64 values, the pool's rows hold 128");
  expect_error(dk().attention(q, view, 1, meta, tables, 3, 2, 1, 512, 0.0f, *out),
               "head_dim 512 outside 1..256");
  expect_error(dk().attention(q, view, 1, meta, tables, 3, 4, 2, 64, -1.0f, *out), "softcap -1");
  expect_error(dk().attention(q, view, 1, meta, tables, 4, 4, 2, 64, 0.0f, *out),
               "q: needs 1024 floats, the buffer holds 3072 bytes");
  Buffer small_meta = upload(std::vector<int32_t>{0, 0, 1});
  expect_error(dk().attention(q, view, 1, small_meta, tables, 3, 4, 2, 64, 0.0f, *out),
               "row_meta: needs 9 int32 values, the buffer holds 12 bytes");
  Buffer small_out = upload(std::vector<float>(64, 0.0f));
  expect_error(dk().attention(q, view, 1, meta, tables, 3, 4, 2, 64, 0.0f, small_out),
               "out: needs 768 floats, the buffer holds 256 bytes");
  // A pool whose buffers are smaller than its shape says.
  DeviceKvPool big = view;
  big.n_blocks = 5;
  expect_error(dk().attention(q, big, 1, meta, tables, 3, 4, 2, 64, 0.0f, *out),
               "needs 40960 bytes per buffer, K holds 32768");
  DeviceKvPool q8 = view;
  q8.dtype = DType::kQ8_0;
  expect_error(dk().attention(q, q8, 1, meta, tables, 3, 4, 2, 64, 0.0f, *out), "q8_0 KV pool");
}

TEST(DeviceKvStoreTest, RefusesWhatItCannotRun) {
  TS_DEVICE_OR_SKIP();
  Rng rng(43);
  Pool pool = make_pool(rng, DType::kF32, 2, 4, 16, 32);
  DeviceKvPool view = pool.view();
  Buffer k = upload(std::vector<float>(3 * 32, 1.0f));
  Buffer rows = upload(std::vector<int32_t>{0, 1, 2});
  ASSERT_TRUE(dk().kv_store(k, k, rows, 3, 1, view).is_ok());
  const auto expect_error = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_error(dk().kv_store(k, k, rows, 3, 2, view), "layer 2 outside the pool's 2 layers");
  expect_error(dk().kv_store(k, k, rows, 4, 1, view),
               "k: needs 128 floats, the buffer holds 384 bytes");
  Buffer short_v = upload(std::vector<float>(32, 1.0f));
  expect_error(dk().kv_store(k, short_v, rows, 3, 1, view),
               "v: needs 96 floats, the buffer holds 128 bytes");
  Buffer one_row = upload(std::vector<int32_t>{0});
  expect_error(dk().kv_store(k, k, one_row, 3, 1, view),
               "dst_rows: needs 3 int32 values, the buffer holds 4 bytes");
  DeviceKvPool big = view;
  big.n_layers = 3;
  expect_error(dk().kv_store(k, k, rows, 3, 1, big), "needs 24576 bytes per buffer, K holds 16384");
}

// ---- elementwise --------------------------------------------------------------------------

// Each writes exactly n values: a buffer of n + 7 keeps its tail.
TEST(DeviceElementwiseTest, AddBiasAndScaleAreExact) {
  TS_DEVICE_OR_SKIP();
  Rng rng(51);
  const int64_t rows = 3, n = 1001;  // n not a multiple of the work-group
  const auto x = random_floats(rng, static_cast<size_t>(rows * n + 7), -100, 100);
  const auto y = random_floats(rng, x.size(), -100, 100);
  const auto bias = random_floats(rng, static_cast<size_t>(n), -1, 1);
  // One f32 operation per value, correctly rounded on both sides (OpenCL's + and * are): equal.
  Buffer xb = upload(x);
  Buffer yb = upload(y);
  ASSERT_TRUE(dk().add(xb, yb, rows * n).is_ok());
  auto got = download(xb, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], i < static_cast<size_t>(rows * n) ? x[i] + y[i] : x[i]) << "add " << i;
  }
  xb = upload(x);
  Buffer bb = upload(bias);
  ASSERT_TRUE(dk().add_bias(xb, bb, rows, n).is_ok());
  got = download(xb, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], i < static_cast<size_t>(rows * n) ? x[i] + bias[i % n] : x[i]) << i;
  }
  xb = upload(x);
  ASSERT_TRUE(dk().scale(xb, rows * n, 0.125f / 3).is_ok());
  got = download(xb, x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(got[i], i < static_cast<size_t>(rows * n) ? x[i] * (0.125f / 3) : x[i]) << i;
  }
}

TEST(DeviceElementwiseTest, SoftcapMatchesReference) {
  TS_DEVICE_OR_SKIP();
  Rng rng(52);
  for (float cap : {30.0f, 2.0f}) {
    const int64_t n = 1003;
    const auto x = random_floats(rng, n, -4 * cap, 4 * cap);
    Buffer xb = upload(x);
    ASSERT_TRUE(dk().softcap(xb, n, cap).is_ok());
    const auto got = download(xb, n);
    std::vector<float> expect = x;
    kernels::softcap(expect.data(), n, cap);
    // The same product x * (1 / cap) on both sides; tanh within 5 ulp (OpenCL) and 1 (libm), then
    // the product by cap: 8 u each side.
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_NEAR(got[i], expect[i], 16 * kU * std::fabs(expect[i]) + 1e-30) << cap << " " << i;
    }
  }
}

TEST(DeviceElementwiseTest, GeluTanhMulMatchesReference) {
  TS_DEVICE_OR_SKIP();
  Rng rng(53);
  const int64_t n = 1003;
  auto gate = random_floats(rng, n, -10, 10);
  gate[0] = 0.0f;
  const auto up = random_floats(rng, n, -2, 2);
  Buffer gb = upload(gate);
  Buffer ub = upload(up);
  ASSERT_TRUE(dk().gelu_tanh_mul(gb, ub, n).is_ok());
  const auto got = download(gb, n);
  std::vector<float> expect = gate;
  kernels::gelu_tanh_mul(expect.data(), up.data(), n);
  // The same operations in the same order (unfused), so only tanh differs: 5 ulp (OpenCL) and
  // 1 (libm) of |tanh| <= 1, i.e. an absolute 6 u in (1 + tanh), which for a very negative gate
  // (1 + tanh near 0) is large relative to the result; its share of the output is
  // 0.5 |g up| 6 u. The tanh argument's roundings (4, scaled by tanh' |z| <= 0.45) and the three
  // products after add 8 u relative. Bound: 8 u |g up| + 16 u |result|.
  for (int64_t i = 0; i < n; ++i) {
    const double tol = 8 * kU * std::fabs(double(gate[i]) * up[i]) +
                       16 * kU * std::fabs(expect[i]) + 1e-30;
    ASSERT_NEAR(got[i], expect[i], tol) << "gate " << gate[i] << " up " << up[i];
  }
}

TEST(DeviceElementwiseTest, RefusesTooSmallBuffers) {
  TS_DEVICE_OR_SKIP();
  Buffer x = upload(std::vector<float>(64, 1.0f));
  Buffer y = upload(std::vector<float>(32, 1.0f));
  const auto expect_error = [](const Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  expect_error(dk().add(x, y, 64), "add y: needs 64 floats, the buffer holds 128 bytes");
  expect_error(dk().add(x, x, 65), "add x: needs 65 floats, the buffer holds 256 bytes");
  expect_error(dk().add_bias(x, y, 2, 40), "add_bias x: needs 80 floats");
  expect_error(dk().add_bias(x, y, 1, 40), "add_bias bias: needs 40 floats");
  expect_error(dk().scale(x, 100, 2.0f), "scale x: needs 100 floats");
  expect_error(dk().softcap(x, 100, 2.0f), "softcap x: needs 100 floats");
  expect_error(dk().softcap(x, 10, 0.0f), "cap 0");
  expect_error(dk().gelu_tanh_mul(x, y, 64), "gelu_tanh_mul up: needs 64 floats");
  EXPECT_TRUE(dk().add(x, y, 0).is_ok());  // nothing to do
}

}  // namespace device_step_test
}  // namespace tessera::device
