// The forward pass's f32 operators besides the matmul, each the device twin of a CPU function
// in src/kernels/ops.h (the ground truth): rmsnorm, silu_mul, rope_rotate (normal and NeoX
// pairs), softmax, softcap and gelu_tanh_mul; the residual add, bias add and scale; and
// kv_store, which writes K and V rows into the paged KV pool. Row kernels (rmsnorm, softmax) run
// one work-group of TS_WG work-items (a power of two, a build option) per row and reduce in local
// memory (group_sum, group_max: cl/reduce.cl, compiled in front of this file).

// out[row, i] = x[row, i] / sqrt(mean(x[row]^2) + eps) * weight[i]; global (rows * TS_WG).
// out may equal x.
__kernel void rmsnorm(__global const float* x, __global const float* weight, __global float* out,
                      int n, float eps) {
  __local float scratch[TS_WG];
  const int lid = get_local_id(0);
  const ulong base = (ulong)get_group_id(0) * n;
  float ss = 0.0f;
  for (int i = lid; i < n; i += TS_WG) ss += x[base + i] * x[base + i];
  ss = group_sum(ss, scratch, lid);
  const float scale = 1.0f / sqrt(ss / (float)n + eps);
  for (int i = lid; i < n; i += TS_WG) out[base + i] = x[base + i] * scale * weight[i];
}

// Numerically stable softmax of each row in place (the max subtracted first); global
// (rows * TS_WG).
__kernel void softmax(__global float* x, int n) {
  __local float scratch[TS_WG];
  const int lid = get_local_id(0);
  __global float* row = x + (ulong)get_group_id(0) * n;
  float m = -INFINITY;
  for (int i = lid; i < n; i += TS_WG) m = fmax(m, row[i]);
  m = group_max(m, scratch, lid);
  float sum = 0.0f;
  for (int i = lid; i < n; i += TS_WG) {
    const float e = exp(row[i] - m);
    row[i] = e;
    sum += e;
  }
  sum = group_sum(sum, scratch, lid);
  const float inv = 1.0f / sum;
  for (int i = lid; i < n; i += TS_WG) row[i] *= inv;
}

// gate[i] = gate[i] / (1 + e^-gate[i]) * up[i] (SwiGLU); global: n rounded up.
__kernel void silu_mul(__global float* gate, __global const float* up, ulong n) {
  const ulong i = get_global_id(0);
  if (i >= n) return;
  const float g = gate[i];
  gate[i] = g / (1.0f + exp(-g)) * up[i];
}

// Rotates each head's pairs of x [T, n_heads * head_dim] by token t's angles cs [T, head_dim]
// (cs[2i] = cos, cs[2i + 1] = sin of pair i, as rope_angles writes them). Pair i is (2i, 2i + 1)
// ("normal", neox = 0) or (i, i + head_dim / 2) (NeoX, neox = 1).
// global (head_dim / 2, n_heads, T).
__kernel void rope(__global float* x, __global const float* cs, int n_heads, int head_dim,
                   int neox) {
  const int i = get_global_id(0);
  const int h = get_global_id(1);
  const int t = get_global_id(2);
  const float c = cs[(ulong)t * head_dim + 2 * i];
  const float s = cs[(ulong)t * head_dim + 2 * i + 1];
  __global float* p = x + ((ulong)t * n_heads + h) * head_dim;
  const int i0 = neox ? i : 2 * i;
  const int i1 = neox ? i + head_dim / 2 : 2 * i + 1;
  const float a = p[i0];
  const float b = p[i1];
  p[i0] = a * c - b * s;
  p[i1] = a * s + b * c;
}

// ---- elementwise: global n rounded up to TS_WG --------------------------------------------

// x[i] += y[i] (the residual add).
__kernel void add(__global float* x, __global const float* y, ulong n) {
  const ulong i = get_global_id(0);
  if (i < n) x[i] += y[i];
}

// x[r * n + i] += bias[i] over rows * n values (total).
__kernel void add_bias(__global float* x, __global const float* bias, ulong total, int n) {
  const ulong i = get_global_id(0);
  if (i < total) x[i] += bias[i % (ulong)n];
}

__kernel void scale(__global float* x, ulong n, float s) {
  const ulong i = get_global_id(0);
  if (i < n) x[i] *= s;
}

// x[i] = cap * tanh(x[i] * inv_cap), inv_cap = 1 / cap rounded on the host, as kernels::softcap
// computes it.
__kernel void softcap(__global float* x, ulong n, float cap, float inv_cap) {
  const ulong i = get_global_id(0);
  if (i < n) x[i] = cap * tanh(x[i] * inv_cap);
}

// gate[i] = gelu_tanh(gate[i]) * up[i], with kernels::gelu_tanh_mul's operations in its order
// (no contraction into FMAs), so only tanh's rounding differs from the CPU's.
__kernel void gelu_tanh_mul(__global float* gate, __global const float* up, ulong n) {
#pragma OPENCL FP_CONTRACT OFF
  const ulong i = get_global_id(0);
  if (i >= n) return;
  const float k_sqrt_2_over_pi = 0.7978845608028654f;
  const float k_coef = 0.044715f;
  const float g = gate[i];
  gate[i] = 0.5f * g * (1.0f + tanh(k_sqrt_2_over_pi * g * (1.0f + k_coef * g * g))) * up[i];
}

// ---- kv_store: global (kv_dim, T) ---------------------------------------------------------
// Token t's k[t, :] and v[t, :] go to pool row dst_rows[t] of the layer whose rows start at pool
// row layer_row0 (= layer * n_blocks * block_size); rows outside [0, n_rows) are skipped.

__kernel void kv_store_f32(__global const float* k, __global const float* v,
                           __global const int* dst_rows, __global float* pool_k,
                           __global float* pool_v, ulong layer_row0, int n_rows, int kv_dim) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  const int row = dst_rows[t];
  if (row < 0 || row >= n_rows) return;
  const ulong src = (ulong)t * kv_dim + i;
  const ulong dst = (layer_row0 + (ulong)row) * kv_dim + i;
  pool_k[dst] = k[src];
  pool_v[dst] = v[src];
}

// vstore_half_rte (core OpenCL C, no cl_khr_fp16) rounds to nearest even, with subnormals,
// overflow to infinity and signed zeros as kernels::f32_to_f16 does; a NaN's payload bits are
// the driver's choice, so NaN is written as the CPU's canonical quiet NaN (sign | 0x7e00).
inline void store_f16(float x, __global half* p, ulong i) {
  if (isnan(x)) {
    ((__global ushort*)p)[i] = (ushort)(((as_uint(x) >> 16) & 0x8000u) | 0x7e00u);
  } else {
    vstore_half_rte(x, i, p);
  }
}

__kernel void kv_store_f16(__global const float* k, __global const float* v,
                           __global const int* dst_rows, __global half* pool_k,
                           __global half* pool_v, ulong layer_row0, int n_rows, int kv_dim) {
  const int i = get_global_id(0);
  const int t = get_global_id(1);
  const int row = dst_rows[t];
  if (row < 0 || row >= n_rows) return;
  const ulong src = (ulong)t * kv_dim + i;
  const ulong dst = (layer_row0 + (ulong)row) * kv_dim + i;
  store_f16(k[src], pool_k, dst);
  store_f16(v[src], pool_v, dst);
}
