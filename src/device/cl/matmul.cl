// Y[T, R] = X[T, C] . W[R, C]^T with W (F32, F16, Q8_0, Q4_0, Q5_0, Q4_K, Q6_K) in GGUF's row
// layout (row r at r * row_bytes) and X, Y in f32: the decode product (T = 1) and a tile of a
// batch or prefill chunk (T > 1) in one kernel. The scalar references
// (src/kernels/scalar_kernels.cpp, legacy_quants.cpp, *_dot) are the ground truth.
//
// Launch: global (R * TS_WG, ceil(T / TS_TILE)), local (TS_WG, 1). Work-group (r, tt) computes
// row r for tokens tt * TS_TILE .. +TS_TILE: its TS_WG work-items stride over the row (values
// for F32/F16, 32-value blocks for Q8_0/Q4_0/Q5_0, 32-value pieces of the 256-value
// super-blocks for Q4_K/Q6_K, so that a row of one super-block still spreads over 8
// work-items), each weight is read (and decoded) once for all the tile's tokens, and the
// partial sums meet in a tree reduction in local memory. TS_WG (a power of two) and TS_TILE are
// build options.
//
// Numerics: f32 products and sums in another order than the references' (each work-item's
// strided sum, then the tree). Q8_0/Q4_0/Q5_0, as their references: per block, the integer
// levels times x are summed first and scaled by d after. Q4_K/Q6_K, as theirs (kernels::scalar::
// q4_k_dot, q6_k_dot): each weight is first decoded to f32 with the same operations in the same
// order (no contraction into an FMA), so the decoded weights equal the CPU's bit for bit, then
// multiplied by x and summed.

#define QK 32

// Sums partial[t][*] over the work-group into partial[t][0] for every t of the tile.
inline void reduce_tile(__local float* partial, int lid) {
  for (int s = TS_WG / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s) {
      for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] += partial[t * TS_WG + lid + s];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
}

inline void store_tile(__local const float* partial, __global float* y, int r, int R, int t0,
                       int T, int lid) {
  if (lid < TS_TILE && t0 + lid < T) y[(ulong)(t0 + lid) * R + r] = partial[lid * TS_WG];
}

