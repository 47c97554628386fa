// ByteReader: a bounds-checked little-endian cursor over untrusted bytes, used by the file-format
// parsers. Every read checks the bytes left first and fails with kCorruptData (naming what was
// being read, the offset, and how many bytes were needed and left); nothing reads past the end.
// Thread-safety: a ByteReader is used by one thread; the bytes must outlive it.
#pragma once

#include <fmt/format.h>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>

#include "tessera/base/status.h"

namespace tessera::model {

// Overflow-checked arithmetic for sizes computed from untrusted fields: false on overflow.
template <typename T>
[[nodiscard]] bool checked_mul(T a, T b, T* out) {
  return !__builtin_mul_overflow(a, b, out);
}
template <typename T>
[[nodiscard]] bool checked_add(T a, T b, T* out) {
  return !__builtin_add_overflow(a, b, out);
}

class ByteReader {
 public:
  static_assert(std::endian::native == std::endian::little,
                "file formats are little-endian; a big-endian host needs byte swapping here");

  explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  size_t position() const { return pos_; }
  size_t size() const { return bytes_.size(); }
  size_t remaining() const { return bytes_.size() - pos_; }

  // Reads one little-endian integer or float. `what` names the field for the error message.
  template <typename T>
  Result<T> read(std::string_view what) {
    static_assert(std::is_arithmetic_v<T>);
    TS_RETURN_IF_ERROR(require(sizeof(T), what));
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Returns the next `n` bytes as a view (no copy) and advances past them.
  Result<std::span<const std::byte>> take(uint64_t n, std::string_view what) {
    TS_RETURN_IF_ERROR(require(n, what));
    auto out = bytes_.subspan(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return out;
  }

  // Fails unless at least `n` bytes are left.
  Status require(uint64_t n, std::string_view what) const {
    if (n <= remaining()) return Status::ok();
    return corrupt_data(fmt::format("unexpected end of data at offset {} reading {}: needed {} "
                                    "bytes, only {} left (file size {})",
                                    pos_, what, n, remaining(), bytes_.size()));
  }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

}  // namespace tessera::model
