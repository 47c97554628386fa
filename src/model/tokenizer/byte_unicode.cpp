#include "tessera/model/tokenizer/byte_unicode.h"

#include <array>

#include "tessera/model/tokenizer/utf8.h"

namespace tessera::model {
namespace {

// Largest code point used: 0x100 + 68 - 1.
constexpr uint32_t kMaxCodePoint = 0x143;

bool maps_to_itself(int b) {
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> utf8;            // byte -> UTF-8 of its character
  std::array<int16_t, kMaxCodePoint + 1> byte;  // code point -> byte, or -1

  Tables() {
    byte.fill(-1);
    uint32_t next = 0x100;  // the unprintable bytes take U+0100.. in increasing byte order
    for (int b = 0; b < 256; ++b) {
      const uint32_t cp = maps_to_itself(b) ? static_cast<uint32_t>(b) : next++;
      utf8_append(utf8[b], cp);
      byte[cp] = static_cast<int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

std::string_view byte_to_unicode(uint8_t b) { return tables().utf8[b]; }

int unicode_to_byte(uint32_t cp) { return cp <= kMaxCodePoint ? tables().byte[cp] : -1; }

void append_byte_level(std::string& out, std::string_view bytes) {
  const Tables& t = tables();
  for (char c : bytes) out += t.utf8[static_cast<uint8_t>(c)];
}

void append_from_byte_level(std::string& out, std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    const int32_t cp = utf8_decode(text, pos, len);
    const int b = cp >= 0 ? unicode_to_byte(static_cast<uint32_t>(cp)) : -1;
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(text.substr(pos, len));
    }
    pos += len;
  }
}

}  // namespace tessera::model
