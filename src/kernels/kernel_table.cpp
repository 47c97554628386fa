#include "tessera/kernels/kernel_table.h"

#include <cstdlib>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/base/log.h"
#include "tessera/kernels/avx2_kernels.h"
#include "tessera/kernels/avx512_kernels.h"
#include "tessera/kernels/cpu_features.h"
#include "tessera/kernels/iquants.h"
#include "tessera/kernels/kquants.h"
#include "tessera/kernels/legacy_quants.h"
#include "tessera/kernels/kquants_low.h"
#include "tessera/kernels/scalar_kernels.h"
#include "tessera/kernels/sparse_quants.h"

namespace tessera::kernels {
namespace {

void set_row(KernelTable& t, DType d, DTypeKernels k) { t.dtypes[dtype_slot(d)] = k; }

KernelTable make_scalar_table() {
  KernelTable t;
  t.isa = "scalar";
  // dtype: to_float, from_float, dot (f32 activations), vec_dot_type, vec_dot.
  set_row(t, DType::kF32, {scalar::f32_to_float, scalar::f32_from_float, scalar::f32_dot,
                           DType::kF32, scalar::f32_vec_dot});
  set_row(t, DType::kF16, {scalar::f16_to_float, scalar::f16_from_float, scalar::f16_dot,
                           DType::kF32, scalar::f16_vec_dot});
  set_row(t, DType::kBF16, {scalar::bf16_to_float, scalar::bf16_from_float, scalar::bf16_dot,
                            DType::kF32, scalar::bf16_vec_dot});
  set_row(t, DType::kQ8_0, {scalar::q8_0_to_float, scalar::q8_0_from_float, scalar::q8_0_dot,
                            DType::kQ8_0, scalar::q8_0_q8_0_vec_dot});
  set_row(t, DType::kQ4_0, {scalar::q4_0_to_float, scalar::q4_0_from_float, scalar::q4_0_dot,
                            DType::kQ8_0, scalar::q4_0_q8_0_vec_dot,
                            scalar::q4_0_q8_0_vec_dot_tile});
  set_row(t, DType::kQ4_K, {scalar::q4_k_to_float, scalar::q4_k_from_float, scalar::q4_k_dot,
                            DType::kQ8_K, scalar::q4_k_q8_k_vec_dot});
  set_row(t, DType::kQ5_K, {scalar::q5_k_to_float, scalar::q5_k_from_float, scalar::q5_k_dot,
                            DType::kQ8_K, scalar::q5_k_q8_k_vec_dot});
  set_row(t, DType::kQ6_K, {scalar::q6_k_to_float, scalar::q6_k_from_float, scalar::q6_k_dot,
                            DType::kQ8_K, scalar::q6_k_q8_k_vec_dot});
  set_row(t, DType::kQ8_K, {scalar::q8_k_to_float, scalar::q8_k_from_float, scalar::q8_k_dot,
                            DType::kF32, scalar::q8_k_vec_dot});
  install_scalar_legacy_quant_rows(t);  // Q4_1, Q5_0, Q5_1
  install_scalar_kquant_low_rows(t);  // Q2_K, Q3_K
  install_scalar_iquant_rows(t);  // IQ4_NL, IQ4_XS
  install_scalar_sparse_rows(t);  // F16_2of4, Q8_0_2of4, Q4_0_2of4
  t.attention_row = scalar::attention_row;
  t.attention_rows = scalar::attention_rows;
  t.silu_mul = scalar::silu_mul;
  t.axpy = scalar::axpy;
  t.fixed_dot = [](const float* a, const float* b, int64_t n) { return scalar::f32_dot(a, b, n); };
  t.q4_0x16_gemm = scalar::q4_0x16_q8_0_gemm;  // the oracles; forced-scalar runs test the layouts
  t.q4_kx16_gemm = scalar::q4_kx16_q8_k_gemm;
  t.q8_0x16_gemm = scalar::q8_0x16_q8_0_gemm;
  t.iq4_nlx16_gemm = scalar::iq4_nlx16_q8_0_gemm;
  t.q4_1x16_gemm = scalar::q4_1x16_q8_0_gemm;
  t.q5_0x16_gemm = scalar::q5_0x16_q8_0_gemm;
  t.q5_1x16_gemm = scalar::q5_1x16_q8_0_gemm;
  t.q2_kx16_gemm = scalar::q2_kx16_q8_k_gemm;
  t.q6_kx16_gemm = scalar::q6_kx16_q8_k_gemm;
  t.f16_2of4x16_gemm = scalar::f16_2of4x16_f32_gemm;
  t.f16x16_gemm = scalar::f16x16_f32_gemm;
  t.q8_0_2of4x16_gemm = scalar::q8_0_2of4x16_q8_0_gemm;
  return t;
}

bool env_forces_scalar() {
  const char* v = std::getenv("TESSERA_FORCE_SCALAR");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

// Kernel sets in increasing order; TESSERA_ISA=scalar|avx2|avx512 caps the one CPUID would pick
// (side-by-side benchmarks, bisecting a numerics difference). Unset means no cap.
enum class IsaLevel { kScalar, kAvx2, kAvx512 };

IsaLevel env_isa_cap() {
  const char* v = std::getenv("TESSERA_ISA");
  if (v == nullptr || *v == '\0') return IsaLevel::kAvx512;
  if (std::strcmp(v, "scalar") == 0) return IsaLevel::kScalar;
  if (std::strcmp(v, "avx2") == 0) return IsaLevel::kAvx2;
  if (std::strcmp(v, "avx512") == 0) return IsaLevel::kAvx512;
  log_warn("TESSERA_ISA='{}' is not one of scalar, avx2, avx512; ignoring it", v);
  return IsaLevel::kAvx512;
}

KernelTable make_active_table() {
  KernelTable t = make_scalar_table();
  if (env_forces_scalar()) return t;
  // CPUID dispatch: each ISA level adds the rows it has on top of the level below.
  const CpuFeatures& cpu = cpu_features();
  const IsaLevel cap = env_isa_cap();
  if (cap >= IsaLevel::kAvx2 && cpu.has_avx2_set()) {
    install_avx2_rows(t);
    install_avx2_kquant_rows(t);
    install_avx2_legacy_quant_rows(t);
    install_avx2_kquant_low_rows(t);
    install_avx2_iquant_rows(t);
    install_avx2_sparse_rows(t);
    t.isa = "avx2";
  }
  if (cap >= IsaLevel::kAvx512 && cpu.has_avx512_set()) {
    install_avx512_rows(t);
    install_avx512_legacy_quant_rows(t);
    install_avx512_kquant_low_rows(t);
    install_avx512_iquant_rows(t);
    install_avx512_sparse_rows(t);
    // Without VBMI (Skylake-X, Cascade Lake) Q8_0_2of4 keeps the AVX2 gather kernel.
    if (cpu.avx512_vbmi) t.q8_0_2of4x16_gemm = avx512vbmi::q8_0_2of4x16_q8_0_gemm;
    t.isa = "avx512";
  }
  return t;
}

}  // namespace

const KernelTable& scalar_kernel_table() {
  static const KernelTable table = make_scalar_table();
  return table;
}

const KernelTable& kernel_table() {
  static const KernelTable table = make_active_table();
  return table;
}

const DTypeKernels& kernels_for(const KernelTable& table, DType t) {
  const uint32_t idx = dtype_slot(t);
  TS_CHECK(idx < kDTypeSlots && table.dtypes[idx].dot != nullptr);
  return table.dtypes[idx];
}

}  // namespace tessera::kernels
