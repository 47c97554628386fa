// The device kernels' OpenCL C sources (src/device/cl/*.cl), embedded in the binary at build
// time (src/device/CMakeLists.txt writes each file into a raw string literal), so the driver
// compiles them at run time and no GPU toolchain is needed to build Tessera.
// Thread-safety: constant data.
#pragma once

namespace tessera::device::cl_source {

// cl/matmul.cl: matmul_f32, matmul_f16, matmul_q8_0, matmul_q4_0, matmul_q4_k, matmul_q6_k
extern const char kMatmul[];
extern const char kOps[];  // cl/ops.cl: rmsnorm, softmax, silu_mul, rope

}  // namespace tessera::device::cl_source
