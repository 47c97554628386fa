// UTF-8 helpers for the tokenizers: sequence lengths and code point encoding. They never read
// past the end of their input; malformed bytes count as one-byte characters, so every byte of a
// string is visited exactly once and nothing is lost.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::model {

// Length of the UTF-8 sequence that starts with byte `lead`, judged from that byte alone:
// 1 for ASCII, continuation bytes and invalid lead bytes; 2-4 for multi-byte leads.
inline size_t utf8_sequence_length(uint8_t lead) {
  if (lead < 0xC0) return 1;  // ASCII, or a stray continuation byte
  if (lead < 0xE0) return 2;
  if (lead < 0xF0) return 3;
  if (lead < 0xF8) return 4;
  return 1;
}

// Length of the character starting at `pos` in `s`: the lead byte's sequence length when that
// many bytes follow and all are continuation bytes, else 1 (a malformed byte stands alone, so
// it cannot swallow the valid characters after it). Precondition: pos < s.size().
inline size_t utf8_char_length(std::string_view s, size_t pos) {
  const size_t n = utf8_sequence_length(static_cast<uint8_t>(s[pos]));
  if (n > s.size() - pos) return 1;
  for (size_t i = 1; i < n; ++i) {
    if ((static_cast<uint8_t>(s[pos + i]) & 0xC0) != 0x80) return 1;
  }
  return n;
}

// Appends the UTF-8 encoding of code point `cp` (<= 0x10FFFF) to `out`.
inline void utf8_append(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// Decodes the character at `pos` (of `len` bytes, from utf8_char_length). Returns the code point,
// or -1 for a malformed one-byte character (a stray continuation or lead byte).
inline int32_t utf8_decode(std::string_view s, size_t pos, size_t len) {
  const auto b = [&](size_t i) { return static_cast<uint8_t>(s[pos + i]); };
  if (len == 1) return b(0) < 0x80 ? b(0) : -1;
  uint32_t cp = b(0) & (0xFF >> (len + 1));
  for (size_t i = 1; i < len; ++i) {
    if ((b(i) & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (b(i) & 0x3F);
  }
  return static_cast<int32_t>(cp);
}

// The string "▁" (U+2581), SentencePiece's escaped space.
inline constexpr std::string_view kSpmSpace = "\xE2\x96\x81";

}  // namespace tessera::model
