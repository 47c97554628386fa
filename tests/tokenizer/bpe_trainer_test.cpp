// BpeTrainer: merge order on corpora small enough to check by hand, against a brute-force
// recount, and the trained vocabulary read back by BpeTokenizer (the trainer's segmentation,
// byte-exact round trips, determinism).
#include "tessera/model/tokenizer/bpe_trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>

#include "tessera/model/format/gguf_writer.h"
#include "tessera/model/format/model_file.h"
#include "tessera/model/tokenizer/byte_unicode.h"
#include "test_util.h"

namespace tessera::model {
namespace bpe_trainer_test {

BpeTrainResult train(const std::string& text, BpeTrainerOptions o) {
  auto t = BpeTrainer::create(std::move(o));
  EXPECT_TRUE(t.is_ok()) << t.status().message();
  if (!t.is_ok()) return {};
  t->add_text(text);
  return t->train();
}

std::unique_ptr<Tokenizer> load(const BpeTrainResult& r) {
  auto tok = make_tokenizer(bpe_vocab_metadata(r));
  EXPECT_TRUE(tok.is_ok()) << tok.status().message();
  return tok.is_ok() ? std::move(*tok) : nullptr;
}

std::string repeat_lines(const std::vector<std::pair<std::string, int>>& words) {
  std::string text;
  for (const auto& [w, n] : words)
    for (int i = 0; i < n; ++i) text += w + "\n";
  return text;
}

// Text with common words, made-up words over Latin, accented, CJK and emoji characters, digits,
// punctuation, odd whitespace and invalid UTF-8, in a fixed pseudo-random order.
std::string mixed_corpus(size_t n_words, uint32_t seed) {
  const std::vector<std::string> pieces = {
      "the", "cat", "sat", "on", "mat", "There's", "won't", "1984", "3.14", "--", "...", "(x)",
      "\t", "  ", "\n\n", "\xFF\xFE", "\xC3"};
  const std::vector<std::string> chars = {
      "a", "e", "i", "o", "u", "n", "r", "s", "t", "l", "k", "m", "Q", "7", "\xC3\xA9",
      "\xC3\xAF", "\xE6\x97\xA5", "\xE6\x9C\xAC", "\xF0\x9F\x98\x80", "'", "-"};
  std::mt19937 rng(seed);
  std::string text;
  for (size_t i = 0; i < n_words; ++i) {
    if (rng() % 3 == 0) {
      text += pieces[rng() % pieces.size()];
    } else {
      // Skewed towards the first characters, so some pairs are much commoner than others.
      for (size_t n = 1 + rng() % 7; n > 0; --n) text += chars[(rng() % chars.size()) * (rng() % 4) / 4];
    }
    text += (rng() % 7 == 0) ? "\n" : " ";
  }
  return text;
}

TEST(BpeTrainer, MergeOrderOfAHandCheckedCorpus) {
  // Pairs: u g 20, p u 17, u n 16, h u 15; after "u g": u n 16, h ug 15, p u 12; after "u n":
  // h ug 15, p un 12; then p un 12; then p ug 5 and hug s 5 tie (p, ug) = (112, 256) is the
  // smaller pair; then hug s 5, b un 4.
  BpeTrainerOptions o;
  o.vocab_size = 256 + 7;
  o.min_frequency = 1;
  const BpeTrainResult r =
      train(repeat_lines({{"hug", 10}, {"pug", 5}, {"pun", 12}, {"bun", 4}, {"hugs", 5}}), o);
  EXPECT_EQ(r.merges, (std::vector<std::string>{"u g", "u n", "h ug", "p un", "p ug", "hug s",
                                                 "b un"}));
  ASSERT_EQ(r.tokens.size(), 263u);
  EXPECT_EQ(r.tokens[256], "ug");
  EXPECT_EQ(r.tokens[262], "bun");
  EXPECT_FALSE(r.below_min_frequency);
  // Every word is one token now; the newlines are single bytes.
  EXPECT_EQ(r.n_tokens, 2 * 36);
  EXPECT_EQ(r.n_words, 2 * 36);
  EXPECT_EQ(r.n_bytes, 10 * 4 + 5 * 4 + 12 * 4 + 4 * 4 + 5 * 5);
}

TEST(BpeTrainer, RepeatedLettersMergeFromTheLeftAndTiesGoToTheSmallerPair) {
  // "aaabdaaabac": a a 4 -> "aa a b d aa a b a c"; then a b 2 ties aa a 2, (97, 98) first;
  // "aa ab d aa ab a c": aa ab 2; then everything once: (a, c) is the smallest pair.
  BpeTrainerOptions o;
  o.vocab_size = 256 + 4;
  o.min_frequency = 1;
  const BpeTrainResult r = train("aaabdaaabac", o);
  EXPECT_EQ(r.merges, (std::vector<std::string>{"a a", "a b", "aa ab", "a c"}));
  ASSERT_EQ(r.words.size(), 1u);
  EXPECT_EQ(r.words[0].ids, (std::vector<int32_t>{258, 'd', 258, 259}));
}

TEST(BpeTrainer, StopsWhenNoPairIsFrequentEnough) {
  BpeTrainerOptions o;
  o.vocab_size = 1000;
  o.min_frequency = 2;
  const BpeTrainResult r = train("abab cdcd", o);
  // "abab": a b 2, b a 1; " cdcd": c d 2 ... only pairs seen twice are merged.
  EXPECT_TRUE(r.below_min_frequency);
  EXPECT_EQ(r.merges, (std::vector<std::string>{"a b", "c d"}));
  EXPECT_EQ(r.tokens.size(), 258u);
}

// A plain reference: recount every pair of every word before each merge, strings as symbols.
std::vector<std::string> brute_force_merges(const std::string& text, size_t k) {
  auto pre = PreTokenizer::create("gpt-2");
  std::map<std::string, int64_t> counts;
  for (std::string_view w : pre->split(text)) ++counts[std::string(w)];
  std::map<std::string, int32_t> ids;  // token spelling -> id, for the tie-break
  std::vector<std::pair<std::vector<std::string>, int64_t>> words;
  for (int b = 0; b < 256; ++b) ids[std::string(byte_to_unicode(static_cast<uint8_t>(b)))] = b;
  for (const auto& [w, n] : counts) {
    std::vector<std::string> syms;
    for (char c : w) syms.emplace_back(byte_to_unicode(static_cast<uint8_t>(c)));
    words.push_back({syms, n});
  }
  std::vector<std::string> merges;
  while (merges.size() < k) {
    std::map<std::pair<int32_t, int32_t>, int64_t> pairs;
    for (const auto& [syms, n] : words)
      for (size_t i = 0; i + 1 < syms.size(); ++i) pairs[{ids[syms[i]], ids[syms[i + 1]]}] += n;
    if (pairs.empty()) break;
    auto best = pairs.begin();  // the map is ordered by pair: the first of the highest wins
    for (auto it = pairs.begin(); it != pairs.end(); ++it)
      if (it->second > best->second) best = it;
    std::string left, right;
    for (const auto& [s, id] : ids) {
      if (id == best->first.first) left = s;
      if (id == best->first.second) right = s;
    }
    EXPECT_FALSE(ids.contains(left + right)) << left << right;  // never (see bpe_trainer.h)
    ids[left + right] = static_cast<int32_t>(ids.size());
    merges.push_back(left + " " + right);
    for (auto& [syms, n] : words) {
      std::vector<std::string> out;
      for (size_t i = 0; i < syms.size(); ++i) {
        if (i + 1 < syms.size() && syms[i] == left && syms[i + 1] == right) {
          out.push_back(left + right);
          ++i;
        } else {
          out.push_back(syms[i]);
        }
      }
      syms = std::move(out);
    }
  }
  return merges;
}

TEST(BpeTrainer, FirstMergesMatchABruteForceRecount) {
  const std::string text = mixed_corpus(3000, 7);
  constexpr size_t kMerges = 120;
  BpeTrainerOptions o;
  o.vocab_size = 256 + kMerges;
  o.min_frequency = 1;
  const BpeTrainResult r = train(text, o);
  EXPECT_EQ(r.merges, brute_force_merges(text, kMerges));
}

TEST(BpeTrainer, BpeTokenizerReproducesTheTrainedSegmentation) {
  const std::string text = mixed_corpus(20000, 1);
  BpeTrainerOptions o;
  o.vocab_size = 3000;
  o.min_frequency = 1;
  o.eos = "<|endoftext|>";
  const BpeTrainResult r = train(text, o);
  ASSERT_FALSE(r.words.empty());
  EXPECT_EQ(r.n_skipped_pairs, 0);  // no token is made by two pairs (see bpe_trainer.h)
  auto tok = load(r);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->n_vocab(), 3000);
  EXPECT_EQ(tok->eos_id(), 2999);
  for (const BpeTrainedWord& w : r.words) {
    EXPECT_EQ(tok->encode(w.bytes, false, false), w.ids) << "word '" << w.bytes << "'";
  }
  // The whole text too: as many tokens as the trainer counted.
  EXPECT_EQ(static_cast<int64_t>(tok->encode(text, false, false).size()), r.n_tokens);
}

TEST(BpeTrainer, DecodeOfEncodeIsByteExact) {
  BpeTrainerOptions o;
  o.vocab_size = 600;
  o.eos = "<|endoftext|>";
  const BpeTrainResult r = train(mixed_corpus(20000, 2), o);
  auto tok = load(r);
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::string s;
    const size_t n = rng() % 200;
    if (trial % 2 == 0) {  // arbitrary bytes
      for (size_t i = 0; i < n; ++i) s += static_cast<char>(rng() & 0xff);
    } else {  // valid UTF-8 from all planes
      for (size_t i = 0; i < n; ++i) {
        uint32_t cp = rng() % 0x110000;
        if (cp >= 0xD800 && cp < 0xE000) cp = 'x';
        if (cp < 0x80) {
          s += static_cast<char>(cp);
        } else if (cp < 0x800) {
          s += static_cast<char>(0xC0 | cp >> 6);
          s += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
          s += static_cast<char>(0xE0 | cp >> 12);
          s += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
          s += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          s += static_cast<char>(0xF0 | cp >> 18);
          s += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
          s += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
          s += static_cast<char>(0x80 | (cp & 0x3F));
        }
      }
    }
    const auto ids = tok->encode(s, false, false);
    EXPECT_EQ(tok->decode(ids), s) << "trial " << trial;
  }
  // The special token's string is plain text unless parse_special.
  const auto ids = tok->encode("a<|endoftext|>b", false, true);
  EXPECT_NE(std::find(ids.begin(), ids.end(), tok->eos_id()), ids.end());
  EXPECT_EQ(tok->decode(tok->encode("a<|endoftext|>b", false, false)), "a<|endoftext|>b");
}

