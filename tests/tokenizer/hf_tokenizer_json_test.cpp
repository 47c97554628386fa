// tokenizer.json -> tokenizer.ggml.* metadata (hf_tokenizer_json.h) on small hand-written
// tokenizers: which pre-tokenizer each HF form is named as, special tokens and flags from
// tokenizer_config.json and config.json, padding, and clear refusals of what is not supported.
// (The shared reference vectors run through tokenizer.json in gguf_vocab_vectors_test.cpp.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessera/model/tokenizer/hf_tokenizer_json.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::model {
namespace hf_tokenizer_json_test {

using nlohmann::json;

const char* kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const char* kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A tiny byte-level BPE: the 256 byte symbols (as GPT-2 spells them: printable ASCII as itself),
// "he", "hel", "hell", "hello", and two added tokens.
json byte_level(json pre_tokenizer, bool ignore_merges = false) {
  json vocab = json::object();
  int id = 0;
  for (int c = '!'; c <= '~'; ++c) vocab[std::string(1, static_cast<char>(c))] = id++;
  vocab["\xC4\xA0"] = id++;  // "Ġ", the space byte
  for (const char* t : {"he", "hel", "hell", "hello"}) vocab[t] = id++;
  json added = json::array({{{"id", id}, {"content", "<|endoftext|>"}, {"special", true}},
                            {{"id", id + 1}, {"content", "<tool>"}, {"special", false}}});
  return {{"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"model",
           {{"type", "BPE"}, {"vocab", vocab}, {"ignore_merges", ignore_merges},
            {"merges", json::array({"h e", json::array({"he", "l"}), "hel l", "hell o"})}}}};
}

json split(const char* regex) {
  return {{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"},
          {"invert", false}};
}

json byte_level_step(bool use_regex) {
  return {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", use_regex}};
}

Result<Metadata> convert(const json& tokenizer, const json& config = nullptr,
                         int64_t rows = 0) {
  const std::string t = tokenizer.dump();
  const std::string c = config.is_null() ? "" : config.dump();
  HfTokenizerInputs in;
  in.tokenizer_json = t;
  in.tokenizer_config_json = c;
  in.n_vocab_rows = rows;
  return hf_tokenizer_to_gguf(in);
}

std::string pre_of(const Metadata& m) { return m.get_string_or("tokenizer.ggml.pre", "").value(); }

TEST(HfTokenizerJson, NamesTheByteLevelPreTokenizers) {
  auto gpt2 = convert(byte_level(byte_level_step(true)));
  ASSERT_TRUE(gpt2.is_ok()) << gpt2.status().to_string();
  EXPECT_EQ(gpt2->get_string("tokenizer.ggml.model").value(), "gpt2");
  EXPECT_EQ(pre_of(*gpt2), "gpt-2");
  auto llama3 = convert(byte_level({{"type", "Sequence"},
                                    {"pretokenizers", {split(kLlama3Regex), byte_level_step(false)}}},
                                   /*ignore_merges=*/true));
  ASSERT_TRUE(llama3.is_ok()) << llama3.status().to_string();
  EXPECT_EQ(pre_of(*llama3), "llama3");
  json qwen = byte_level({{"type", "Sequence"},
                          {"pretokenizers", {split(kQwen2Regex), byte_level_step(false)}}});
  qwen["normalizer"] = {{"type", "NFC"}};
  auto qwen2 = convert(qwen);
  ASSERT_TRUE(qwen2.is_ok()) << qwen2.status().to_string();
  EXPECT_EQ(pre_of(*qwen2), "qwen2");
  auto starcoder = convert(byte_level(
      {{"type", "Sequence"},
       {"pretokenizers", {{{"type", "Digits"}, {"individual_digits", true}}, byte_level_step(true)}}}));
  ASSERT_TRUE(starcoder.is_ok()) << starcoder.status().to_string();
  EXPECT_EQ(pre_of(*starcoder), "starcoder");
}

TEST(HfTokenizerJson, ByteLevelTokenizerEncodesWithMergesAndAddedTokens) {
  auto md = convert(byte_level(byte_level_step(true)));
  ASSERT_TRUE(md.is_ok());
  auto tok = make_tokenizer(*md);
  ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
  const int32_t hello = (*tok)->encode("hello", false, false).at(0);
  EXPECT_EQ((*tok)->token_to_piece(hello), "hello");
  // The added tokens: <|endoftext|> a control token, <tool> user-defined (matched in text).
  const auto ids = (*tok)->encode("hello<tool>", false, true);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ((*tok)->token_to_piece(ids[1]), "<tool>");
  const auto* types = md->get_array("tokenizer.ggml.token_type").value();
  EXPECT_EQ(types->items[static_cast<size_t>(ids[1])].as_int().value(), 4);
  EXPECT_EQ(types->items[static_cast<size_t>(ids[1]) - 1].as_int().value(), 3);
}

TEST(HfTokenizerJson, SpecialTokensFlagsTemplateAndPadding) {
  json t = byte_level(byte_level_step(true));
  json cfg = {{"bos_token", {{"content", "<|endoftext|>"}, {"__type", "AddedToken"}}},
              {"eos_token", "<|endoftext|>"},
              {"add_bos_token", true},
              {"chat_template", "{{ messages }}"}};
  auto md = convert(t, cfg, /*rows=*/200);
  ASSERT_TRUE(md.is_ok()) << md.status().to_string();
  const int64_t eot = md->get_int("tokenizer.ggml.eos_token_id").value();
  EXPECT_EQ(md->get_int("tokenizer.ggml.bos_token_id").value(), eot);
  EXPECT_TRUE(md->get_bool("tokenizer.ggml.add_bos_token").value());
  EXPECT_FALSE(md->get_bool("tokenizer.ggml.add_eos_token").value());
  EXPECT_EQ(md->get_string("tokenizer.chat_template").value(), "{{ messages }}");
  const auto* tokens = md->get_array("tokenizer.ggml.tokens").value();
  ASSERT_EQ(tokens->items.size(), 200u);  // padded to the embedding rows
  EXPECT_EQ(tokens->items[199].as_string().value(), "[PAD199]");
  EXPECT_EQ(md->get_array("tokenizer.ggml.token_type").value()->items[199].as_int().value(), 5);
  // Without tokenizer_config.json: add_bos from the post-processor's template.
  t["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", {{{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  HfTokenizerInputs in;
  const std::string text = t.dump();
  in.tokenizer_json = text;
  in.bos_token_id = eot;
  auto md2 = hf_tokenizer_to_gguf(in);
  ASSERT_TRUE(md2.is_ok()) << md2.status().to_string();
  EXPECT_EQ(md2->get_int("tokenizer.ggml.bos_token_id").value(), eot);
  EXPECT_TRUE(md2->get_bool("tokenizer.ggml.add_bos_token").value());
  // More tokens than embedding rows is an error.
  auto small = convert(byte_level(byte_level_step(true)), nullptr, 10);
  ASSERT_FALSE(small.is_ok());
  EXPECT_NE(small.status().message().find("embedding"), std::string::npos);
}

TEST(HfTokenizerJson, SentencePieceFormsBecomeTheLlamaModel) {
  const std::string sp = "\xE2\x96\x81";
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 3 + b;
  int id = 259;
  for (const std::string& t : std::vector<std::string>{sp, "a", "b", sp + "a", sp + "ab", "ab"}) {
    vocab[t] = id++;
  }
  json added = json::array();
  for (int i = 0; i < 3; ++i) {
    added.push_back({{"id", i}, {"content", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>"},
                     {"special", true}});
  }
  json model = {{"type", "BPE"}, {"vocab", vocab}, {"byte_fallback", true}, {"unk_token", "<unk>"},
                {"merges", {sp + " a", "a b", sp + "a b"}}};
  json metaspace = {{"added_tokens", added},
                    {"normalizer", nullptr},
                    {"pre_tokenizer",
                     {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "first"},
                      {"split", false}}},
                    {"model", model}};
  json normalizer = metaspace;
  normalizer["pre_tokenizer"] = nullptr;
  normalizer["normalizer"] = {
      {"type", "Sequence"},
      {"normalizers",
       {{{"type", "Prepend"}, {"prepend", sp}},
        {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", sp}}}}};
  for (const json& form : {metaspace, normalizer}) {
    auto md = convert(form);
    ASSERT_TRUE(md.is_ok()) << md.status().to_string();
    EXPECT_EQ(md->get_string("tokenizer.ggml.model").value(), "llama");
    EXPECT_TRUE(md->get_bool("tokenizer.ggml.add_space_prefix").value());
    auto tok = make_tokenizer(*md);
    ASSERT_TRUE(tok.is_ok()) << tok.status().to_string();
    // "ab ab": ▁ab ▁ab by the merges; "c" has no token: its byte.
    EXPECT_EQ((*tok)->encode("ab abc", false, false),
              (std::vector<int32_t>{263, 263, 3 + 'c'}));
    const auto* types = md->get_array("tokenizer.ggml.token_type").value();
    EXPECT_EQ(types->items[0].as_int().value(), 2);    // unknown
    EXPECT_EQ(types->items[1].as_int().value(), 3);    // control
    EXPECT_EQ(types->items[3 + 65].as_int().value(), 6);  // byte
  }
}

TEST(HfTokenizerJson, RefusesWhatItCannotRunByName) {
  const auto refused = [](const json& t, const std::string& needle) {
    auto md = convert(t);
    ASSERT_FALSE(md.is_ok()) << needle;
    EXPECT_NE(md.status().message().find(needle), std::string::npos) << md.status().message();
  };
  json wordpiece = byte_level(byte_level_step(true));
  wordpiece["model"]["type"] = "WordPiece";
  refused(wordpiece, "WordPiece");
  refused(byte_level({{"type", "Sequence"},
                      {"pretokenizers", {split("[a-z]+"), byte_level_step(false)}}}),
          "'[a-z]+'");
  refused(byte_level({{"type", "Whitespace"}}), "Whitespace");
  json nfkc = byte_level(byte_level_step(true));
  nfkc["normalizer"] = {{"type", "NFKC"}};
  refused(nfkc, "NFKC");
  json clash = byte_level(byte_level_step(true));
  clash["added_tokens"].push_back({{"id", 0}, {"content", "<other>"}, {"special", true}});
  refused(clash, "id 0");
  json bad_merge = byte_level(byte_level_step(true));
  bad_merge["model"]["merges"].push_back(42);
  refused(bad_merge, "merges[4]");
  HfTokenizerInputs in;
  in.tokenizer_json = "{\"model\": ";
  auto md = hf_tokenizer_to_gguf(in);
  ASSERT_FALSE(md.is_ok());
  EXPECT_NE(md.status().message().find("not a JSON object"), std::string::npos);
}

}  // namespace hf_tokenizer_json_test
}  // namespace tessera::model
