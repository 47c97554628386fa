// Tokenizer behaviour beyond the reference vectors: special tokens, BOS/EOS flags, decoding
// edge cases and errors from incomplete metadata, on small hand-made vocabularies and on the
// shared GGUF vocabularies.
#include <gtest/gtest.h>

#include <thread>

#include "tessera/model/format/model_file.h"
#include "tessera/model/tokenizer/byte_unicode.h"
#include "tessera/model/tokenizer/tokenizer.h"
#include "test_util.h"

namespace tessera::model {
namespace tokenizer_behaviour_test {

using Ids = std::vector<int32_t>;

GgufValue strings(const std::vector<std::string>& v) {
  GgufArray a{GgufType::kString, {}};
  for (const auto& s : v) a.items.push_back(GgufValue::string(s));
  return GgufValue::array(std::move(a));
}
GgufValue floats(const std::vector<float>& v) {
  GgufArray a{GgufType::kFloat32, {}};
  for (float f : v) a.items.push_back(GgufValue::f32(f));
  return GgufValue::array(std::move(a));
}
GgufValue ints(const std::vector<int32_t>& v) {
  GgufArray a{GgufType::kInt32, {}};
  for (int32_t i : v) a.items.push_back(GgufValue::i32(i));
  return GgufValue::array(std::move(a));
}

// A small SentencePiece vocabulary: <unk>, <s>, </s>, 256 byte tokens, then the pieces below.
constexpr int32_t kSpace = 259, kA = 260, kB = 261, kSpaceA = 262, kAB = 263, kSpaceAB = 264,
                  kUser = 265, kCtl = 266, kC = 267;
Metadata spm_metadata() {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<float> scores = {0, 0, 0};
  std::vector<int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "<0x%02X>", b);
    tokens.push_back(buf);
    scores.push_back(0);
    types.push_back(6);
  }
  const std::vector<std::tuple<std::string, float, int32_t>> pieces = {{"\xE2\x96\x81", -1, 1},
                                                                       {"a", -2, 1},
                                                                       {"b", -3, 1},
                                                                       {"\xE2\x96\x81"
                                                                        "a",
                                                                        -4, 1},
                                                                       {"ab", -5, 1},
                                                                       {"\xE2\x96\x81"
                                                                        "ab",
                                                                        -6, 1},
                                                                       {"<|user|>", 0, 4},
                                                                       {"<|ctl|>", 0, 3},
                                                                       {"c", -7, 1}};
  for (const auto& [t, s, ty] : pieces) {
    tokens.push_back(t);
    scores.push_back(s);
    types.push_back(ty);
  }
  Metadata md;
  md.set("tokenizer.ggml.model", GgufValue::string("llama"));
  md.set("tokenizer.ggml.tokens", strings(tokens));
  md.set("tokenizer.ggml.scores", floats(scores));
  md.set("tokenizer.ggml.token_type", ints(types));
  return md;
}

std::unique_ptr<Tokenizer> build(const Metadata& md) {
  auto t = make_tokenizer(md);
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return t.is_ok() ? std::move(t).value() : nullptr;
}

TEST(SpmTokenizer, MergesByScoreWithSpacePrefixAndByteFallback) {
  auto tok = build(spm_metadata());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("ab", false, false), (Ids{kSpaceAB}));
  EXPECT_EQ(tok->encode("abc", false, false), (Ids{kSpaceAB, kC}));
  EXPECT_EQ(tok->encode("b a", false, false), (Ids{kSpace, kB, kSpaceA}));
  EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (Ids{kSpace, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(tok->decode(Ids{kSpace, 3 + 0xC3, 3 + 0xA9}), "\xC3\xA9");
  EXPECT_TRUE(tok->encode("", false, false).empty());
}

TEST(SpmTokenizer, BosEosAndSpacePrefixFlags) {
  auto tok = build(spm_metadata());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->encode("ab", true, false), (Ids{1, kSpaceAB}));
  EXPECT_EQ(tok->encode("", true, false), (Ids{1}));

  Metadata md = spm_metadata();
  md.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  md.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(true));
  md.set("tokenizer.ggml.add_space_prefix", GgufValue::boolean(false));
  auto tok2 = build(md);
  ASSERT_NE(tok2, nullptr);
  EXPECT_EQ(tok2->encode("ab", true, false), (Ids{kAB, 2}));
  EXPECT_EQ(tok2->encode("ab", false, false), (Ids{kAB}));
  EXPECT_EQ(tok2->decode(Ids{kSpaceAB}), " ab");  // no prefix was added, so none is stripped
}

