#include "tessera/model/tokenizer/byte_unicode.h"

#include <gtest/gtest.h>

#include <set>

namespace tessera::model {
namespace byte_unicode_test {

TEST(ByteUnicode, KnownCharacters) {
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(byte_to_unicode('a'), "a");
  EXPECT_EQ(byte_to_unicode(0xAD),
            "\xC5\x83");  // the soft hyphen is the last remapped byte: U+0143
}

TEST(ByteUnicode, EveryByteRoundTripsAndCharactersAreDistinct) {
  std::set<std::string> seen;
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all += static_cast<char>(b);
    seen.emplace(byte_to_unicode(static_cast<uint8_t>(b)));
  }
  EXPECT_EQ(seen.size(), 256u);
  std::string spelled;
  append_byte_level(spelled, all);
  std::string back;
  append_from_byte_level(back, spelled);
  EXPECT_EQ(back, all);
}

TEST(ByteUnicode, CharactersOutsideTheAlphabetPassThrough) {
  std::string out;
  append_from_byte_level(out, "\xE4\xBD\xA0\xC4\xA0x\xFF");  // 你, Ġ, x, a stray byte
  EXPECT_EQ(out, "\xE4\xBD\xA0 x\xFF");
  EXPECT_EQ(unicode_to_byte(0x4F60), -1);
}

}  // namespace byte_unicode_test
}  // namespace tessera::model