TEST(BpeTrainer, SameTextSameFileBytesWhateverTheWordOrder) {
  BpeTrainerOptions o;
  o.vocab_size = 500;
  o.special_tokens = {"<|endoftext|>", "<|pad|>"};
  auto bytes_of = [&](const std::string& t) {
    GgufWriter w;
    const Metadata md = bpe_vocab_metadata(train(t, o));
    for (const auto& [k, v] : md.entries()) w.metadata().set(k, v);
    return w.serialize();
  };
  // Lines that start and end with a word: shuffled, they give the same word counts, hence the
  // same vocabulary.
  const std::vector<std::string> words = {"the", "cat", "sat", "on", "mat", "1984", "caf\xC3\xA9",
                                          "don't", "x+y", "\xE6\x97\xA5\xE6\x9C\xAC"};
  std::mt19937 rng(4);
  std::vector<std::string> lines;
  for (int i = 0; i < 2000; ++i) {
    std::string line = words[rng() % words.size()];
    for (int j = 0; j < 6; ++j) line += " " + words[rng() % words.size()];
    lines.push_back(line + "\n");
  }
  std::string text, shuffled;
  for (const auto& l : lines) text += l;
  const auto a = bytes_of(text);
  EXPECT_EQ(a, bytes_of(text));
  std::shuffle(lines.begin(), lines.end(), rng);
  for (const auto& l : lines) shuffled += l;
  ASSERT_NE(text, shuffled);
  EXPECT_EQ(a, bytes_of(shuffled));
}

