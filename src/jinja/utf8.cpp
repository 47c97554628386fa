#include "tessera/jinja/utf8.h"

#include <cstring>

namespace tessera::jinja {

size_t utf8_char_len(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x06 ? 2 : (b0 >> 4) == 0x0e ? 3 : (b0 >> 3) == 0x1e ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 1;
  }
  return n;
}

size_t utf8_char_start_before(std::string_view s, size_t end) {
  size_t b = end - 1;
  // Back over continuation bytes (at most 3), then keep it only if it decodes to reach `end`.
  while (b > 0 && end - b < 4 && (static_cast<unsigned char>(s[b]) & 0xc0) == 0x80) --b;
  return b + utf8_char_len(s, b) == end ? b : end - 1;
}

int64_t utf8_count(std::string_view s) {
  int64_t n = 0;
  size_t i = 0;
  while (i < s.size()) {
    // Runs of ASCII, eight bytes at a time.
    while (i + 8 <= s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, 8);
      if ((w & 0x8080808080808080ull) != 0) break;
      i += 8;
      n += 8;
    }
    if (i >= s.size()) break;
    i += utf8_char_len(s, i);
    ++n;
  }
  return n;
}

size_t utf8_advance(std::string_view s, size_t at, int64_t k) {
  while (k > 0 && at < s.size()) {
    // Runs of ASCII, eight bytes at a time.
    while (k >= 8 && at + 8 <= s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + at, 8);
      if ((w & 0x8080808080808080ull) != 0) break;
      at += 8;
      k -= 8;
    }
    if (k == 0 || at >= s.size()) break;
    at += utf8_char_len(s, at);
    --k;
  }
  return at;
}

size_t utf8_offset(std::string_view s, int64_t index, int64_t n_chars) {
  if (index <= n_chars / 2) return utf8_advance(s, 0, index);
  size_t at = s.size();
  for (int64_t k = n_chars; k > index && at > 0; --k) at = utf8_char_start_before(s, at);
  return at;
}

char32_t utf8_decode(std::string_view s, size_t i) {
  const size_t n = utf8_char_len(s, i);
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (n == 1) return b0 < 0x80 ? b0 : 0xFFFFFFFF;
  char32_t c = b0 & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  return c;
}

}  // namespace tessera::jinja
