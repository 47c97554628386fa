// UTF-8 code points as Python's str sees them (index, slice and len count code points), walked
// in place: no per-character copies. A malformed byte counts as one code point of its own.
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tessera::jinja {

// Bytes of the code point starting at s[i] (1 for a malformed or truncated sequence).
// Precondition: i < s.size().
size_t utf8_char_len(std::string_view s, size_t i);

// The byte offset where the code point ending at s[end] (exclusive) starts, as walking forward
// from the start would find it. Precondition: 0 < end <= s.size().
size_t utf8_char_start_before(std::string_view s, size_t end);

// The number of code points in `s` (equal to s.size() for ASCII).
int64_t utf8_count(std::string_view s);

// The byte offset `k` >= 0 code points after byte offset `at` (a code point start), or s.size().
size_t utf8_advance(std::string_view s, size_t at, int64_t k);

// The byte offset of code point `index` (0 <= index <= n_chars, n_chars = utf8_count(s)):
// walked from whichever end is nearer.
size_t utf8_offset(std::string_view s, int64_t index, int64_t n_chars);

// The code point of the sequence at s[i] (0xFFFFFFFF for a malformed byte >= 0x80).
char32_t utf8_decode(std::string_view s, size_t i);

}  // namespace tessera::jinja
