// DType: element types of tensors, numbered as GGUF/GGML numbers them so file type ids map
// directly. Each type is stored in blocks of `block_size` elements taking `block_bytes` bytes.
// Only types with `supported == true` have kernels; the rest are known by name so error
// messages can say which type a file used.
// Thread-safety: immutable tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace tessera::kernels {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
};

struct DTypeInfo {
  DType type;
  std::string_view name;  // as GGML names it: "f32", "q4_0", "q4_K"
  int64_t block_size;     // elements per block
  int64_t block_bytes;    // bytes per block
  bool supported;         // Tessera has kernels for it
};

// Info for a GGML type id, or nullopt for an id GGML does not define.
std::optional<DTypeInfo> dtype_info(uint32_t ggml_type_id);
// Info for a known type. Precondition: `t` is one of the enumerators above.
const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
// Parses a name like "q8_0" or "Q8_0" (case-insensitive). nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes taken by `n_elements` values of type `t`. Precondition: n_elements % block_size == 0.
size_t dtype_row_bytes(DType t, int64_t n_elements);

}  // namespace tessera::kernels
