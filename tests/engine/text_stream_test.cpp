#include "tessera/engine/text_stream.h"

#include <gtest/gtest.h>

namespace tessera::engine {
namespace text_stream_test {

TEST(TextStream, PassesTextThroughWithoutStopStrings) {
  TextStream s({});
  EXPECT_EQ(s.push("Hello"), "Hello");
  EXPECT_EQ(s.push(" world"), " world");
  EXPECT_EQ(s.finish(), "");
  EXPECT_FALSE(s.stopped());
}

TEST(TextStream, HoldsBackIncompleteUtf8) {
  TextStream s({});
  EXPECT_EQ(s.push("a\xE2\x96"), "a");
  EXPECT_EQ(s.push("\x81"), "\xE2\x96\x81");
  EXPECT_EQ(s.push("\xF0\x9F"), "");
  EXPECT_EQ(s.finish(), "\xF0\x9F");  // an incomplete tail is flushed as is at the end
}

TEST(TextStream, StopStringSplitAcrossTokensIsCutAndNeverEmitted) {
  TextStream s({"\nUser:"});
  EXPECT_EQ(s.push("Sure."), "Sure.");
  EXPECT_EQ(s.push("\nUs"), "");  // could be the start of the stop string
  EXPECT_EQ(s.push("er:"), "");
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(s.finish(), "");
  EXPECT_EQ(s.push("more"), "");
}

TEST(TextStream, HeldBackTextIsReleasedWhenTheMatchFails) {
  TextStream s({"STOP"});
  EXPECT_EQ(s.push("ab ST"), "ab ");
  EXPECT_EQ(s.push("OR"), "STOR");
  EXPECT_FALSE(s.stopped());
  EXPECT_EQ(s.push("S"), "");
  EXPECT_EQ(s.finish(), "S");
}

TEST(TextStream, EarliestOfSeveralStopStringsWins) {
  TextStream s({"world", "lo w"});
  EXPECT_EQ(s.push("hello world"), "hel");
  EXPECT_TRUE(s.stopped());
}

TEST(TextStream, StopStringInsideOneTokenKeepsTextBeforeIt) {
  TextStream s({"</s>", ""});
  EXPECT_EQ(s.push("done</s>tail"), "done");
  EXPECT_TRUE(s.stopped());
}

}  // namespace text_stream_test
}  // namespace tessera::engine
