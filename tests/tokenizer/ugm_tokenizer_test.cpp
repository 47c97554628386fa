// The unigram (Viterbi) tokenizer, GGUF model "t5" (ugm_tokenizer.h), built from Hugging Face
// tokenizer.json Unigram models (hf_tokenizer_json.h): hand-checked best segmentations, unknown
// characters (fused, or spelled in bytes with byte fallback), the whitespace options, round
// trips, the difference from SentencePiece-BPE's merge-by-score on the same scores, and refusals.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tessera/model/tokenizer/hf_tokenizer_json.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "tessera/model/tokenizer/ugm_tokenizer.h"

namespace tessera::model {
namespace ugm_tokenizer_test {

using nlohmann::json;
using Ids = std::vector<int32_t>;
const std::string sp = "\xE2\x96\x81";  // ▁

// ids: 0 <pad>, 1 </s>, 2 <unk>, 3 ▁ (-2), 4 ▁a (-1), 5 b (-2.5), 6 ab (-3), 7 ▁ab (-4.5),
// 8 a (-1.5), 9 c (-3); with bytes, <0x00>..<0xFF> follow as ids 10..265.
json unigram(bool byte_fallback = false, json pre = nullptr) {
  json vocab = json::array({json::array({"<pad>", 0.0}), json::array({"</s>", 0.0}),
                            json::array({"<unk>", 0.0}), json::array({sp, -2.0}),
                            json::array({sp + "a", -1.0}), json::array({"b", -2.5}),
                            json::array({"ab", -3.0}), json::array({sp + "ab", -4.5}),
                            json::array({"a", -1.5}), json::array({"c", -3.0})});
  if (byte_fallback) {
    for (int b = 0; b < 256; ++b) vocab.push_back(json::array({fmt::format("<0x{:02X}>", b), 0.0}));
  }
  json added = json::array();
  for (int i = 0; i < 3; ++i) {
    added.push_back({{"id", i}, {"content", vocab[i][0]}, {"special", true}});
  }
  if (pre.is_null()) {
    pre = {{"type", "Metaspace"}, {"replacement", sp}, {"prepend_scheme", "always"}, {"split", true}};
  }
  return {{"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre},
          {"model", {{"type", "Unigram"}, {"unk_id", 2}, {"vocab", vocab},
                     {"byte_fallback", byte_fallback}}}};
}

Result<Metadata> convert(const json& tokenizer) {
  const std::string t = tokenizer.dump();
  HfTokenizerInputs in;
  in.tokenizer_json = t;
  in.eos_token_ids = {1};
  return hf_tokenizer_to_gguf(in);
}

std::unique_ptr<Tokenizer> build(const Metadata& md) {
  auto tok = make_tokenizer(md);
  EXPECT_TRUE(tok.is_ok()) << tok.status().to_string();
  return tok.is_ok() ? std::move(*tok) : nullptr;
}

std::unique_ptr<Tokenizer> build(const json& tokenizer) {
  auto md = convert(tokenizer);
  EXPECT_TRUE(md.is_ok()) << md.status().to_string();
  return md.is_ok() ? build(*md) : nullptr;
}

TEST(UgmTokenizer, TokenizerJsonUnigramBecomesTheT5Model) {
  auto md = convert(unigram());
  ASSERT_TRUE(md.is_ok()) << md.status().to_string();
  EXPECT_EQ(md->get_string("tokenizer.ggml.model").value(), "t5");
  EXPECT_TRUE(md->get_bool("tokenizer.ggml.add_space_prefix").value());
  EXPECT_EQ(md->get_int("tokenizer.ggml.unknown_token_id").value(), 2);
  const auto* scores = md->get_array("tokenizer.ggml.scores").value();
  EXPECT_FLOAT_EQ(scores->items[7].as_float().value(), -4.5f);
  const auto* types = md->get_array("tokenizer.ggml.token_type").value();
  EXPECT_EQ(types->items[0].as_int().value(), 3);  // control
  EXPECT_EQ(types->items[2].as_int().value(), 2);  // unknown
  EXPECT_EQ(types->items[4].as_int().value(), 1);  // normal
  EXPECT_FALSE(md->get_bool("tokenizer.ggml.add_bos_token").value());
}

TEST(UgmTokenizer, ViterbiPicksTheBestScoringSegmentation) {
  auto tok = build(unigram());
  ASSERT_NE(tok, nullptr);
  // "▁ab": ▁a+b = -3.5 beats ▁ab = -4.5, ▁+ab = -5, ▁+a+b = -6.
  EXPECT_EQ(tok->encode("ab", false, false), (Ids{4, 5}));
  // "▁ab▁c": ▁a b, then ▁ c (-5).
  EXPECT_EQ(tok->encode("ab c", false, false), (Ids{4, 5, 3, 9}));
  // Two spaces are two ▁; "ba" has no ▁-prefixed token: ▁ b a.
  EXPECT_EQ(tok->encode("a  ba", false, false), (Ids{4, 3, 3, 5, 8}));
  // d and e have no token: one unknown for the run (score min -4.5 - 10 per character).
  EXPECT_EQ(tok->encode("abde", false, false), (Ids{4, 5, 2}));
  EXPECT_EQ(tok->encode("dab", false, false), (Ids{3, 2, 6}));  // ▁ <unk> ab: -2 -14.5 -3
  // A malformed byte is U+FFFD, which has no token.
  EXPECT_EQ(tok->encode("a\xFF", false, false), (Ids{4, 2}));
  // Special tokens split the text; each fragment gets its own ▁ prefix (no BOS or EOS: the
  // tokenizer.json has no template adding them).
  EXPECT_EQ(tok->encode("ab</s>ab", true, true), (Ids{4, 5, 1, 4, 5}));
}

TEST(UgmTokenizer, DiffersFromMergeByScoreOnTheSameScores) {
  auto md = convert(unigram());
  ASSERT_TRUE(md.is_ok());
  md->set("tokenizer.ggml.model", GgufValue::string("llama"));
  auto spm = build(*md);
  ASSERT_NE(spm, nullptr);
  // Merge-by-score joins ▁+a (-1) first, then ▁a+b (-4.5): one token where Viterbi finds two.
  EXPECT_EQ(spm->encode("ab", false, false), (Ids{7}));
}

TEST(UgmTokenizer, ByteFallbackSpellsUncoveredCharactersInBytes) {
  auto tok = build(unigram(/*byte_fallback=*/true));
  ASSERT_NE(tok, nullptr);
  // d (0x64) and é (C3 A9) have no piece: their bytes, not <unk>.
  EXPECT_EQ(tok->encode("abd", false, false), (Ids{4, 5, 10 + 0x64}));
  EXPECT_EQ(tok->encode("\xC3\xA9" "a", false, false), (Ids{3, 10 + 0xC3, 10 + 0xA9, 8}));
  EXPECT_EQ(tok->decode(tok->encode("d\xC3\xA9 ab c", false, false)), "d\xC3\xA9 ab c");
}

TEST(UgmTokenizer, WhitespaceOptions) {
  auto md = convert(unigram());
  ASSERT_TRUE(md.is_ok());
  md->set("tokenizer.ggml.remove_extra_whitespaces", GgufValue::boolean(true));
  auto collapse = build(*md);
  ASSERT_NE(collapse, nullptr);
  EXPECT_EQ(collapse->encode("  a   b ", false, false), (Ids{4, 3, 5}));
  const auto* ugm = dynamic_cast<const UgmTokenizer*>(collapse.get());
  ASSERT_NE(ugm, nullptr);
  EXPECT_EQ(ugm->normalize("  a   b "), sp + "a" + sp + "b");

  json never = unigram(false, {{"type", "Metaspace"}, {"replacement", sp},
                               {"prepend_scheme", "never"}, {"split", true}});
  auto no_prefix = build(never);
  ASSERT_NE(no_prefix, nullptr);
  EXPECT_EQ(no_prefix->encode("ab", false, false), (Ids{6}));  // ab -3 beats a+b -4
  const auto* u2 = dynamic_cast<const UgmTokenizer*>(no_prefix.get());
  ASSERT_NE(u2, nullptr);
  EXPECT_EQ(u2->normalize(" a b"), sp + "a" + sp + "b");
}

TEST(UgmTokenizer, RoundTripsTextItCovers) {
  auto tok = build(unigram());
  ASSERT_NE(tok, nullptr);
  for (const std::string text : {"ab", "a b c", "ab  ab", "cab bac", "c", "b a"}) {
    EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text) << text;
  }
}

TEST(UgmTokenizer, RefusesWhatItDoesNotImplement) {
  const auto refused = [](const json& t, const std::string& needle) {
    auto md = convert(t);
    ASSERT_FALSE(md.is_ok()) << needle;
    EXPECT_NE(md.status().message().find(needle), std::string::npos) << md.status().message();
  };
  json precompiled = unigram();
  precompiled["normalizer"] = {{"type", "Sequence"},
                               {"normalizers", {{{"type", "Precompiled"},
                                                 {"precompiled_charsmap", "AAAA"}}}}};
  refused(precompiled, "Precompiled");
  json inner = unigram();
  inner["model"]["vocab"].push_back(json::array({"a" + sp + "b", -9.0}));
  refused(inner, "holds");
  json bad_pair = unigram();
  bad_pair["model"]["vocab"][5] = json::array({"b"});
  refused(bad_pair, "model.vocab[5]");
  json bad_unk = unigram();
  bad_unk["model"]["unk_id"] = 99;
  refused(bad_unk, "unk_id");
  json whitespace = unigram(false, {{"type", "WhitespaceSplit"}});
  refused(whitespace, "WhitespaceSplit");
  // A GGUF with a precompiled charsmap: the tokenizer is refused, not run without it.
  auto md = convert(unigram());
  ASSERT_TRUE(md.is_ok());
  GgufArray cm{GgufType::kUint8, {GgufValue::u8(1), GgufValue::u8(2), GgufValue::u8(3),
                                  GgufValue::u8(4)}};
  md->set("tokenizer.ggml.precompiled_charsmap", GgufValue::array(std::move(cm)));
  auto tok = make_tokenizer(*md);
  ASSERT_FALSE(tok.is_ok());
  EXPECT_NE(tok.status().message().find("precompiled_charsmap"), std::string::npos);
}

}  // namespace ugm_tokenizer_test
}  // namespace tessera::model
