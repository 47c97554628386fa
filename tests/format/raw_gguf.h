// RawGguf: writes GGUF bytes field by field, straight from the specification and independent of
// GgufWriter, so tests can build both valid files (to check the writer byte for byte) and
// hostile ones (wrong counts, lengths, offsets) that no writer would produce.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace tessera::testing {

class RawGguf {
 public:
  template <typename T>
  RawGguf& put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
    return *this;
  }
  RawGguf& u8(uint8_t v) { return put(v); }
  RawGguf& u32(uint32_t v) { return put(v); }
  RawGguf& u64(uint64_t v) { return put(v); }
  RawGguf& str(std::string_view s) {
    u64(s.size());
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    bytes_.insert(bytes_.end(), p, p + s.size());
    return *this;
  }
  RawGguf& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
    const char magic[4] = {'G', 'G', 'U', 'F'};
    const auto* p = reinterpret_cast<const std::byte*>(magic);
    bytes_.insert(bytes_.end(), p, p + 4);
    return u32(version).u64(n_tensors).u64(n_kv);
  }
  // A metadata key and its value type; the caller appends the value.
  RawGguf& key(std::string_view k, uint32_t type) { return str(k).u32(type); }
  RawGguf& kv_u32(std::string_view k, uint32_t v) { return key(k, 4).u32(v); }
  RawGguf& kv_string(std::string_view k, std::string_view v) { return key(k, 8).str(v); }
  RawGguf& tensor(std::string_view name, const std::vector<uint64_t>& ne, uint32_t type,
                  uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) u64(n);
    return u32(type).u64(offset);
  }
  RawGguf& pad(size_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(std::byte{0});
    return *this;
  }
  RawGguf& fill(size_t n, std::byte b = std::byte{0}) {
    bytes_.insert(bytes_.end(), n, b);
    return *this;
  }
  const std::vector<std::byte>& bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::byte> bytes_;
};

}  // namespace tessera::testing