TEST(BpeTrainer, SpecialTokensAreCutOutAndGetTheLastIds) {
  BpeTrainerOptions o;
  o.vocab_size = 256 + 1 + 2;
  o.min_frequency = 1;
  o.special_tokens = {"<|endoftext|>"};
  o.bos = "<s>";
  o.eos = "<|endoftext|>";
  const BpeTrainResult r = train("xy<|endoftext|>xy<s>", o);
  // Only "xy" twice is counted: "|e" and friends never are.
  EXPECT_EQ(r.merges, (std::vector<std::string>{"x y"}));
  EXPECT_EQ(r.n_bytes, 4);
  ASSERT_EQ(r.tokens.size(), 259u);
  EXPECT_EQ(r.tokens[257], "<|endoftext|>");
  EXPECT_EQ(r.tokens[258], "<s>");
  EXPECT_EQ(r.attrs[258], TokenAttr::kControl);
  EXPECT_EQ(r.eos, 257);
  EXPECT_EQ(r.bos, 258);
}

TEST(BpeTrainer, APairSpellingASpecialTokenIsNeverMerged) {
  // The text " the" is spelled "Ġthe" in the byte-level alphabet, the special token's string,
  // which the matcher does not cut out of the raw text. Ties: (Ġ, t) = (32, 116) first, then
  // (h, e) = (104, 101) before (Ġt, h) = (256, 104); then (Ġt, he) would spell the special token.
  BpeTrainerOptions o;
  o.vocab_size = 256 + 3 + 1;
  o.min_frequency = 1;
  o.special_tokens = {"\xC4\xA0the"};
  const BpeTrainResult r = train(" the the the the", o);
  EXPECT_EQ(r.merges, (std::vector<std::string>{"\xC4\xA0 t", "h e"}));
  EXPECT_EQ(r.n_skipped_pairs, 1);
  EXPECT_TRUE(r.below_min_frequency);
  auto tok = load(r);
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode(" the", false, false), (std::vector<int32_t>{256, 257}));
  EXPECT_EQ(tok->decode(tok->encode(" the the", false, false)), " the the");
}

