// The device kernels' OpenCL C sources (src/device/cl/*.cl), embedded in the binary at build
// time (src/device/CMakeLists.txt writes each file into a raw string literal), so the driver
// compiles them at run time and no GPU toolchain is needed to build Tessera.
// Thread-safety: constant data.
#pragma once

namespace tessera::device::cl_source {

// cl/matmul.cl: matmul_f32, matmul_f16, matmul_q8_0, matmul_q4_0, matmul_q5_0, matmul_q4_k,
// matmul_q6_k
extern const char kMatmul[];
// cl/reduce.cl: group_sum, group_max (no kernels: compiled in front of ops and attention)
extern const char kReduce[];
// cl/ops.cl: rmsnorm, softmax, silu_mul, rope, add, add_bias, scale, softcap, gelu_tanh_mul,
// kv_store_f32, kv_store_f16
extern const char kOps[];
extern const char kAttention[];  // cl/attention.cl: attention_f32, attention_f16
// cl/bench.cl: bench_fill, bench_read, bench_fma (the device ceilings: bench/device_bench.h)
extern const char kBench[];

}  // namespace tessera::device::cl_source