TEST(SpmTokenizer, SpecialTokens) {
  auto tok = build(spm_metadata());
  ASSERT_NE(tok, nullptr);
  // User-defined tokens are always matched; the text after a special token gets a space prefix.
  EXPECT_EQ(tok->encode("a<|user|>b", false, false), (Ids{kSpaceA, kUser, kSpace, kB}));
  // Control tokens only when parsing special tokens.
  EXPECT_EQ(tok->encode("a<|ctl|>b", false, true), (Ids{kSpaceA, kCtl, kSpace, kB}));
  const Ids plain = tok->encode("a<|ctl|>b", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kCtl), 0);
  EXPECT_EQ(tok->decode(plain), "a<|ctl|>b");
  EXPECT_EQ(tok->encode("<s>", false, true), (Ids{1}));
  EXPECT_EQ(tok->encode("<s><s>ab</s>", true, true), (Ids{1, 1, 1, kSpaceAB, 2}));
}

TEST(SpmTokenizer, DecodeHandlesSpecialAndInvalidIds) {
  auto tok = build(spm_metadata());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->decode(Ids{1, kSpaceA, kB}), "ab");
  EXPECT_EQ(tok->decode(Ids{1, kSpaceA, kB}, false, false), " ab");
  EXPECT_EQ(tok->decode(Ids{1, kSpaceA, kCtl, kB}, true), "<s>a<|ctl|>b");
  EXPECT_EQ(tok->token_to_piece(kCtl), "");
  EXPECT_EQ(tok->token_to_piece(kCtl, true), "<|ctl|>");
  EXPECT_EQ(tok->token_to_piece(kUser), "<|user|>");
  EXPECT_EQ(tok->token_to_piece(3 + 'x'), "x");
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(1 << 30), "");
  EXPECT_EQ(tok->token_text(-5), "");
  EXPECT_EQ(tok->decode(Ids{-1, 99999, kSpaceA, INT32_MIN, INT32_MAX}), "a");
  EXPECT_TRUE(tok->is_end_of_generation(2));
  EXPECT_FALSE(tok->is_end_of_generation(kA));
  EXPECT_FALSE(tok->is_end_of_generation(-1));
}

// A byte-level BPE vocabulary: the 256 alphabet characters, merged pieces, two control tokens.
Metadata bpe_metadata() {
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(byte_to_unicode(static_cast<uint8_t>(b)));
  for (const char* t :
       {"he", "ll", "hell", "hello", "\xC4\xA0hello", "<|endoftext|>", "<|im_end|>"}) {
    tokens.emplace_back(t);
  }
  std::vector<int32_t> types(tokens.size(), 1);
  types[tokens.size() - 2] = 3;
  types[tokens.size() - 1] = 3;
  Metadata md;
  md.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  md.set("tokenizer.ggml.pre", GgufValue::string("gpt-2"));
  md.set("tokenizer.ggml.tokens", strings(tokens));
  md.set("tokenizer.ggml.token_type", ints(types));
  md.set("tokenizer.ggml.merges", strings({"l l", "h e", "he ll", "hell o", "\xC4\xA0 hello"}));
  md.set("tokenizer.ggml.eos_token_id", GgufValue::u32(261));
  return md;
}
constexpr int32_t kHello = 259, kSpaceHello = 260, kEndOfText = 261, kImEnd = 262;

TEST(BpeTokenizer, MergesByRankPerWord) {
  auto tok = build(bpe_metadata());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("hello hello", false, false), (Ids{kHello, kSpaceHello}));
  // One word; both halves merge inside it, lowest rank first.
  EXPECT_EQ(tok->encode("hellohello!", false, false), (Ids{kHello, kHello, '!'}));
  // Bytes outside every merge stay single alphabet characters; the alphabet is in byte order.
  EXPECT_EQ(tok->encode("\n", false, false), (Ids{'\n'}));
  EXPECT_EQ(tok->decode(tok->encode("tab\there \xF0\x9F\xA6\x99 \xFF!", false, false)),
            "tab\there \xF0\x9F\xA6\x99 \xFF!");
}

