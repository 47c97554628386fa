// vec_dot_tile's run-time shape (n_rows, n_tokens in 1..kMaxTile) mapped onto a kernel's
// compile-time one, for the x86 tile headers (x86_tile32.h, x86_tile256.h). Not a public header:
// each including file gets its own internal copy compiled with its own flags.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tessera/kernels/kernel_table.h"

namespace tessera::kernels {
namespace {

// vec_dot_tile's signature over Kernel::run<R, T>(w, w_row_bytes, x, x_row_bytes, y, y_stride,
// n) for every R, T in 1..kMaxTile.
template <class Kernel, int R>
void tile_tokens(const void* w, size_t w_row_bytes, const void* x, size_t x_row_bytes,
                 int n_tokens, float* y, int64_t y_stride, int64_t n) {
  const auto* wb = static_cast<const std::byte*>(w);
  const auto* xb = static_cast<const std::byte*>(x);
  switch (n_tokens) {
    case 1: Kernel::template run<R, 1>(wb, w_row_bytes, xb, x_row_bytes, y, y_stride, n); break;
    case 2: Kernel::template run<R, 2>(wb, w_row_bytes, xb, x_row_bytes, y, y_stride, n); break;
    case 3: Kernel::template run<R, 3>(wb, w_row_bytes, xb, x_row_bytes, y, y_stride, n); break;
    default: Kernel::template run<R, 4>(wb, w_row_bytes, xb, x_row_bytes, y, y_stride, n); break;
  }
}

template <class Kernel>
void dispatch_tile(const void* w, size_t w_row_bytes, int n_rows, const void* x,
                   size_t x_row_bytes, int n_tokens, float* y, int64_t y_stride, int64_t n) {
  static_assert(kMaxTile == 4);
  switch (n_rows) {
    case 1: tile_tokens<Kernel, 1>(w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 2: tile_tokens<Kernel, 2>(w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_stride, n); break;
    case 3: tile_tokens<Kernel, 3>(w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_stride, n); break;
    default: tile_tokens<Kernel, 4>(w, w_row_bytes, x, x_row_bytes, n_tokens, y, y_stride, n); break;
  }
}

}  // namespace
}  // namespace tessera::kernels
