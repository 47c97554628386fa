// The loop over a packed matrix's 16-row groups and its tokens, kMax tokens per tile, for the
// x86 packed-layout kernels (avx512_packed.cpp, avx2_packed_*.cpp): a layout's Tile<T>::run(q,
// n, x, x_row_bytes, aux, y, y_stride) computes one group's 16 outputs for T tokens. Not a public
// header: each including file gets its own internal copy compiled with its own flags.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::kernels {
namespace {

// The last n_tokens % kMax tokens of a group: Tile<rem> for the remainder rem in [1, T].
template <template <int> class Tile, int T>
void run_remainder(int64_t rem, const uint8_t* q, int64_t n, const std::byte* x, size_t xrb,
                   const int32_t* aux, float* y, int64_t ys) {
  if constexpr (T > 0) {
    if (rem == T) {
      Tile<T>::run(q, n, x, xrb, aux, y, ys);
    } else {
      run_remainder<Tile, T - 1>(rem, q, n, x, xrb, aux, y, ys);
    }
  }
}

// Every group against every token, kMax tokens per tile: the Q4_0x16GemmFn contract for a
// layout whose groups are group_bytes apart and whose tokens carry aux_per_token terms each.
template <int kMax, template <int> class Tile>
void run_groups(const void* groups, size_t group_bytes, int64_t n_groups, const void* x,
                size_t xrb, const int32_t* aux, int64_t aux_per_token, int64_t n_tokens, float* y,
                int64_t ys, int64_t n) {
  const auto* xb = static_cast<const std::byte*>(x);
  auto aux_at = [&](int64_t t) { return aux_per_token > 0 ? aux + t * aux_per_token : aux; };
  for (int64_t g = 0; g < n_groups; ++g) {
    const auto* q = static_cast<const uint8_t*>(groups) + g * group_bytes;
    float* yg = y + g * 16;
    int64_t t = 0;
    for (; t + kMax <= n_tokens; t += kMax) {
      Tile<kMax>::run(q, n, xb + t * xrb, xrb, aux_at(t), yg + t * ys, ys);
    }
    run_remainder<Tile, kMax - 1>(n_tokens - t, q, n, xb + t * xrb, xrb, aux_at(t), yg + t * ys, ys);
  }
}

}  // namespace
}  // namespace tessera::kernels