TEST(BpeTokenizer, SpecialTokensAndFlags) {
  auto tok = build(bpe_metadata());
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->eos_id(), kEndOfText);
  EXPECT_EQ(tok->encode("hello", true, false), (Ids{kHello}));  // gpt-2 adds no BOS by default
  EXPECT_EQ(tok->encode("hello<|endoftext|>", false, true), (Ids{kHello, kEndOfText}));
  const Ids plain = tok->encode("hello<|endoftext|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), kEndOfText), 0);
  EXPECT_EQ(tok->decode(plain), "hello<|endoftext|>");
  EXPECT_EQ(tok->decode(Ids{kHello, kEndOfText}), "hello");
  EXPECT_EQ(tok->decode(Ids{kHello, kEndOfText}, true), "hello<|endoftext|>");
  EXPECT_TRUE(tok->is_end_of_generation(kEndOfText));
  EXPECT_TRUE(tok->is_end_of_generation(kImEnd));  // found by its text
  EXPECT_EQ(tok->decode(Ids{-3, 70000, kHello}), "hello");

  Metadata md = bpe_metadata();
  md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(kEndOfText));
  md.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
  md.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(true));
  auto tok2 = build(md);
  ASSERT_NE(tok2, nullptr);
  EXPECT_EQ(tok2->encode("hello", true, false), (Ids{kEndOfText, kHello, kEndOfText}));
  EXPECT_EQ(tok2->encode("hello", false, false), (Ids{kHello}));
}

ErrorCode make_error(const Metadata& md) {
  auto t = make_tokenizer(md);
  return t.is_ok() ? ErrorCode::kOk : t.status().code();
}

TEST(MakeTokenizer, MissingOrBadMetadataGivesErrors) {
  EXPECT_EQ(make_error(Metadata()), ErrorCode::kNotFound);

  Metadata md = spm_metadata();
  md.set("tokenizer.ggml.model", GgufValue::string("bert"));
  auto bert = make_tokenizer(md);
  ASSERT_FALSE(bert.is_ok());
  EXPECT_EQ(bert.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(bert.status().message().find("bert"), std::string::npos);

  md = spm_metadata();
  md.set("tokenizer.ggml.model", GgufValue::i32(1));
  EXPECT_EQ(make_error(md), ErrorCode::kInvalidArgument);

  Metadata no_tokens;
  no_tokens.set("tokenizer.ggml.model", GgufValue::string("llama"));
  EXPECT_EQ(make_error(no_tokens), ErrorCode::kNotFound);

  md = spm_metadata();
  md.set("tokenizer.ggml.tokens", strings({}));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);

  md = spm_metadata();
  md.set("tokenizer.ggml.scores", floats({0, 0}));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);

  md = spm_metadata();
  md.set("tokenizer.ggml.token_type", strings({"x"}));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);

  md = spm_metadata();
  md.set("tokenizer.ggml.tokens", ints({1, 2, 3}));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);

  md = spm_metadata();
  md.set("tokenizer.ggml.scores", GgufValue::f32(1.0f));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);

  md = spm_metadata();
  md.set("tokenizer.ggml.add_bos_token", GgufValue::string("yes"));
  EXPECT_EQ(make_error(md), ErrorCode::kInvalidArgument);

  md = bpe_metadata();
  Metadata no_merges;
  for (const auto& [k, v] : md.entries()) {
    if (k != "tokenizer.ggml.merges") no_merges.set(k, v);
  }
  EXPECT_EQ(make_error(no_merges), ErrorCode::kNotFound);

  md = bpe_metadata();
  md.set("tokenizer.ggml.merges", strings({"nospace"}));
  EXPECT_EQ(make_error(md), ErrorCode::kCorruptData);
}

TEST(MakeTokenizer, UnknownPreTokenizerIsRefusedByName) {
  Metadata md = bpe_metadata();
  md.set("tokenizer.ggml.pre", GgufValue::string("frobnicator-7b"));
  auto t = make_tokenizer(md);
  ASSERT_FALSE(t.is_ok());
  EXPECT_EQ(t.status().code(), ErrorCode::kUnsupported);
  EXPECT_NE(t.status().message().find("frobnicator-7b"), std::string::npos);
}

TEST(MakeTokenizer, OddValuesAreTolerated) {
  Metadata md = spm_metadata();
  md.set("tokenizer.ggml.bos_token_id", GgufValue::u32(1u << 30));  // out of range: ignored
  md.set("tokenizer.ggml.eos_token_id", GgufValue::i32(-4));
  std::vector<int32_t> types(268, 99);  // unknown token kinds
  md.set("tokenizer.ggml.token_type", ints(types));
  auto tok = build(md);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->bos_id(), 1);  // the default
  EXPECT_EQ(tok->eos_id(), 2);
  (void)tok->encode("a b <s> \xFF", true, true);
  EXPECT_EQ(tok->decode(Ids{0, 1, 2, 260}), "");  // unknown kinds render as nothing
}

