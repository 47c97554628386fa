// The forward pass's f32 operators besides the matmul, each the device twin of a CPU function
// in src/kernels/ops.h (the ground truth): rmsnorm, silu_mul, rope_rotate (normal and NeoX
// pairs) and softmax. Row kernels (rmsnorm, softmax) run one work-group of TS_WG work-items
// (a power of two, a build option) per row and reduce in local memory.

// Sums v over the work-group (every work-item gets the total). scratch: TS_WG floats.
inline float group_sum(float v, __local float* scratch, int lid) {
  scratch[lid] = v;
  for (int s = TS_WG / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) scratch[lid] += scratch[lid + s];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);  // scratch is reused by the caller's next reduction
  return total;
}

inline float group_max(float v, __local float* scratch, int lid) {
  scratch[lid] = v;
  for (int s = TS_WG / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) scratch[lid] = fmax(scratch[lid], scratch[lid + s]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const float total = scratch[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

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
