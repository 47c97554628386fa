#include "tessera/model/gptq.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "tessera/kernels/half.h"
#include "tessera/kernels/kernel_table.h"
#include "tessera/kernels/kquant_blocks.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/legacy_quant_blocks.h"
#include "tessera/kernels/quant_blocks.h"
#include "tessera/kernels/weighted_quantize.h"

namespace tessera::model {

namespace {

// In place: the lower Cholesky factor L of a (L L^T = a), upper triangle zeroed.
Status cholesky_lower(std::vector<double>& a, int64_t n) {
  const auto at = [&](int64_t i, int64_t j) -> double& { return a[static_cast<size_t>(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {
    double d = at(j, j);
    for (int64_t k = 0; k < j; ++k) d -= at(j, k) * at(j, k);
    if (!(d > 0.0) || !std::isfinite(d)) {
      return invalid_argument(fmt::format(
          "the input's second-moment matrix is not positive definite (pivot {} of {} is {})", j,
          n, d));
    }
    const double l = std::sqrt(d);
    at(j, j) = l;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = at(i, j);
      for (int64_t k = 0; k < j; ++k) s -= at(i, k) * at(j, k);
      at(i, j) = s / l;
    }
    for (int64_t i = 0; i < j; ++i) at(i, j) = 0.0;
  }
  return Status();
}

// The values element j of a coded block can take with the block's scales fixed: a * l + b for
// integer levels l in [lo, hi] (as the type's to_float computes them), and where its level sits.
struct Grid {
  float a = 0.0f, b = 0.0f;
  int lo = 0, hi = 0;
};

// Per type: the grid of element j of `block`, and writing level l there. Types without an entry
// are coded a whole block at a time (the block-joint form).
struct LevelAccess {
  Grid (*grid)(const std::byte* block, int j) = nullptr;
  void (*set)(std::byte* block, int j, int l) = nullptr;
};

template <typename B>
const B& as(const std::byte* p) {
  return *reinterpret_cast<const B*>(p);
}
template <typename B>
B& as(std::byte* p) {
  return *reinterpret_cast<B*>(p);
}
void set_nibble(uint8_t& byte, bool high, int v) {
  byte = high ? static_cast<uint8_t>((byte & 0x0F) | (v << 4))
              : static_cast<uint8_t>((byte & 0xF0) | (v & 0x0F));
}

LevelAccess level_access(kernels::DType t) {
  using namespace kernels;
  switch (t) {
    case DType::kQ4_0:
      return {[](const std::byte* p, int) {
                const float d = f16_to_f32(as<BlockQ4_0>(p).d);
                return Grid{d, -8.0f * d, 0, 15};
              },
              [](std::byte* p, int j, int l) { set_nibble(as<BlockQ4_0>(p).qs[j % 16], j >= 16, l); }};
    case DType::kQ5_0:
      return {[](const std::byte* p, int) {
                const float d = f16_to_f32(as<BlockQ5_0>(p).d);
                return Grid{d, -16.0f * d, 0, 31};
              },
              [](std::byte* p, int j, int l) {
                BlockQ5_0& b = as<BlockQ5_0>(p);
                set_nibble(b.qs[j % 16], j >= 16, l & 15);
                uint8_t& h = b.qh[j / 8];
                h = static_cast<uint8_t>((h & ~(1u << (j % 8))) | (((l >> 4) & 1u) << (j % 8)));
              }};
    case DType::kQ4_1:
      return {[](const std::byte* p, int) {
                const BlockQ4_1& b = as<BlockQ4_1>(p);
                return Grid{f16_to_f32(b.d), f16_to_f32(b.m), 0, 15};
              },
              [](std::byte* p, int j, int l) { set_nibble(as<BlockQ4_1>(p).qs[j % 16], j >= 16, l); }};
    case DType::kQ5_1:
      return {[](const std::byte* p, int) {
                const BlockQ5_1& b = as<BlockQ5_1>(p);
                return Grid{f16_to_f32(b.d), f16_to_f32(b.m), 0, 31};
              },
              [](std::byte* p, int j, int l) {
                BlockQ5_1& b = as<BlockQ5_1>(p);
                set_nibble(b.qs[j % 16], j >= 16, l & 15);
                uint8_t& h = b.qh[j / 8];
                h = static_cast<uint8_t>((h & ~(1u << (j % 8))) | (((l >> 4) & 1u) << (j % 8)));
              }};
    case DType::kQ8_0:
      return {[](const std::byte* p, int) {
                return Grid{f16_to_f32(as<BlockQ8_0>(p).d), 0.0f, -127, 127};
              },
              [](std::byte* p, int j, int l) { as<BlockQ8_0>(p).qs[j] = static_cast<int8_t>(l); }};
    case DType::kQ4_K:
      return {[](const std::byte* p, int j) {
                const BlockQ4_K& b = as<BlockQ4_K>(p);
                uint8_t sc = 0, m = 0;
                unpack_scale_min(b.scales, j / 32, &sc, &m);
                return Grid{f16_to_f32(b.d) * sc, -f16_to_f32(b.dmin) * m, 0, 15};
              },
              [](std::byte* p, int j, int l) {
                const int i = j % 64;
                set_nibble(as<BlockQ4_K>(p).qs[32 * (j / 64) + i % 32], i >= 32, l);
              }};
    case DType::kQ5_K:
      return {[](const std::byte* p, int j) {
                const BlockQ5_K& b = as<BlockQ5_K>(p);
                uint8_t sc = 0, m = 0;
                unpack_scale_min(b.scales, j / 32, &sc, &m);
                return Grid{f16_to_f32(b.d) * sc, -f16_to_f32(b.dmin) * m, 0, 31};
              },
              [](std::byte* p, int j, int l) {
                BlockQ5_K& b = as<BlockQ5_K>(p);
                const int i = j % 64;
                set_nibble(b.qs[32 * (j / 64) + i % 32], i >= 32, l & 15);
                const int bit = 2 * (j / 64) + (i >= 32 ? 1 : 0);
                uint8_t& h = b.qh[i % 32];
                h = static_cast<uint8_t>((h & ~(1u << bit)) | (((l >> 4) & 1u) << bit));
              }};
    case DType::kQ6_K:
      return {[](const std::byte* p, int j) {
                const BlockQ6_K& b = as<BlockQ6_K>(p);
                const float a = f16_to_f32(b.d) * b.scales[j / 16];
                return Grid{a, -32.0f * a, 0, 63};
              },
              [](std::byte* p, int j, int l) {
                BlockQ6_K& b = as<BlockQ6_K>(p);
                const int h = j / 128, r = j % 128, q = r / 32, i = r % 32;
                set_nibble(b.ql[64 * h + (q % 2 == 1 ? 32 : 0) + i], q >= 2, l & 15);
                uint8_t& hb = b.qh[32 * h + i];
                hb = static_cast<uint8_t>((hb & ~(3u << (2 * q))) | (((l >> 4) & 3u) << (2 * q)));
              }};
    default:
      return {};
  }
}

}  // namespace

Result<std::vector<double>> inverse_cholesky_upper(std::span<const double> a, int64_t n) {
  if (n < 1 || static_cast<int64_t>(a.size()) != n * n) {
    return invalid_argument(fmt::format("inverse_cholesky_upper: {} values for a {} x {} matrix",
                                        a.size(), n, n));
  }
  std::vector<double> l(a.begin(), a.end());
  TS_RETURN_IF_ERROR(cholesky_lower(l, n));
  const auto L = [&](int64_t i, int64_t j) { return l[static_cast<size_t>(i * n + j)]; };
  // M = L^-1 (lower), column by column by forward substitution.
  std::vector<double> m(static_cast<size_t>(n * n), 0.0);
  const auto M = [&](int64_t i, int64_t j) -> double& { return m[static_cast<size_t>(i * n + j)]; };
  for (int64_t j = 0; j < n; ++j) {
    M(j, j) = 1.0 / L(j, j);
    for (int64_t i = j + 1; i < n; ++i) {
      double s = 0.0;
      for (int64_t k = j; k < i; ++k) s += L(i, k) * M(k, j);
      M(i, j) = -s / L(i, i);
    }
  }
  // A^-1 = M^T M (symmetric), then its lower factor G (A^-1 = G G^T): U = G^T.
  std::vector<double> inv(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j <= i; ++j) {
      double s = 0.0;
      for (int64_t k = i; k < n; ++k) s += M(k, i) * M(k, j);  // M lower: rows k >= max(i, j)
      inv[static_cast<size_t>(i * n + j)] = s;
      inv[static_cast<size_t>(j * n + i)] = s;
    }
  }
  TS_RETURN_IF_ERROR(cholesky_lower(inv, n));
  std::vector<double> u(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      u[static_cast<size_t>(i * n + j)] = inv[static_cast<size_t>(j * n + i)];
    }
  }
  return u;
}

Status gptq_quantize(std::span<float> w, int64_t rows, int64_t cols, std::span<const double> h,
                     kernels::DType type, std::span<std::byte> out, ThreadPool& pool,
                     const GptqOptions& options) {
  const kernels::WeightedFromFloatFn weighted = kernels::weighted_from_float(type);
  if (weighted == nullptr) {
    return invalid_argument(fmt::format("gptq: {} has no weighted quantizer",
                                        kernels::dtype_name(type)));
  }
  const kernels::DTypeInfo& info = kernels::dtype_info(type);
  const int64_t bs = info.block_size;
  if (rows < 1 || cols < 1 || cols % bs != 0) {
    return invalid_argument(fmt::format("gptq: a {} x {} matrix does not fit {} blocks of {}",
                                        rows, cols, kernels::dtype_name(type), bs));
  }
  if (static_cast<int64_t>(w.size()) != rows * cols ||
      static_cast<int64_t>(h.size()) != cols * cols) {
    return invalid_argument(fmt::format("gptq: {} weights and {} second moments for {} x {}",
                                        w.size(), h.size(), rows, cols));
  }
  const size_t row_bytes = kernels::dtype_row_bytes(type, cols);
  if (out.size() < row_bytes * static_cast<size_t>(rows)) {
    return invalid_argument("gptq: the output is smaller than the quantized matrix");
  }
  // H, with dead columns given a unit diagonal and every diagonal damped.
  std::vector<double> hd(h.begin(), h.end());
  double mean_diag = 0.0;
  for (int64_t j = 0; j < cols; ++j) {
    double& d = hd[static_cast<size_t>(j * cols + j)];
    if (!(d > 0.0)) d = 1.0;
    mean_diag += d;
  }
  mean_diag /= static_cast<double>(cols);
  for (int64_t j = 0; j < cols; ++j) hd[static_cast<size_t>(j * cols + j)] += options.damp * mean_diag;
  TS_ASSIGN_OR_RETURN(std::vector<double> u, inverse_cholesky_upper(hd, cols));
  const auto U = [&](int64_t i, int64_t j) { return u[static_cast<size_t>(i * cols + j)]; };

  const auto& k = kernels::kernels_for(kernels::scalar_kernel_table(), type);
  const LevelAccess levels = level_access(type);
  const size_t block_bytes = static_cast<size_t>(info.block_bytes);
  std::vector<float> importance(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    const double d = U(j, j);
    importance[static_cast<size_t>(j)] = static_cast<float>(1.0 / (d * d));
  }
  // Rows are independent: each carries only its own errors.
  pool.parallel_for(rows, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> x(static_cast<size_t>(bs)), q(static_cast<size_t>(bs)),
        wt(static_cast<size_t>(bs));
    std::vector<double> err(static_cast<size_t>(bs));
    for (int64_t r = begin; r < end; ++r) {
      float* row = w.data() + r * cols;
      for (int64_t c0 = 0; c0 < cols; c0 += bs) {
        // The block's scales from the weighted search over its current values.
        std::copy(row + c0, row + c0 + bs, x.begin());
        std::byte* dst = out.data() + static_cast<size_t>(r) * row_bytes +
                         static_cast<size_t>(c0 / bs) * block_bytes;
        kernels::importance_weights(x.data(), importance.data() + c0, bs, wt.data());
        weighted(x.data(), dst, bs, wt.data());
        if (levels.grid != nullptr) {
          // Column by column on the fixed scales: round, then carry the error into every
          // column after it (this block's included).
          for (int64_t j = 0; j < bs; ++j) {
            const int64_t c = c0 + j;
            const Grid g = levels.grid(dst, static_cast<int>(j));
            float value = g.b;
            if (g.a != 0.0f) {
              const double l = std::nearbyint((static_cast<double>(row[c]) - g.b) / g.a);
              const int li = static_cast<int>(std::clamp<double>(l, g.lo, g.hi));
              levels.set(dst, static_cast<int>(j), li);
              value = g.a * static_cast<float>(li) + g.b;
            }
            const double e = (static_cast<double>(row[c]) - value) / U(c, c);
            if (e == 0.0) continue;
            const double* urow = u.data() + c * cols;
            for (int64_t t = c + 1; t < cols; ++t) row[t] = static_cast<float>(row[t] - e * urow[t]);
          }
          continue;
        }
        // A whole block at once: Err U_BB = (x - q) by forward substitution, then
        // W_rest -= Err U_B,rest.
        k.to_float(dst, q.data(), bs);
        for (int64_t j = 0; j < bs; ++j) {
          double sum = static_cast<double>(x[static_cast<size_t>(j)]) - q[static_cast<size_t>(j)];
          for (int64_t i = 0; i < j; ++i) sum -= err[static_cast<size_t>(i)] * U(c0 + i, c0 + j);
          err[static_cast<size_t>(j)] = sum / U(c0 + j, c0 + j);
        }
        for (int64_t i = 0; i < bs; ++i) {
          const double e = err[static_cast<size_t>(i)];
          if (e == 0.0) continue;
          const double* urow = u.data() + (c0 + i) * cols;
          for (int64_t c = c0 + bs; c < cols; ++c) row[c] = static_cast<float>(row[c] - e * urow[c]);
        }
      }
    }
  });
  return Status();
}

}  // namespace tessera::model