TEST(SharedVocabularies, SpecialTokensAndFlags) {
  TS_SKIP_WITHOUT_SHARED(spm_path, "tokenizers/ggml-vocab-llama-spm.gguf");
  TS_SKIP_WITHOUT_SHARED(gpt2_path, "tokenizers/ggml-vocab-gpt-2.gguf");
  auto spm_file = open_model_file(spm_path.string());
  ASSERT_TRUE(spm_file.is_ok()) << spm_file.status().to_string();
  auto spm = build(spm_file->metadata);
  ASSERT_NE(spm, nullptr);
  EXPECT_EQ(spm->encode("Hello", true, false), (Ids{1, 15043}));
  EXPECT_EQ(spm->decode(Ids{1, 15043}), "Hello");
  EXPECT_EQ(spm->encode("<s>Hello</s>", false, true), (Ids{1, 15043, 2}));
  const Ids literal = spm->encode("<s>", false, false);  // spelled out, not the BOS token
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 1), 0);
  EXPECT_EQ(spm->decode(literal), "<s>");
  EXPECT_TRUE(spm->is_end_of_generation(2));

  auto gpt2_file = open_model_file(gpt2_path.string());
  ASSERT_TRUE(gpt2_file.is_ok()) << gpt2_file.status().to_string();
  auto gpt2 = build(gpt2_file->metadata);
  ASSERT_NE(gpt2, nullptr);
  EXPECT_EQ(gpt2->bos_id(), 50256);
  EXPECT_EQ(gpt2->encode("Hello", true, false), (Ids{15496}));  // gpt-2 adds no BOS
  const Ids with_special = gpt2->encode("<|endoftext|>Hello world", false, true);
  EXPECT_EQ(with_special, (Ids{50256, 15496, 995}));
  const Ids without = gpt2->encode("<|endoftext|>Hello world", false, false);
  EXPECT_EQ(std::count(without.begin(), without.end(), 50256), 0);
  EXPECT_EQ(gpt2->decode(without), "<|endoftext|>Hello world");
  EXPECT_TRUE(gpt2->is_end_of_generation(50256));
}

TEST(SharedVocabularies, ArbitraryBytesRoundTrip) {
  // Not deepseek-coder: it has user-defined tokens "õ", "ö", ... that are also the byte-level
  // spelling of bytes 0xF5, 0xF6, ...; a lone such byte encodes to the token and decodes to the
  // letter, which is what the token means in valid text. Not falcon: its vocabulary lacks the
  // alphabet characters of bytes that never occur in its training text, so those are dropped.
  for (const char* name : {"llama-spm", "phi-3", "gpt-2"}) {
    const std::string rel = std::string("tokenizers/ggml-vocab-") + name + ".gguf";
    TS_SKIP_WITHOUT_SHARED(path, rel);
    auto file = open_model_file(path.string());
    ASSERT_TRUE(file.is_ok()) << file.status().to_string();
    auto tok = build(file->metadata);
    ASSERT_NE(tok, nullptr);
    uint64_t state = 0x9E3779B97F4A7C15ull;
    for (int round = 0; round < 200; ++round) {
      std::string text(static_cast<size_t>(round % 40), '\0');
      for (char& c : text) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        c = static_cast<char>(state >> 56);
      }
      // SentencePiece cannot tell an escaped space from a literal U+2581.
      if (text.find("\xE2\x96\x81") != std::string::npos) continue;
      const Ids ids = tok->encode(text, true, false);
      for (int32_t id : ids) ASSERT_TRUE(id >= 0 && id < tok->n_vocab()) << name;
      EXPECT_EQ(tok->decode(ids), text) << name << " round " << round;
    }
  }
}

TEST(SharedVocabularies, EncodeIsThreadSafe) {
  TS_SKIP_WITHOUT_SHARED(path, "tokenizers/ggml-vocab-starcoder.gguf");
  auto file = open_model_file(path.string());
  ASSERT_TRUE(file.is_ok()) << file.status().to_string();
  auto tok = build(file->metadata);
  ASSERT_NE(tok, nullptr);
  const std::string text =
      "def f(x):\n    return x * 12345  # \xE4\xBD\xA0\xE5\xA5\xBD <fim_prefix>\n";
  const Ids expected = tok->encode(text, true, true);
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        if (tok->encode(text, true, true) != expected ||
            tok->decode(expected, /*render_special=*/true) != text)
          ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

}  // namespace tokenizer_behaviour_test
}  // namespace tessera::model