__kernel void matmul_f32(__global const uchar* w, ulong row_bytes, __global const float* x,
                         __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const float* wr = (__global const float*)(w + (ulong)r * row_bytes);
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  for (int c = lid; c < C; c += TS_WG) {
    const float wv = wr[c];
    for (int t = 0; t < nt; ++t) acc[t] += wv * x[(ulong)(t0 + t) * C + c];
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

__kernel void matmul_f16(__global const uchar* w, ulong row_bytes, __global const float* x,
                         __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  // vload_half is core OpenCL C: f16 storage needs no cl_khr_fp16.
  __global const half* wr = (__global const half*)(w + (ulong)r * row_bytes);
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  for (int c = lid; c < C; c += TS_WG) {
    const float wv = vload_half(c, wr);
    for (int t = 0; t < nt; ++t) acc[t] += wv * x[(ulong)(t0 + t) * C + c];
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

// Q8_0 block (34 bytes): f16 d, then 32 signed 8-bit levels; value = d * q.
__kernel void matmul_q8_0(__global const uchar* w, ulong row_bytes, __global const float* x,
                          __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const uchar* wr = w + (ulong)r * row_bytes;
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  for (int b = lid; b < C / QK; b += TS_WG) {
    __global const uchar* blk = wr + (ulong)b * 34;
    const float d = vload_half(0, (__global const half*)blk);
    __global const char* q = (__global const char*)(blk + 2);
    for (int t = 0; t < nt; ++t) {
      __global const float* xb = x + (ulong)(t0 + t) * C + (ulong)b * QK;
      float s = 0.0f;
      for (int j = 0; j < QK; ++j) s += (float)q[j] * xb[j];
      acc[t] += d * s;
    }
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

// Q4_0 block (18 bytes): f16 d, then 16 bytes; byte j holds level j in its low nibble and level
// j + 16 in its high nibble; value = d * (q - 8).
__kernel void matmul_q4_0(__global const uchar* w, ulong row_bytes, __global const float* x,
                          __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const uchar* wr = w + (ulong)r * row_bytes;
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  for (int b = lid; b < C / QK; b += TS_WG) {
    __global const uchar* blk = wr + (ulong)b * 18;
    const float d = vload_half(0, (__global const half*)blk);
    __global const uchar* q = blk + 2;
    for (int t = 0; t < nt; ++t) {
      __global const float* xb = x + (ulong)(t0 + t) * C + (ulong)b * QK;
      float s = 0.0f;
      for (int j = 0; j < QK / 2; ++j) {
        s += (float)((int)(q[j] & 0x0f) - 8) * xb[j];
        s += (float)((int)(q[j] >> 4) - 8) * xb[j + QK / 2];
      }
      acc[t] += d * s;
    }
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

// Q5_0 block (22 bytes): f16 d, 4 bytes qh (one little-endian 32-bit word, read byte by byte: a
// block is only 2-byte aligned), 16 bytes of low nibbles laid out as Q4_0's; level e is its low
// nibble plus bit e of qh as bit 4, value = d * (q - 16). Summed in the reference's order
// (kernels::scalar::q5_0_dot: elements 0..31, then times d).
__kernel void matmul_q5_0(__global const uchar* w, ulong row_bytes, __global const float* x,
                          __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const uchar* wr = w + (ulong)r * row_bytes;
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  for (int b = lid; b < C / QK; b += TS_WG) {
    __global const uchar* blk = wr + (ulong)b * 22;
    const float d = vload_half(0, (__global const half*)blk);
    const uint qh = (uint)blk[2] | (uint)blk[3] << 8 | (uint)blk[4] << 16 | (uint)blk[5] << 24;
    __global const uchar* q = blk + 6;
    float wq[QK];  // the levels minus 16, decoded once for the tile
    for (int e = 0; e < QK / 2; ++e) {
      wq[e] = (float)((int)((q[e] & 0x0f) | ((qh >> e) & 1) << 4) - 16);
      wq[e + QK / 2] = (float)((int)((q[e] >> 4) | ((qh >> (e + QK / 2)) & 1) << 4) - 16);
    }
    for (int t = 0; t < nt; ++t) {
      __global const float* xb = x + (ulong)(t0 + t) * C + (ulong)b * QK;
      float s = 0.0f;
      for (int e = 0; e < QK; ++e) s += wq[e] * xb[e];
      acc[t] += d * s;
    }
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

// ---- k-quants: 256-value super-blocks (src/kernels/kquant_blocks.h has the layouts) ----------
// A work-item takes 32-value piece u of the row: super-block u / KQ_PIECES, piece
// j = u % KQ_PIECES in it.

#define QK_K 256
#define KQ_PIECES (QK_K / QK)

// Q4_K block (144 bytes): f16 d, f16 dmin, 12 bytes of packed 6-bit (scale, min) pairs, 128
// bytes of 4-bit levels; piece j's values are d * sc[j] * q - dmin * m[j], q in 0..15, and its
// levels are the low (j even) or high (j odd) nibbles of qs[32 * (j / 2) ..].
// Piece j's (scale, min) from the packed field, as kernels::unpack_scale_min.
inline int2 q4_k_scale_min(__global const uchar* packed, int j) {
  if (j < 4) return (int2)(packed[j] & 63, packed[j + 4] & 63);
  return (int2)((packed[j + 4] & 15) | ((packed[j - 4] >> 6) << 4),
                  (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4));
}

// The 32 f32 values of piece j of a Q4_K block, as kernels::scalar::q4_k_to_float computes them.
inline void q4_k_decode(__global const uchar* blk, int j, float* out) {
#pragma OPENCL FP_CONTRACT OFF
  const float d = vload_half(0, (__global const half*)blk);
  const float dmin = vload_half(1, (__global const half*)blk);
  const int2 sm = q4_k_scale_min(blk + 4, j);
  const float step = d * (float)sm.x;
  const float offset = dmin * (float)sm.y;
  __global const uchar* q = blk + 16 + 32 * (j / 2);
  const int shift = 4 * (j & 1);
  for (int l = 0; l < QK; ++l) {
    const float scaled = step * (float)((q[l] >> shift) & 15);
    out[l] = scaled - offset;
  }
}

// Q6_K block (210 bytes): 128 bytes ql (low 4 bits), 64 bytes qh (high 2 bits), 16 int8 scales
// (one per 16 values), f16 d; values are d * scales[e / 16] * (q - 32), q in 0..63. Piece j is
// quarter k = j % 4 of half h = j / 4: for l < 32, the low (k < 2) or high nibble of
// ql[64h + 32 (k % 2) + l] and bits 2k, 2k + 1 of qh[32h + l].
// The 32 f32 values of piece j, as kernels::scalar::q6_k_to_float computes them.
inline void q6_k_decode(__global const uchar* blk, int j, float* out) {
#pragma OPENCL FP_CONTRACT OFF
  const int h = j / 4;
  const int k = j % 4;
  const float d = vload_half(0, (__global const half*)(blk + 208));
  __global const char* sc = (__global const char*)(blk + 192) + 8 * h + 2 * k;
  __global const uchar* ql = blk + 64 * h + 32 * (k & 1);
  __global const uchar* qh = blk + 128 + 32 * h;
  const int lo_shift = 4 * (k >> 1);
  const int hi_shift = 2 * k;
  for (int l = 0; l < QK; ++l) {
    const int q = ((ql[l] >> lo_shift) & 15) | (((qh[l] >> hi_shift) & 3) << 4);
    const float step = d * (float)sc[l / 16];
    out[l] = step * (float)(q - 32);
  }
}

__kernel void matmul_q4_k(__global const uchar* w, ulong row_bytes, __global const float* x,
                          __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const uchar* wr = w + (ulong)r * row_bytes;
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  float wv[QK];
  for (int u = lid; u < C / QK; u += TS_WG) {
    q4_k_decode(wr + (ulong)(u / KQ_PIECES) * 144, u % KQ_PIECES, wv);  // once for the tile
    for (int t = 0; t < nt; ++t) {
      __global const float* xp = x + (ulong)(t0 + t) * C + (ulong)u * QK;
      float s = 0.0f;
      for (int l = 0; l < QK; ++l) s += wv[l] * xp[l];
      acc[t] += s;
    }
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}

__kernel void matmul_q6_k(__global const uchar* w, ulong row_bytes, __global const float* x,
                          __global float* y, int R, int C, int T) {
  __local float partial[TS_TILE * TS_WG];
  const int r = get_group_id(0);
  const int lid = get_local_id(0);
  const int t0 = get_group_id(1) * TS_TILE;
  const int nt = min(TS_TILE, T - t0);
  __global const uchar* wr = w + (ulong)r * row_bytes;
  float acc[TS_TILE];
  for (int t = 0; t < TS_TILE; ++t) acc[t] = 0.0f;
  float wv[QK];
  for (int u = lid; u < C / QK; u += TS_WG) {
    q6_k_decode(wr + (ulong)(u / KQ_PIECES) * 210, u % KQ_PIECES, wv);  // once for the tile
    for (int t = 0; t < nt; ++t) {
      __global const float* xp = x + (ulong)(t0 + t) * C + (ulong)u * QK;
      float s = 0.0f;
      for (int l = 0; l < QK; ++l) s += wv[l] * xp[l];
      acc[t] += s;
    }
  }
  for (int t = 0; t < TS_TILE; ++t) partial[t * TS_WG + lid] = acc[t];
  reduce_tile(partial, lid);
  store_tile(partial, y, r, R, t0, T, lid);
}
