#include "tessera/kernels/sparse_quants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/half.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::kernels {
namespace {

// keep[j] for the 2 of each 4 values of largest magnitude (the earlier one on ties).
void keep_largest_2of4(const float* x, uint8_t* keep, int64_t n) {
  for (int64_t g = 0; g < n; g += 4) {
    int first = 0;
    for (int j = 1; j < 4; ++j) {
      if (std::fabs(x[g + j]) > std::fabs(x[g + first])) first = j;
    }
    int second = first == 0 ? 1 : 0;
    for (int j = 0; j < 4; ++j) {
      if (j != first && std::fabs(x[g + j]) > std::fabs(x[g + second])) second = j;
    }
    for (int j = 0; j < 4; ++j) keep[g + j] = (j == first || j == second) ? 1 : 0;
  }
}

// The keep-mask of `count` weights (bit j: keep[j]), after checking the 2:4 rule.
uint64_t mask_of(const uint8_t* keep, int count) {
  uint64_t m = 0;
  for (int j = 0; j < count; ++j) {
    if (keep[j] != 0) m |= uint64_t{1} << j;
  }
  TS_CHECK_MSG(mask_is_2of4(m, count / 4), "keep-mask is not 2 of every 4");
  return m;
}

// The kept values of `count` weights in position order (count / 2 of them) into `out`.
void gather_kept(const float* x, uint64_t mask, int count, float* out) {
  int k = 0;
  for (int j = 0; j < count; ++j) {
    if ((mask >> j) & 1) out[k++] = x[j];
  }
}

// dst[j] = the k-th kept value at the k-th set bit of `mask`, 0 elsewhere (`count` weights).
template <class Value>
void scatter_kept(uint64_t mask, int count, Value value, float* dst) {
  int k = 0;
  for (int j = 0; j < count; ++j) dst[j] = ((mask >> j) & 1) ? value(k++) : 0.0f;
}

void from_float_by_magnitude(DType t, const float* src, void* dst, int64_t n) {
  constexpr int64_t kChunk = 256;
  uint8_t keep[kChunk];
  const int64_t block = dtype_info(t).block_size;
  const size_t block_bytes = static_cast<size_t>(dtype_info(t).block_bytes);
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);  // a multiple of the block: kChunk is
    keep_largest_2of4(src + i, keep, m);
    encode_2of4_row(t, src + i, keep, static_cast<std::byte*>(dst) + i / block * block_bytes, m);
  }
}

}  // namespace

bool is_2of4_dtype(DType t) {
  return t == DType::kF16_2of4 || t == DType::kQ8_0_2of4 || t == DType::kQ4_0_2of4;
}

DType dense_type_of_2of4(DType t) {
  switch (t) {
    case DType::kF16_2of4: return DType::kF16;
    case DType::kQ8_0_2of4: return DType::kQ8_0;
    case DType::kQ4_0_2of4: return DType::kQ4_0;
    default: break;
  }
  TS_CHECK_MSG(false, "not a 2:4 type");
  __builtin_unreachable();
}

std::optional<DType> sparse_2of4_type_for(DType dense) {
  switch (dense) {
    case DType::kF16: return DType::kF16_2of4;
    case DType::kQ8_0: return DType::kQ8_0_2of4;
    case DType::kQ4_0: return DType::kQ4_0_2of4;
    default: return std::nullopt;
  }
}

