// Paged attention over the device KV pool, the device twin of kernels::attention_row (and
// attention_row_softcap): for query row t and head h, out = sum_j softmax_j(s_j) V[j] over
// positions j in [first_t, n_pos_t), s_j = (q . K[j]) * scale (scale = 1 / sqrt(H), rounded on
// the host as the CPU does), then cap * tanh(s_j * inv_cap) when capped (cap > 0).
// Shapes: H = head_dim <= ATT_MAX_H, group = n_heads / n_kv_heads (query head h reads KV head
// h / group), kv_dim = n_kv_heads * H. The pool holds rows of kv_dim values (f16 or f32); row
// `row` of the layer starts at value (layer_row0 + row) * kv_dim. row_meta[t] = (offset into
// tables, first, n_pos); position j lives in pool row tables[offset + j / bs] * bs + j % bs.
//
// Launch: global (n_heads * TS_WG, T), local (TS_WG, 1): one work-group per (row, head). The
// positions go by in chunks of TS_WG with an online softmax, so no per-row limit comes from local
// memory: work-item l scores position c0 + l (a dot of H, q read from local memory), the chunk's
// max and sum meet in local reductions, and then each work-item owns the output dims d = l,
// l + TS_WG, ... and accumulates p_j V[j][d] over the chunk (consecutive work-items read
// consecutive values of a V row), after rescaling what it holds by exp(m_old - m_new).
// Not tuned for a GPU yet: the scores read K rows one per work-item (strided), and each query
// head of a GQA group reads its KV head's rows again.
//
// Numerics: each score is summed in the reference's order with no contraction, so scores equal
// the CPU's but for tanh and exp (a few ulp); the softmax is rescaled per chunk rather than per
// position, and V sums in another order: agreement within f32 rounding, not bitwise.
// Malformed metadata (first >= n_pos, a table range past the buffer, a block outside the pool)
// reads nothing outside the buffers: that (row, head) gets NaN.

#define ATT_MAX_H 256
#define ATT_DIMS_PER_ITEM ((ATT_MAX_H + TS_WG - 1) / TS_WG)

inline float kv_load(__global const uchar* pool, ulong i, int f16) {
  return f16 ? vload_half(i, (__global const half*)pool) : ((__global const float*)pool)[i];
}

// The kernels below differ only in the pool's dtype (f16 a compile-time constant after inlining).
inline void attention_body(__global const float* q, __global const uchar* pool_k,
                           __global const uchar* pool_v, __global const int* row_meta,
                           __global const int* tables, __global float* out, ulong layer_row0,
                           int n_blocks, int bs, int kv_dim, int n_table, int group, int H,
                           float scale, float cap, float inv_cap, int f16, __local float* q_loc,
                           __local float* p_loc, __local int* rows_loc, __local float* scratch) {
#pragma OPENCL FP_CONTRACT OFF
  const int h = get_group_id(0);
  const int n_heads = get_num_groups(0);
  const int t = get_group_id(1);
  const int lid = get_local_id(0);
  const int offset = row_meta[3 * t];
  const int first = row_meta[3 * t + 1];
  const int n_pos = row_meta[3 * t + 2];
  __global float* o = out + ((ulong)t * n_heads + h) * H;

  int bad = offset < 0 || first < 0 || first >= n_pos || bs < 1;
  if (!bad) {
    const int e0 = first / bs;
    const int e1 = (n_pos - 1) / bs;
    bad = offset > n_table - 1 - e1;
    for (int e = e0 + lid; !bad && e <= e1; e += TS_WG) {
      const int b = tables[offset + e];
      bad = b < 0 || b >= n_blocks;
    }
  }
  if (group_max((float)bad, scratch, lid) != 0.0f) {  // uniform: the whole group returns
    for (int d = lid; d < H; d += TS_WG) o[d] = NAN;
    return;
  }

  for (int d = lid; d < H; d += TS_WG) q_loc[d] = q[((ulong)t * n_heads + h) * H + d];
  barrier(CLK_LOCAL_MEM_FENCE);

  const ulong head = (ulong)(h / group) * H;
  float m = -INFINITY;
  float sum = 0.0f;
  float acc[ATT_DIMS_PER_ITEM];
  for (int k = 0; k < ATT_DIMS_PER_ITEM; ++k) acc[k] = 0.0f;
  for (int c0 = first; c0 < n_pos; c0 += TS_WG) {
    const int j = c0 + lid;
    float s = -INFINITY;  // past the end: weight exp(-inf) = 0
    if (j < n_pos) {
      const int row = tables[offset + j / bs] * bs + j % bs;
      rows_loc[lid] = row;
      const ulong base = (layer_row0 + (ulong)row) * kv_dim + head;
      float dot = 0.0f;
      for (int i = 0; i < H; ++i) dot += q_loc[i] * kv_load(pool_k, base + i, f16);
      s = dot * scale;
      if (cap > 0.0f) s = cap * tanh(s * inv_cap);
    }
    // Every chunk holds a position, so m_new is finite; r = 0 on the first (m = -inf).
    const float m_new = fmax(m, group_max(s, scratch, lid));
    const float p = exp(s - m_new);
    p_loc[lid] = p;
    const float r = exp(m - m_new);
    sum = sum * r + group_sum(p, scratch, lid);  // its barriers publish p_loc and rows_loc
    const int n_chunk = min(TS_WG, n_pos - c0);
    for (int k = 0; k < ATT_DIMS_PER_ITEM; ++k) {
      const int d = lid + k * TS_WG;
      if (d < H) {
        float a = acc[k] * r;
        for (int jj = 0; jj < n_chunk; ++jj) {
          a += p_loc[jj] *
               kv_load(pool_v, (layer_row0 + (ulong)rows_loc[jj]) * kv_dim + head + d, f16);
        }
        acc[k] = a;
      }
    }
    m = m_new;
    barrier(CLK_LOCAL_MEM_FENCE);  // the next chunk rewrites p_loc and rows_loc
  }
  const float inv = 1.0f / sum;
  for (int k = 0; k < ATT_DIMS_PER_ITEM; ++k) {
    const int d = lid + k * TS_WG;
    if (d < H) o[d] = acc[k] * inv;
  }
}

#define ATTENTION_KERNEL(name, f16)                                                              \
  __kernel void name(__global const float* q, __global const uchar* pool_k,                     \
                     __global const uchar* pool_v, __global const int* row_meta,                \
                     __global const int* tables, __global float* out, ulong layer_row0,         \
                     int n_blocks, int bs, int kv_dim, int n_table, int group, int H,           \
                     float scale, float cap, float inv_cap) {                                   \
    __local float q_loc[ATT_MAX_H];                                                             \
    __local float p_loc[TS_WG];                                                                 \
    __local int rows_loc[TS_WG];                                                                \
    __local float scratch[TS_WG];                                                               \
    attention_body(q, pool_k, pool_v, row_meta, tables, out, layer_row0, n_blocks, bs, kv_dim,  \
                   n_table, group, H, scale, cap, inv_cap, f16, q_loc, p_loc, rows_loc,         \
                   scratch);                                                                    \
  }

ATTENTION_KERNEL(attention_f32, 0)
ATTENTION_KERNEL(attention_f16, 1)
