// The llama2.c tokenizer against golden output of llama2.c's run.c (stories260K.greedy.jsonl:
// the prompt, its tokens with BOS, the greedy continuation and the text run.c printed).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tessera/model/tokenizer/tokenizer.h"
#include "test_util.h"

namespace tessera::model {
namespace llama2c_tokenizer_test {

constexpr int32_t kVocab = 512;

std::unique_ptr<Tokenizer> load_stories(const std::filesystem::path& path) {
  auto t = load_llama2c_tokenizer(path.string(), kVocab);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(t).value() : nullptr;
}

TEST(Llama2cTokenizer, MatchesRunCOnGreedyGoldens) {
  TS_SKIP_WITHOUT_SHARED(tok_path, "models/stories260K-tok512.bin");
  TS_SKIP_WITHOUT_SHARED(golden_path, "models/stories260K.greedy.jsonl");
  auto tok = load_stories(tok_path);
  ASSERT_NE(tok, nullptr);
  std::ifstream in(golden_path);
  int n_cases = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = nlohmann::json::parse(line);
    const std::string prompt = j.at("prompt").get<std::string>();
    const auto prompt_tokens = j.at("prompt_tokens").get<std::vector<int32_t>>();
    const auto greedy = j.at("greedy_tokens").get<std::vector<int32_t>>();
    ASSERT_FALSE(greedy.empty());

    EXPECT_EQ(tok->encode(prompt, /*add_special=*/true, /*parse_special=*/false), prompt_tokens)
        << "prompt '" << prompt << "'";

    // greedy_tokens repeats the last prompt token (the model's own prediction of it) unless the
    // prompt is BOS alone; run.c printed every token after BOS, then a final newline.
    std::vector<int32_t> ids = prompt_tokens;
    const size_t skip = (prompt_tokens.size() > 1 && greedy[0] == prompt_tokens.back()) ? 1 : 0;
    ids.insert(ids.end(), greedy.begin() + static_cast<std::ptrdiff_t>(skip), greedy.end());
    EXPECT_EQ(tok->decode(ids) + "\n", j.at("text").get<std::string>())
        << "prompt '" << prompt << "'";
    ++n_cases;
  }
  EXPECT_EQ(n_cases, 6);
}

TEST(Llama2cTokenizer, BasicsAndRoundTrip) {
  TS_SKIP_WITHOUT_SHARED(tok_path, "models/stories260K-tok512.bin");
  auto tok = load_stories(tok_path);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), kVocab);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_TRUE(tok->is_end_of_generation(1));
  EXPECT_TRUE(tok->is_end_of_generation(2));
  EXPECT_FALSE(tok->is_end_of_generation(300));
  EXPECT_TRUE(tok->encode("", true, false) == std::vector<int32_t>{1});
  EXPECT_TRUE(tok->encode("", false, false).empty());
  // Characters missing from the 512-token vocabulary fall back to bytes (id = byte + 3).
  const std::string text = "Lily saw a dragon \xE2\x9C\xA8 and said \"hi!\"\nThe end.";
  const auto ids = tok->encode(text, true, false);
  EXPECT_NE(std::find(ids.begin(), ids.end(), 0xE2 + 3), ids.end());
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
  EXPECT_EQ(tok->token_to_piece(0xE2 + 3), "\xE2");
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(kVocab), "");
  const int32_t bad[] = {-7, 1, 100000, 300};
  EXPECT_NO_FATAL_FAILURE((void)tok->decode(bad));
}

TEST(Llama2cTokenizer, OtherVocabularyLoads) {
  TS_SKIP_WITHOUT_SHARED(path, "models/aidreams260K-tok512.bin");
  auto tok = load_llama2c_tokenizer(path.string(), kVocab);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const std::string text = "Once upon a time";
  EXPECT_EQ((*tok)->decode((*tok)->encode(text, true, false)), text);
}

// Writes `bytes` to a file and tries to load it.
Status load_bytes(const testing::TempDir& dir, const std::string& bytes, int32_t n_vocab) {
  const std::string path = dir.file("tok.bin");
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto t = load_llama2c_tokenizer(path, n_vocab);
  return t.is_ok() ? Status::ok() : t.status();
}

std::string le32(int32_t v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}

std::string token(float score, int32_t len, std::string_view text) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &score, 4);
  return s + le32(len) + std::string(text);
}

TEST(Llama2cTokenizer, BadFilesAreErrorsNotCrashes) {
  testing::TempDir dir;
  const std::string good =
      le32(3) + token(0, 5, "<unk>") + token(0, 3, "<s>") + token(0, 4, "</s>");
  EXPECT_TRUE(load_bytes(dir, good, 3).is_ok());
  EXPECT_EQ(load_bytes(dir, "", 3).code(), ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, good.substr(0, good.size() - 1), 3).code(), ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, good.substr(0, 10), 3).code(), ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, good, 4).code(), ErrorCode::kCorruptData);  // more tokens than the file
  EXPECT_EQ(load_bytes(dir, le32(3) + token(0, -1, ""), 3).code(), ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, le32(3) + token(0, 0x7FFFFFFF, "abc"), 3).code(),
            ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, le32(-5) + good.substr(4), 3).code(), ErrorCode::kCorruptData);
  EXPECT_EQ(load_bytes(dir, good, 2).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(load_llama2c_tokenizer(dir.file("missing.bin"), 3).status().code(),
            ErrorCode::kNotFound);
}

TEST(Llama2cTokenizer, TinyVocabularyWithoutSpaceOrBytesStillEncodes) {
  testing::TempDir dir;
  const std::string bytes = le32(3) + token(0, 5, "<unk>") + token(0, 3, "<s>") +
                            token(0, 4, "</s>") + token(-1, 1, "a") + token(-2, 2, "aa");
  const std::string path = dir.file("tiny.bin");
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  auto tok = load_llama2c_tokenizer(path, 5);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  // No " " token: no dummy prefix. 'b' has no token and its byte id (98 + 3) is past the
  // vocabulary, so it becomes <unk>.
  EXPECT_EQ((*tok)->encode("aaab", true, false), (std::vector<int32_t>{1, 4, 3, 0}));
}

}  // namespace llama2c_tokenizer_test
}  // namespace tessera::model