void encode_2of4_row(DType t, const float* src, const uint8_t* keep, void* dst, int64_t n) {
  TS_CHECK(is_2of4_dtype(t) && n % dtype_info(t).block_size == 0);
  float kept[32];
  if (t == DType::kF16_2of4) {
    auto* b = static_cast<BlockF16_2of4*>(dst);
    for (int64_t i = 0; i < n / kQK2of4; ++i) {
      const uint64_t m = mask_of(keep + i * kQK2of4, kQK2of4);
      gather_kept(src + i * kQK2of4, m, kQK2of4, kept);
      const auto m32 = static_cast<uint32_t>(m);
      std::memcpy(b[i].mask, &m32, 4);
      for (int k = 0; k < 16; ++k) b[i].v[k] = f32_to_f16(kept[k]);
    }
  } else if (t == DType::kQ8_0_2of4) {
    auto* b = static_cast<BlockQ8_0_2of4*>(dst);
    for (int64_t i = 0; i < n / kQK2of4; ++i) {
      const uint64_t m = mask_of(keep + i * kQK2of4, kQK2of4);
      // Q8_0 of the 16 kept values padded with zeros: the zeros change neither d nor the quants,
      // so the block decodes to exactly what dense Q8_0 gives for the pruned row.
      float padded[kQK8_0] = {};
      gather_kept(src + i * kQK2of4, m, kQK2of4, padded);
      BlockQ8_0 q;
      scalar::q8_0_from_float(padded, &q, kQK8_0);
      const auto m32 = static_cast<uint32_t>(m);
      b[i].d = q.d;
      std::memcpy(b[i].mask, &m32, 4);
      std::memcpy(b[i].qs, q.qs, 16);
    }
  } else {
    auto* b = static_cast<BlockQ4_0_2of4*>(dst);
    for (int64_t i = 0; i < n / kQK4_0_2of4; ++i) {
      const uint64_t m = mask_of(keep + i * kQK4_0_2of4, kQK4_0_2of4);
      gather_kept(src + i * kQK4_0_2of4, m, kQK4_0_2of4, kept);
      BlockQ4_0 q;  // Q4_0's element order is the layout's kept order
      scalar::q4_0_from_float(kept, &q, kQK4_0);
      b[i].d = q.d;
      std::memcpy(b[i].mask, &m, 8);
      std::memcpy(b[i].qs, q.qs, 16);
    }
  }
}

int64_t first_invalid_2of4_block(DType t, const void* data, size_t n_bytes) {
  TS_CHECK(is_2of4_dtype(t));
  const auto* p = static_cast<const std::byte*>(data);
  const auto block_bytes = static_cast<size_t>(dtype_info(t).block_bytes);
  TS_CHECK(n_bytes % block_bytes == 0);
  const size_t mask_offset = t == DType::kF16_2of4 ? 0 : 2;
  const int n_nibbles = t == DType::kQ4_0_2of4 ? 16 : 8;
  for (size_t i = 0; i < n_bytes / block_bytes; ++i) {
    uint64_t m = 0;
    std::memcpy(&m, p + i * block_bytes + mask_offset, static_cast<size_t>(n_nibbles / 2));
    if (!mask_is_2of4(m, n_nibbles)) return static_cast<int64_t>(i);
  }
  return -1;
}

namespace scalar {

void f16_2of4_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockF16_2of4*>(src);
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    scatter_kept(load_mask32(b[i].mask), kQK2of4, [&](int k) { return f16_to_f32(b[i].v[k]); },
                 dst + i * kQK2of4);
  }
}
void f16_2of4_from_float(const float* src, void* dst, int64_t n) {
  from_float_by_magnitude(DType::kF16_2of4, src, dst, n);
}
float f16_2of4_dot(const void* row, const float* x, int64_t n) {
  const auto* b = static_cast<const BlockF16_2of4*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const uint32_t m = load_mask32(b[i].mask);
    int k = 0;
    for (int j = 0; j < kQK2of4; ++j) {
      if ((m >> j) & 1) sum += f16_to_f32(b[i].v[k++]) * x[i * kQK2of4 + j];
    }
  }
  return sum;
}
float f16_2of4_vec_dot(const void* row, const void* x, int64_t n) {
  return f16_2of4_dot(row, static_cast<const float*>(x), n);
}

void q8_0_2of4_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0_2of4*>(src);
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const float d = f16_to_f32(b[i].d);
    scatter_kept(load_mask32(b[i].mask), kQK2of4,
                 [&](int k) { return d * static_cast<float>(b[i].qs[k]); }, dst + i * kQK2of4);
  }
}
void q8_0_2of4_from_float(const float* src, void* dst, int64_t n) {
  from_float_by_magnitude(DType::kQ8_0_2of4, src, dst, n);
}
float q8_0_2of4_dot(const void* row, const float* x, int64_t n) {
  const auto* b = static_cast<const BlockQ8_0_2of4*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const uint32_t m = load_mask32(b[i].mask);
    float block = 0.0f;
    int k = 0;
    for (int j = 0; j < kQK2of4; ++j) {
      if ((m >> j) & 1) block += static_cast<float>(b[i].qs[k++]) * x[i * kQK2of4 + j];
    }
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}
float q8_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const auto* w = static_cast<const BlockQ8_0_2of4*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK2of4; ++i) {
    const uint32_t m = load_mask32(w[i].mask);
    int32_t s = 0;
    int k = 0;
    for (int j = 0; j < kQK2of4; ++j) {
      if ((m >> j) & 1) s += static_cast<int32_t>(w[i].qs[k++]) * a[i].qs[j];
    }
    sum += f16_to_f32(w[i].d) * f16_to_f32(a[i].d) * static_cast<float>(s);
  }
  return sum;
}

