// The byte-level alphabet of GPT-2 style BPE: each of the 256 byte values stands for one
// printable Unicode character, so any byte string becomes a string of visible characters that
// merges and vocabularies can be written in (the space byte 0x20 becomes "Ġ", U+0120).
// Bytes that are printable Latin-1 map to themselves; the other 68 map to U+0100 onwards.
// Thread-safety: the tables are built once (thread-safe static initialisation), then read-only.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera::model {

// The UTF-8 encoding of the character that stands for byte `b`.
std::string_view byte_to_unicode(uint8_t b);

// The byte that code point `cp` stands for, or -1 if `cp` is not in the byte-level alphabet.
int unicode_to_byte(uint32_t cp);

// Appends the byte-level spelling of `bytes` to `out` (each byte becomes its character).
void append_byte_level(std::string& out, std::string_view bytes);

// Appends the bytes spelled by the byte-level string `text` to `out`. Characters outside the
// alphabet (and malformed UTF-8) are copied through unchanged, so nothing is dropped.
void append_from_byte_level(std::string& out, std::string_view text);

}  // namespace tessera::model
