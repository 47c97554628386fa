// The forward pass's operators on an OpenCL device: Y = W X for F32, F16, Q8_0, Q4_0, Q5_0, Q4_K
// and Q6_K weights in GGUF's row layout (one token: decode; several: a batch or prefill tile);
// rmsnorm, silu_mul, rope_rotate, softmax and the decoder step's elementwise operators over f32
// activations; the KV pool's store and paged attention. Each kernel's ground truth is the CPU's
// scalar reference (kernels/scalar_kernels.h, kernels/legacy_quants.h, kernels/kquants.h,
// kernels/ops.h, kernels/attention.h), against which tests/device checks it on PoCL with odd
// shapes and a stated tolerance (f32 sums in another order: not bitwise; kv_store: bitwise).
// The programs are compiled once, in build(); every call only sets arguments and enqueues, so
// results are ready after the device's next blocking read or finish().
// Thread-safety: one thread at a time per DeviceKernels (its kernels hold their arguments);
// build one per thread to launch from several.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "tessera/base/status.h"
#include "tessera/device/buffer.h"
#include "tessera/device/device.h"
#include "tessera/device/program.h"
#include "tessera/kernels/dtype.h"

namespace tessera::device {

// A weight matrix [R, C] in a device buffer, rows in GGUF's layout (row r at r * row_bytes,
// row_bytes = dtype_row_bytes(dtype, C)).
struct DeviceMatrix {
  kernels::DType dtype = kernels::DType::kF32;
  const Buffer* data = nullptr;  // not owned; alive until the launches that read it are done
  int64_t n_rows = 0;            // R
  int64_t n_cols = 0;            // C, a multiple of the dtype's block size
};

// K and V of every layer in device memory, in KvCache's layout (model/kv_cache.h):
// [layer][block][position in block][kv_dim], f16 (stored as IEEE half, round-to-nearest-even
// as kernels::fp32_to_fp16) or f32. Row (layer, block, i) of K starts at value
// ((layer * n_blocks + block) * block_size + i) * kv_dim.
struct DeviceKvPool {
  kernels::DType dtype = kernels::DType::kF16;  // kF16 or kF32
  Buffer* k = nullptr;                          // not owned
  Buffer* v = nullptr;
  int64_t n_layers = 0;
  int64_t n_blocks = 0;
  int64_t block_size = 0;
  int64_t kv_dim = 0;
};

enum class RopeStyle : uint8_t {
  kNormal,  // pairs (x[2i], x[2i + 1]): kernels::rope_rotate
  kNeox,    // pairs (x[i], x[i + head_dim / 2]): kernels::rope_rotate_neox
};

class DeviceKernels {
 public:
  // Compiles the embedded programs for `device` (milliseconds on a GPU driver, about a second
  // on PoCL the first time; PoCL caches the result on disk). Errors carry the build log.
  static Result<DeviceKernels> build(const Device& device);

  // Whether matmul takes weights of `dtype`: F32, F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K.
  static bool supports(kernels::DType dtype);

  // y[T, R] = x[T, C] . w[R, C]^T, T = n_tokens >= 1; x and y f32 buffers of at least T * C and
  // T * R values, not aliasing. kInvalidArgument for a dtype without a kernel, a C that is not a
  // multiple of the block size (32 for Q8_0/Q4_0/Q5_0, 256 for Q4_K/Q6_K), or buffers too small
  // (each named with both sizes).
  Status matmul(const DeviceMatrix& w, const Buffer& x, int64_t n_tokens, Buffer& y);
  // out[r, :] = rmsnorm(x[r, :]) * weight for each of n_rows rows of n values (kernels::rmsnorm);
  // out may be x.
  Status rmsnorm(const Buffer& x, const Buffer& weight, int64_t n_rows, int64_t n, float eps,
                 Buffer& out);
  // gate[i] = silu(gate[i]) * up[i] for i < n (kernels::silu_mul).
  Status silu_mul(Buffer& gate, const Buffer& up, int64_t n);
  // Rotates x [T, n_heads * head_dim] in place by each token's angles cs [T, head_dim]
  // (kernels::rope_angles' layout: the host computes them per position, as the CPU path does).
  Status rope(Buffer& x, const Buffer& cs, int64_t n_tokens, int64_t n_heads, int64_t head_dim,
              RopeStyle style);
  // Softmax of each of n_rows rows of n values in place (kernels::softmax).
  Status softmax(Buffer& x, int64_t n_rows, int64_t n);

