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
  // Tessera's own types, outside GGML's range (GGML numbers its types from 0 and had reached 42
  // by 2026; 1024 leaves it room). Only Tessera reads them; llama.cpp refuses a file holding one
  // ("invalid ggml type"). 2:4 sparse layouts (sparse_blocks.h, docs/QUANTIZATION.md).
  kF16_2of4 = 1024,
  kQ8_0_2of4 = 1025,
  kQ4_0_2of4 = 1026,
};

// Number of rows of a per-dtype table indexed by dtype_slot.
constexpr uint32_t kDTypeSlots = 48;
// A dense index for per-dtype tables: GGML ids below 40 map to themselves, Tessera's own ids
// (1024 + k) to 40 + k. Precondition: `t` is one of the enumerators above.
constexpr uint32_t dtype_slot(DType t) {
  const auto id = static_cast<uint32_t>(t);
  return id < 1024 ? id : 40 + (id - 1024);
}

struct DTypeInfo {
  DType type;
  std::string_view name;  // as GGML names it: "f32", "q4_0", "q4_K"
  int64_t block_size;     // elements per block
  int64_t block_bytes;    // bytes per block
  bool supported;         // Tessera has kernels for it
};

// Info for a type id as files store it (GGML's or Tessera's own), or nullopt for an unknown id.
std::optional<DTypeInfo> dtype_info(uint32_t ggml_type_id);
// Info for a known type. Precondition: `t` is one of the enumerators above.
const DTypeInfo& dtype_info(DType t);
std::string_view dtype_name(DType t);
// Whether `t` is one of Tessera's own types (not readable by GGML-based tools).
inline bool is_tessera_dtype(DType t) { return static_cast<uint32_t>(t) >= 1024; }
// Every known type, GGML's in id order, then Tessera's.
const DTypeInfo* dtype_infos_begin();
const DTypeInfo* dtype_infos_end();
// Parses a name like "q8_0" or "Q8_0" (case-insensitive). nullopt if unknown.
std::optional<DType> dtype_from_name(std::string_view name);

// Bytes taken by `n_elements` values of type `t`. Precondition: n_elements % block_size == 0.
size_t dtype_row_bytes(DType t, int64_t n_elements);

}  // namespace tessera::kernels
