// An independent float64 Llama forward pass for tests. It shares no code with the engine: its
// own weight decoding (from raw GGUF block bytes), RMSNorm, RoPE, attention and SwiGLU, written
// plainly for clarity. Used as the oracle for the engine's logits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tessera::testing {

// Raw-bytes decoders for the GGUF element formats, written from the format definitions.
inline double ref_half_to_double(uint16_t h) {
  const int sign = (h >> 15) & 1;
  const int exp = (h >> 10) & 0x1f;
  const int mant = h & 0x3ff;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), -24);
  } else if (exp == 31) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(1.0 + mant / 1024.0, exp - 15);
  }
  return sign ? -v : v;
}

inline double ref_bf16_to_double(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

enum class RefType { kF32, kF16, kBF16, kQ8_0, kQ4_0 };

// Decodes `n` values of type `t` from `bytes`.
inline std::vector<double> ref_decode(RefType t, const uint8_t* bytes, int64_t n) {
  std::vector<double> out(static_cast<size_t>(n));
  auto u16 = [&](size_t off) { return static_cast<uint16_t>(bytes[off] | bytes[off + 1] << 8); };
  for (int64_t i = 0; i < n; ++i) {
    switch (t) {
      case RefType::kF32: {
        float f;
        std::memcpy(&f, bytes + 4 * i, 4);
        out[i] = f;
        break;
      }
      case RefType::kF16: out[i] = ref_half_to_double(u16(2 * i)); break;
      case RefType::kBF16: out[i] = ref_bf16_to_double(u16(2 * i)); break;
      case RefType::kQ8_0: {
        const size_t block = static_cast<size_t>(i / 32) * 34;
        const double d = ref_half_to_double(u16(block));
        out[i] = d * static_cast<int8_t>(bytes[block + 2 + i % 32]);
        break;
      }
      case RefType::kQ4_0: {
        const size_t block = static_cast<size_t>(i / 32) * 18;
        const double d = ref_half_to_double(u16(block));
        const int j = static_cast<int>(i % 32);
        const uint8_t byte = bytes[block + 2 + (j % 16)];
        const int q = j < 16 ? (byte & 0xf) : (byte >> 4);
        out[i] = d * (q - 8);
        break;
      }
    }
  }
  return out;
}

struct RefLayer {
  std::vector<double> attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;  // row-major [out][in]
};

struct RefModel {
  int dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, ffn = 0, vocab = 0;
  double eps = 1e-5, rope_base = 10000.0;
  std::vector<double> freq_factors;  // empty: none
  std::vector<double> embd, output_norm, output;  // output empty: tied to embd
  std::vector<RefLayer> layers;

  // Logits [T][vocab] for every position of `tokens` (positions 0..T-1).
  std::vector<std::vector<double>> forward(const std::vector<int>& tokens) const {
    const auto h = hidden(tokens);
    std::vector<std::vector<double>> logits(h.size());
    for (size_t t = 0; t < h.size(); ++t) {
      const std::vector<double>& w = output.empty() ? embd : output;
      logits[t].assign(vocab, 0.0);
      for (int r = 0; r < vocab; ++r)
        for (int c = 0; c < dim; ++c) logits[t][r] += w[static_cast<size_t>(r) * dim + c] * h[t][c];
    }
    return logits;
  }

  // The final hidden state [T][dim] (after the final norm, before the output projection).
  std::vector<std::vector<double>> hidden(const std::vector<int>& tokens) const {
    const int hd = dim / n_heads, T = static_cast<int>(tokens.size());
    const int kvd = n_kv_heads * hd;
    auto matvec = [](const std::vector<double>& w, const std::vector<double>& x, int rows) {
      const size_t cols = x.size();
      std::vector<double> y(rows, 0.0);
      for (int r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
      return y;
    };
    auto norm = [&](const std::vector<double>& x, const std::vector<double>& w) {
      double ss = 0;
      for (double v : x) ss += v * v;
      const double s = 1.0 / std::sqrt(ss / x.size() + eps);
      std::vector<double> y(x.size());
      for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
      return y;
    };
    auto rope = [&](std::vector<double>& v, int n_h, int pos) {
      for (int h = 0; h < n_h; ++h)
        for (int i = 0; i < hd / 2; ++i) {
          double theta = std::pow(rope_base, -2.0 * i / hd);
          if (!freq_factors.empty()) theta /= freq_factors[i];
          const double a = pos * theta;
          double& x0 = v[h * hd + 2 * i];
          double& x1 = v[h * hd + 2 * i + 1];
          const double y0 = x0 * std::cos(a) - x1 * std::sin(a);
          const double y1 = x0 * std::sin(a) + x1 * std::cos(a);
          x0 = y0;
          x1 = y1;
        }
    };
    std::vector<std::vector<double>> x(T);
    for (int t = 0; t < T; ++t) x[t].assign(embd.begin() + tokens[t] * dim, embd.begin() + (tokens[t] + 1) * dim);
    for (const RefLayer& L : layers) {
      std::vector<std::vector<double>> q(T), k(T), v(T);
      for (int t = 0; t < T; ++t) {
        auto xn = norm(x[t], L.attn_norm);
        q[t] = matvec(L.wq, xn, dim);
        k[t] = matvec(L.wk, xn, kvd);
        v[t] = matvec(L.wv, xn, kvd);
        rope(q[t], n_heads, t);
        rope(k[t], n_kv_heads, t);
      }
      for (int t = 0; t < T; ++t) {
        std::vector<double> att(dim, 0.0);
        for (int h = 0; h < n_heads; ++h) {
          const int g = h / (n_heads / n_kv_heads);
          std::vector<double> s(t + 1);
          double mx = -1e300;
          for (int p = 0; p <= t; ++p) {
            double d = 0;
            for (int i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[p][g * hd + i];
            s[p] = d / std::sqrt(static_cast<double>(hd));
            mx = std::max(mx, s[p]);
          }
          double sum = 0;
          for (double& e : s) sum += (e = std::exp(e - mx));
          for (int p = 0; p <= t; ++p)
            for (int i = 0; i < hd; ++i) att[h * hd + i] += s[p] / sum * v[p][g * hd + i];
        }
        auto o = matvec(L.wo, att, dim);
        for (int i = 0; i < dim; ++i) x[t][i] += o[i];
        auto xn = norm(x[t], L.ffn_norm);
        auto g = matvec(L.w_gate, xn, ffn);
        auto u = matvec(L.w_up, xn, ffn);
        for (int i = 0; i < ffn; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
        auto d = matvec(L.w_down, g, dim);
        for (int i = 0; i < dim; ++i) x[t][i] += d[i];
      }
    }
    std::vector<std::vector<double>> h(T);
    for (int t = 0; t < T; ++t) h[t] = norm(x[t], output_norm);
    return h;
  }
};

}  // namespace tessera::testing