  // --- the rest of the decoder's step (device twins of model/decoder.cpp's host loops) ---
  // x[i] += y[i], i < n (the residual add).
  Status add(Buffer& x, const Buffer& y, int64_t n);
  // x[r, i] += bias[i] for each of n_rows rows of n values (QKV biases).
  Status add_bias(Buffer& x, const Buffer& bias, int64_t n_rows, int64_t n);
  // x[i] *= s, i < n.
  Status scale(Buffer& x, int64_t n, float s);
  // x[i] = cap * tanh(x[i] / cap), i < n (kernels::softcap).
  Status softcap(Buffer& x, int64_t n, float cap);
  // gate[i] = gelu_tanh(gate[i]) * up[i], i < n (kernels::gelu_tanh_mul: GeGLU).
  Status gelu_tanh_mul(Buffer& gate, const Buffer& up, int64_t n);
  // Stores k[t, :] and v[t, :] (f32, kv_dim values each) of n_tokens rows into layer `layer`
  // of `pool` at pool row dst_rows[t] (int32: block * block_size + position % block_size),
  // converted to the pool's dtype exactly as the CPU's KvCache conversion (kernels_for(dtype)
  // .from_float) does. kInvalidArgument for a layer out of range or buffers too small; a
  // dst_rows entry outside [0, n_blocks * block_size) is not written (the host validates).
  Status kv_store(const Buffer& k, const Buffer& v, const Buffer& dst_rows, int64_t n_tokens,
                  int64_t layer, DeviceKvPool& pool);
  // Paged attention of n_tokens query rows over layer `layer` of `pool`, the device twin of
  // kernels::attention_row (attention_row_softcap when softcap > 0): for row t and head h,
  // out[t, h * H ..] = sum_j softmax_j(s_j) V[j], s_j = q[t, h] . K[j] / sqrt(H) (then
  // cap * tanh(s_j / cap) when capped), over positions j in [first_t, n_pos_t) of row t's
  // sequence, K/V head h / (n_heads / n_kv_heads). row_meta is int32 [n_tokens, 3]: row t's
  // offset into `tables`, first_t, n_pos_t (first_t < n_pos_t); position j of row t lives in
  // pool row tables[offset_t + j / block_size] * block_size + j % block_size. q and out are
  // f32 [n_tokens, n_heads * H], H <= kMaxAttentionHeadDim. Any n_pos (long contexts: no per-row
  // limit from local memory). kInvalidArgument for a layer out of range, heads that do not divide
  // or do not fill the pool's kv_dim, a negative softcap, or buffers too small. Metadata are read
  // on the device: a (row, head) whose row_meta or table entries fall outside `tables` or the
  // pool reads nothing there and gets NaN.
  Status attention(const Buffer& q, const DeviceKvPool& pool, int64_t layer,
                   const Buffer& row_meta, const Buffer& tables, int64_t n_tokens,
                   int64_t n_heads, int64_t n_kv_heads, int64_t head_dim, float softcap,
                   Buffer& out);

  // Work-items per work-group of the row kernels (a power of two; a build option).
  int work_group_size() const { return wg_; }
  // Tokens per work-group of matmul (a tile shares each weight load).
  static constexpr int kTile = 4;
  // The largest head_dim attention takes (as kernels::attention_row).
  static constexpr int64_t kMaxAttentionHeadDim = 256;

 private:
  explicit DeviceKernels(Device device) : device_(std::move(device)) {}
  size_t elementwise_range(int64_t n) const;  // n rounded up to the work-group
  Device device_;
  Program matmul_program_;
  Program ops_program_;
  Program attention_program_;
  Kernel matmul_f32_, matmul_f16_, matmul_q8_0_, matmul_q4_0_, matmul_q5_0_, matmul_q4_k_,
      matmul_q6_k_;
  Kernel rmsnorm_, softmax_, silu_mul_, rope_;
  Kernel add_, add_bias_, scale_, softcap_, gelu_tanh_mul_, kv_store_f32_, kv_store_f16_;
  Kernel attention_f32_, attention_f16_;
  int wg_ = 64;
};

}  // namespace tessera::device
