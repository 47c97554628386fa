// The device's ceilings, the twins of the CPU's probes (bench/read_probe.h, kernels/probe.h):
// bench_read_* stream a buffer (read bandwidth), bench_fma_* run independent FMA chains in
// registers (f32 FLOP/s). Each comes in the shapes that suit a GPU and a CPU driver, and the
// host keeps the faster (bench/device_bench.cpp). Each work-item writes one float at the end,
// so no compiler may drop the loads or the arithmetic. bench_fill writes the buffer first, so
// every page is backed by memory (an untouched page may read as the shared zero page, from
// cache, on a CPU driver).

// src[i] = a small value that depends on i; global: any size (grid-stride loop).
__kernel void bench_fill(__global float4* src, ulong n4) {
  for (ulong i = get_global_id(0); i < n4; i += get_global_size(0)) {
    src[i] = (float4)((float)(i & 1023u)) * 1e-3f;
  }
}

// Both read kernels: work-group g reads float4s [g * per_group, (g + 1) * per_group) of src,
// per_group a multiple of the work-group's size; out: one float per work-item.
//
// Coalesced (a GPU's shape): consecutive work-items read consecutive float4s.
__kernel void bench_read_coalesced(__global const float4* src, uint per_group,
                                   __global float* out) {
  const __global float4* slab = src + (ulong)get_group_id(0) * per_group;
  const uint lsize = get_local_size(0);
  float4 acc0 = (float4)(0.0f);
  float4 acc1 = (float4)(0.0f);
  uint i = get_local_id(0);
  for (; i + lsize < per_group; i += 2 * lsize) {
    acc0 += slab[i];
    acc1 += slab[i + lsize];
  }
  if (i < per_group) acc0 += slab[i];
  const float4 acc = acc0 + acc1;
  out[get_global_id(0)] = acc.x + acc.y + acc.z + acc.w;
}

// Blocked (a CPU driver's shape: it runs a work-group's work-items one after another on one
// core, so each should stream a contiguous run): work-item l reads its own per_group / size
// consecutive float4s.
__kernel void bench_read_blocked(__global const float4* src, uint per_group,
                                 __global float* out) {
  const uint per_item = per_group / get_local_size(0);
  const __global float4* run =
      src + (ulong)get_group_id(0) * per_group + (ulong)get_local_id(0) * per_item;
  float4 acc0 = (float4)(0.0f);
  float4 acc1 = (float4)(0.0f);
  float4 acc2 = (float4)(0.0f);
  float4 acc3 = (float4)(0.0f);
  uint i = 0;
  for (; i + 3 < per_item; i += 4) {  // four chains of adds: latency never bounds the loads
    acc0 += run[i];
    acc1 += run[i + 1];
    acc2 += run[i + 2];
    acc3 += run[i + 3];
  }
  for (; i < per_item; ++i) acc0 += run[i];
  const float4 acc = (acc0 + acc1) + (acc2 + acc3);
  out[get_global_id(0)] = acc.x + acc.y + acc.z + acc.w;
}

// 8 independent chains of T fma (8 x lanes(T) f32 lanes, 2 FLOPs each) per iteration, n_iter
// iterations. float4 suits a GPU (its lanes are work-items); float16 fills a CPU's AVX-512
// register per chain. a and b are arguments, so the chains cannot be folded; x -> b / (1 - a)
// stays finite for |a| < 1. LANES: a T of distinct values (lanes that differ cannot be folded
// into one scalar chain); SUM4 folds the T `sum` to a float4.
#define TS_BENCH_FMA(NAME, T, LANES, SUM4)                                          \
  __kernel void NAME(__global float* out, uint n_iter, float a, float b) {          \
    const float s = (float)(get_global_id(0) & 255u) * 1e-3f;                       \
    const T av = (T)(a);                                                            \
    const T bv = (T)(b);                                                            \
    const T lanes = (LANES) * 1e-4f;                                                \
    T x0 = (T)(s) + lanes;                                                          \
    T x1 = (T)(s + 0.01f) + lanes;                                                  \
    T x2 = (T)(s + 0.02f) + lanes;                                                  \
    T x3 = (T)(s + 0.03f) + lanes;                                                  \
    T x4 = (T)(s + 0.04f) + lanes;                                                  \
    T x5 = (T)(s + 0.05f) + lanes;                                                  \
    T x6 = (T)(s + 0.06f) + lanes;                                                  \
    T x7 = (T)(s + 0.07f) + lanes;                                                  \
    for (uint i = 0; i < n_iter; ++i) {                                             \
      x0 = fma(x0, av, bv);                                                         \
      x1 = fma(x1, av, bv);                                                         \
      x2 = fma(x2, av, bv);                                                         \
      x3 = fma(x3, av, bv);                                                         \
      x4 = fma(x4, av, bv);                                                         \
      x5 = fma(x5, av, bv);                                                         \
      x6 = fma(x6, av, bv);                                                         \
      x7 = fma(x7, av, bv);                                                         \
    }                                                                               \
    const T sum = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));                \
    const float4 s4 = SUM4;                                                         \
    out[get_global_id(0)] = s4.x + s4.y + s4.z + s4.w;                              \
  }

TS_BENCH_FMA(bench_fma_float4, float4, (float4)(0.0f, 1.0f, 2.0f, 3.0f), sum)
TS_BENCH_FMA(bench_fma_float16, float16,
             (float16)(0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f, 7.0f, 8.0f, 9.0f, 10.0f, 11.0f,
                       12.0f, 13.0f, 14.0f, 15.0f),
             (sum.lo.lo + sum.lo.hi) + (sum.hi.lo + sum.hi.hi))
