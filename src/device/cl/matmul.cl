// Y[T, R] = X[T, C] . W[R, C]^T with W in GGUF's row layout (row r at r * row_bytes) and X, Y
// in f32: the decode product (T = 1) and a tile of a batch or prefill chunk (T > 1) in one
// kernel. The scalar references (src/kernels/scalar_kernels.cpp, *_dot) are the ground truth.
//
// Launch: global (R * TS_WG, ceil(T / TS_TILE)), local (TS_WG, 1). Work-group (r, tt) computes
// row r for tokens tt * TS_TILE .. +TS_TILE: its TS_WG work-items stride over the row (values
// for F32/F16, 32-value blocks for Q8_0/Q4_0), each weight is read once for all the tile's
// tokens, and the partial sums meet in a tree reduction in local memory. TS_WG (a power of two)
// and TS_TILE are build options.
//
// Numerics: f32 products and sums in another order than the references' (each work-item's
// strided sum, then the tree); per quantized block, as the reference, the block's integer
// levels times x are summed first and scaled by d after.

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