TEST(BpeTrainer, RefusesBadOptions) {
  BpeTrainerOptions o;
  o.vocab_size = 256;
  o.eos = "<eos>";
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kInvalidArgument);
  o.vocab_size = 300;
  o.special_tokens = {"<a>", "<a>"};
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kInvalidArgument);
  o.special_tokens = {""};
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kInvalidArgument);
  o.special_tokens = {"\xC4\xA0"};  // "Ġ" is the space byte's spelling
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kInvalidArgument);
  o.special_tokens = {};
  o.min_frequency = 0;
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kInvalidArgument);
  o.min_frequency = 1;
  o.pre_tokenizer = "no-such-pre";
  EXPECT_EQ(BpeTrainer::create(o).status().code(), ErrorCode::kUnsupported);
}

TEST(BpeTrainer, TrainedFileLoadsThroughTheModelFileReader) {
  testing::TempDir dir;
  BpeTrainerOptions o;
  o.vocab_size = 400;
  o.eos = "<|endoftext|>";
  const BpeTrainResult r = train(mixed_corpus(4000, 5), o);
  GgufWriter w;
  const Metadata md = bpe_vocab_metadata(r);
  for (const auto& [k, v] : md.entries()) w.metadata().set(k, v);
  ASSERT_TRUE(w.write(dir.file("tok.gguf")).is_ok());
  auto f = open_model_file(dir.file("tok.gguf"));
  ASSERT_TRUE(f.is_ok()) << f.status().message();
  auto tok = make_tokenizer(f->metadata);
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  EXPECT_EQ((*tok)->n_vocab(), 400);
  const std::string s = "the cat sat on the mat, caf\xC3\xA9 1984";
  EXPECT_EQ((*tok)->decode((*tok)->encode(s, false, false)), s);
}

}  // namespace bpe_trainer_test
}  // namespace tessera::model
