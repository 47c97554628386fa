#include "tessera/model/tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

namespace tessera::model {
namespace pretokenizer_test {

std::vector<std::string> split(const PreTokenizer& p, std::string_view text) {
  std::vector<std::string> out;
  for (std::string_view w : p.split(text)) out.emplace_back(w);
  return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizer, Gpt2SplitsWordsNumbersAndSpaces) {
  auto p = PreTokenizer::create("gpt-2");
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(split(*p, "Hello world's 123  go!!"),
            (Words{"Hello", " world", "'s", " 123", " ", " go", "!!"}));
  EXPECT_EQ(split(*p, "\t\n x"), (Words{"\t\n", " x"}));
}

TEST(PreTokenizer, UnicodeClassesComeFromPcre2) {
  auto p = PreTokenizer::create("gpt-2");
  ASSERT_TRUE(p.is_ok());
  // Cyrillic letters are \p{L}; the Devanagari digit ३ is \p{N}.
  EXPECT_EQ(split(*p, "\xD0\xBF\xD1\x80\xD0\xB8 \xE0\xA5\xA9"),
            (Words{"\xD0\xBF\xD1\x80\xD0\xB8", " \xE0\xA5\xA9"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsInThrees) {
  auto p = PreTokenizer::create("llama-bpe");
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(p->traits().ignore_merges);
  EXPECT_TRUE(p->traits().add_bos);
  EXPECT_EQ(split(*p, "1234567 I'M ok\n\n"), (Words{"123", "456", "7", " I", "'M", " ok", "\n\n"}));
}

TEST(PreTokenizer, SequencesApplyInTurn) {
  auto p = PreTokenizer::create("starcoder");  // digits one by one, then GPT-2
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(split(*p, "x 42"), (Words{"x", " ", "4", "2"}));
}

TEST(PreTokenizer, InvalidUtf8IsKeptNotDropped) {
  auto p = PreTokenizer::create("qwen2");
  ASSERT_TRUE(p.is_ok());
  const std::string text = "ab\xFF\xC3 cd\xE2\x82";
  std::string joined;
  for (std::string_view w : p->split(text)) joined += w;
  EXPECT_EQ(joined, text);
}

TEST(PreTokenizer, EveryKnownNameCompilesAndKeepsAllText) {
  const std::string text =
      "Hello, World! It's 2024-05-01 \xE4\xBD\xA0\xE5\xA5\xBD\xE3\x80\x82 \t\n  x=1+2; "
      "<sentinel:3> "
      "IMGIMGABZ \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xF0\x9F\xA6\x99\xFF";
  for (const char* name : {"default",        "",
                           "llama3",         "llama-v3",
                           "llama-bpe",      "falcon3",
                           "pixtral",        "dbrx",
                           "smaug-bpe",      "chatglm-bpe",
                           "glm4",           "deepseek-llm",
                           "deepseek-coder", "falcon",
                           "starcoder",      "refact",
                           "command-r",      "smollm",
                           "codeshell",      "exaone",
                           "minerva-7b",     "gpt-2",
                           "phi-2",          "jina-es",
                           "jina-de",        "jina-v2-es",
                           "jina-v2-de",     "mpt",
                           "olmo",           "jais",
                           "qwen2",          "deepseek-r1-qwen",
                           "megrez",         "stablelm2",
                           "poro-chat",      "bloom",
                           "gpt3-finnish",   "viking",
                           "tekken",         "gpt-4o",
                           "llama4",         "chameleon"}) {
    auto p = PreTokenizer::create(name);
    ASSERT_TRUE(p.is_ok()) << name << ": " << p.status().to_string();
    std::string joined;
    for (std::string_view w : p->split(text)) {
      EXPECT_FALSE(w.empty()) << name;
      joined += w;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(PreTokenizer, UnknownNameIsRefusedByName) {
  auto p = PreTokenizer::create("no-such-pretokenizer");
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(p.status().message().find("no-such-pretokenizer"), std::string::npos);
}

TEST(PreTokenizer, BadPatternIsAnError) {
  auto p = PreTokenizer::from_patterns({"([a-z"});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
}

TEST(PreTokenizer, EmptyMatchesDoNotLoop) {
  auto p = PreTokenizer::from_patterns({"x*"});
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(split(*p, "abxxc"), (Words{"ab", "xx", "c"}));
}

}  // namespace pretokenizer_test
}  // namespace tessera::model
