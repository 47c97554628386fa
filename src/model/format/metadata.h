// Metadata: the typed key/value store of a model file (GGUF metadata, or the equivalent keys
// synthesized for llama2.c checkpoints). Keeps keys in insertion order so a file written back
// reads the same. Values carry their GGUF type; numeric getters convert between integer types
// when the value fits and fail with kInvalidArgument otherwise.
// Thread-safety: immutable once built; concurrent reads are safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "tessera/base/status.h"

namespace tessera::model {

// Value types, numbered as in the GGUF specification.
enum class GgufType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
std::string_view gguf_type_name(GgufType t);

struct GgufArray;

class GgufValue {
 public:
  GgufValue() = default;
  static GgufValue u8(uint8_t v) { return {GgufType::kUint8, static_cast<uint64_t>(v)}; }
  static GgufValue i8(int8_t v) { return {GgufType::kInt8, static_cast<int64_t>(v)}; }
  static GgufValue u16(uint16_t v) { return {GgufType::kUint16, static_cast<uint64_t>(v)}; }
  static GgufValue i16(int16_t v) { return {GgufType::kInt16, static_cast<int64_t>(v)}; }
  static GgufValue u32(uint32_t v) { return {GgufType::kUint32, static_cast<uint64_t>(v)}; }
  static GgufValue i32(int32_t v) { return {GgufType::kInt32, static_cast<int64_t>(v)}; }
  static GgufValue u64(uint64_t v) { return {GgufType::kUint64, v}; }
  static GgufValue i64(int64_t v) { return {GgufType::kInt64, v}; }
  static GgufValue f32(float v) { return {GgufType::kFloat32, static_cast<double>(v)}; }
  static GgufValue f64(double v) { return {GgufType::kFloat64, v}; }
  static GgufValue boolean(bool v) { return {GgufType::kBool, v}; }
  static GgufValue string(std::string v) { return {GgufType::kString, std::move(v)}; }
  static GgufValue array(GgufArray a);

  GgufType type() const { return type_; }
  bool is_integer() const;
  bool is_float() const { return type_ == GgufType::kFloat32 || type_ == GgufType::kFloat64; }

  // Conversions; each fails (kInvalidArgument) on a type mismatch or a value that does not fit.
  Result<int64_t> as_int() const;
  Result<uint64_t> as_uint() const;
  Result<double> as_float() const;  // accepts integer values too
  Result<bool> as_bool() const;
  Result<std::string_view> as_string() const;
  Result<const GgufArray*> as_array() const;

  // Raw access for writers: the stored alternative.
  const std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string,
                     std::shared_ptr<const GgufArray>>&
  raw() const {
    return v_;
  }

  // Short human-readable rendering (arrays abbreviated), for `tessera info`.
  std::string to_display_string(size_t max_items = 8) const;

 private:
  template <typename V>
  GgufValue(GgufType t, V v) : type_(t), v_(std::move(v)) {}
  GgufType type_ = GgufType::kUint8;
  std::variant<std::monostate, uint64_t, int64_t, double, bool, std::string,
               std::shared_ptr<const GgufArray>>
      v_;
};

// An array value: all items share `elem_type` (nested arrays allowed, as in GGUF).
struct GgufArray {
  GgufType elem_type = GgufType::kUint8;
  std::vector<GgufValue> items;
};

class Metadata {
 public:
  // Sets `key`, replacing an existing value in place (order kept).
  void set(std::string key, GgufValue value);
  bool contains(std::string_view key) const { return find(key) != nullptr; }
  const GgufValue* find(std::string_view key) const;
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, GgufValue>>& entries() const { return entries_; }

  // Typed getters: kNotFound if absent, kInvalidArgument (naming the key) on a type mismatch.
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  Result<std::string> get_string(std::string_view key) const;
  Result<const GgufArray*> get_array(std::string_view key) const;

  // Defaulted getters: `fallback` if absent; a present value of the wrong type is still an error.
  Result<int64_t> get_int_or(std::string_view key, int64_t fallback) const;
  Result<double> get_float_or(std::string_view key, double fallback) const;
  Result<bool> get_bool_or(std::string_view key, bool fallback) const;
  Result<std::string> get_string_or(std::string_view key, std::string fallback) const;

 private:
  std::vector<std::pair<std::string, GgufValue>> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace tessera::model