namespace {
int q4_nibble(const BlockQ4_0_2of4& b, int k) {
  return k < 16 ? (b.qs[k] & 0x0f) : (b.qs[k - 16] >> 4);
}
}  // namespace

void q4_0_2of4_to_float(const void* src, float* dst, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0_2of4*>(src);
  for (int64_t i = 0; i < n / kQK4_0_2of4; ++i) {
    const float d = f16_to_f32(b[i].d);
    scatter_kept(load_mask64(b[i].mask), kQK4_0_2of4,
                 [&](int k) { return d * static_cast<float>(q4_nibble(b[i], k) - 8); },
                 dst + i * kQK4_0_2of4);
  }
}
void q4_0_2of4_from_float(const float* src, void* dst, int64_t n) {
  from_float_by_magnitude(DType::kQ4_0_2of4, src, dst, n);
}
float q4_0_2of4_dot(const void* row, const float* x, int64_t n) {
  const auto* b = static_cast<const BlockQ4_0_2of4*>(row);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0_2of4; ++i) {
    const uint64_t m = load_mask64(b[i].mask);
    float block = 0.0f;
    int k = 0;
    for (int j = 0; j < kQK4_0_2of4; ++j) {
      if ((m >> j) & 1) {
        block += static_cast<float>(q4_nibble(b[i], k++) - 8) * x[i * kQK4_0_2of4 + j];
      }
    }
    sum += f16_to_f32(b[i].d) * block;
  }
  return sum;
}
float q4_0_2of4_q8_0_vec_dot(const void* row, const void* x, int64_t n) {
  const auto* w = static_cast<const BlockQ4_0_2of4*>(row);
  const auto* a = static_cast<const BlockQ8_0*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n / kQK4_0_2of4; ++i) {
    const uint64_t m = load_mask64(w[i].mask);
    int32_t s[2] = {0, 0};
    int k = 0;
    for (int j = 0; j < kQK4_0_2of4; ++j) {
      if ((m >> j) & 1) s[j / 32] += (q4_nibble(w[i], k++) - 8) * a[2 * i + j / 32].qs[j % 32];
    }
    const float dx0 = f16_to_f32(a[2 * i].d), dx1 = f16_to_f32(a[2 * i + 1].d);
    sum += f16_to_f32(w[i].d) * (dx0 * static_cast<float>(s[0]) + dx1 * static_cast<float>(s[1]));
  }
  return sum;
}

}  // namespace scalar

void install_scalar_sparse_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kF16_2of4)] = {
      scalar::f16_2of4_to_float, scalar::f16_2of4_from_float, scalar::f16_2of4_dot, DType::kF32,
      scalar::f16_2of4_vec_dot};
  t.dtypes[dtype_slot(DType::kQ8_0_2of4)] = {
      scalar::q8_0_2of4_to_float, scalar::q8_0_2of4_from_float, scalar::q8_0_2of4_dot,
      DType::kQ8_0, scalar::q8_0_2of4_q8_0_vec_dot};
  t.dtypes[dtype_slot(DType::kQ4_0_2of4)] = {
      scalar::q4_0_2of4_to_float, scalar::q4_0_2of4_from_float, scalar::q4_0_2of4_dot,
      DType::kQ8_0, scalar::q4_0_2of4_q8_0_vec_dot};
}

void install_avx2_sparse_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kF16_2of4)].vec_dot = avx2::f16_2of4_vec_dot;
  t.dtypes[dtype_slot(DType::kQ8_0_2of4)].vec_dot = avx2::q8_0_2of4_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ4_0_2of4)].vec_dot = avx2::q4_0_2of4_q8_0_vec_dot;
}

void install_avx512_sparse_rows(KernelTable& t) {
  t.dtypes[dtype_slot(DType::kF16_2of4)].vec_dot = avx512::f16_2of4_vec_dot;
  t.dtypes[dtype_slot(DType::kQ8_0_2of4)].vec_dot = avx512::q8_0_2of4_q8_0_vec_dot;
  t.dtypes[dtype_slot(DType::kQ4_0_2of4)].vec_dot = avx512::q4_0_2of4_q8_0_vec_dot;
}

}  // namespace tessera::kernels
