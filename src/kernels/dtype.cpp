#include "tessera/kernels/dtype.h"

#include <array>
#include <cctype>

#include "tessera/base/check.h"

namespace tessera::kernels {
namespace {

// Block geometry from the GGUF specification; "supported" marks the types with kernels.
constexpr std::array kTypes = {
    DTypeInfo{DType::kF32, "f32", 1, 4, true},
    DTypeInfo{DType::kF16, "f16", 1, 2, true},
    DTypeInfo{DType::kQ4_0, "q4_0", 32, 18, true},
    DTypeInfo{DType::kQ4_1, "q4_1", 32, 20, true},
    DTypeInfo{DType::kQ5_0, "q5_0", 32, 22, true},
    DTypeInfo{DType::kQ5_1, "q5_1", 32, 24, true},
    DTypeInfo{DType::kQ8_0, "q8_0", 32, 34, true},
    DTypeInfo{DType::kQ8_1, "q8_1", 32, 36, false},
    DTypeInfo{DType::kQ2_K, "q2_K", 256, 84, true},
    DTypeInfo{DType::kQ3_K, "q3_K", 256, 110, true},
    DTypeInfo{DType::kQ4_K, "q4_K", 256, 144, true},
    DTypeInfo{DType::kQ5_K, "q5_K", 256, 176, true},
    DTypeInfo{DType::kQ6_K, "q6_K", 256, 210, true},
    DTypeInfo{DType::kQ8_K, "q8_K", 256, 292, true},
    DTypeInfo{DType::kIQ2_XXS, "iq2_xxs", 256, 66, false},
    DTypeInfo{DType::kIQ2_XS, "iq2_xs", 256, 74, false},
    DTypeInfo{DType::kIQ3_XXS, "iq3_xxs", 256, 98, false},
    DTypeInfo{DType::kIQ1_S, "iq1_s", 256, 50, false},
    DTypeInfo{DType::kIQ4_NL, "iq4_nl", 32, 18, true},
    DTypeInfo{DType::kIQ3_S, "iq3_s", 256, 110, false},
    DTypeInfo{DType::kIQ2_S, "iq2_s", 256, 82, false},
    DTypeInfo{DType::kIQ4_XS, "iq4_xs", 256, 136, true},
    DTypeInfo{DType::kI8, "i8", 1, 1, false},
    DTypeInfo{DType::kI16, "i16", 1, 2, false},
    DTypeInfo{DType::kI32, "i32", 1, 4, false},
    DTypeInfo{DType::kI64, "i64", 1, 8, false},
    DTypeInfo{DType::kF64, "f64", 1, 8, false},
    DTypeInfo{DType::kIQ1_M, "iq1_m", 256, 56, false},
    DTypeInfo{DType::kBF16, "bf16", 1, 2, true},
    DTypeInfo{DType::kTQ1_0, "tq1_0", 256, 54, false},
    DTypeInfo{DType::kTQ2_0, "tq2_0", 256, 66, false},
    // 2:4 sparse (sparse_blocks.h): 32 values in 36 bytes, 32 in 22, 64 in 26.
    DTypeInfo{DType::kF16_2of4, "f16_2of4", 32, 36, true},
    DTypeInfo{DType::kQ8_0_2of4, "q8_0_2of4", 32, 22, true},
    DTypeInfo{DType::kQ4_0_2of4, "q4_0_2of4", 64, 26, true},
};
static_assert(dtype_slot(DType::kQ4_0_2of4) < kDTypeSlots);

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace

std::optional<DTypeInfo> dtype_info(uint32_t ggml_type_id) {
  for (const auto& t : kTypes) {
    if (static_cast<uint32_t>(t.type) == ggml_type_id) return t;
  }
  return std::nullopt;
}

const DTypeInfo& dtype_info(DType t) {
  for (const auto& info : kTypes) {
    if (info.type == t) return info;
  }
  TS_CHECK_MSG(false, "unknown DType");
  __builtin_unreachable();
}

std::string_view dtype_name(DType t) { return dtype_info(t).name; }

const DTypeInfo* dtype_infos_begin() { return kTypes.data(); }
const DTypeInfo* dtype_infos_end() { return kTypes.data() + kTypes.size(); }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& t : kTypes) {
    if (iequals(t.name, name)) return t.type;
  }
  return std::nullopt;
}

size_t dtype_row_bytes(DType t, int64_t n_elements) {
  const auto& info = dtype_info(t);
  TS_CHECK(n_elements % info.block_size == 0);
  return static_cast<size_t>(n_elements / info.block_size * info.block_bytes);
}

}  // namespace tessera::kernels
