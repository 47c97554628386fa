#include "tessera/kernels/kernel_table.h"

#include <cstdlib>
#include <cstring>

#include "tessera/base/check.h"
#include "tessera/kernels/scalar_kernels.h"

namespace tessera::kernels {
namespace {

void set_row(KernelTable& t, DType d, DTypeKernels k) { t.dtypes[static_cast<uint32_t>(d)] = k; }

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
                            DType::kQ8_0, scalar::q4_0_q8_0_vec_dot});
  return t;
}

bool env_forces_scalar() {
  const char* v = std::getenv("TESSERA_FORCE_SCALAR");
  return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
}

KernelTable make_active_table() {
  KernelTable t = make_scalar_table();
  if (env_forces_scalar()) return t;
  // SIMD rows are installed here by CPUID dispatch (CPU performance work).
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
  const auto idx = static_cast<uint32_t>(t);
  TS_CHECK(idx < 32 && table.dtypes[idx].dot != nullptr);
  return table.dtypes[idx];
}

}  // namespace tessera::kernels
