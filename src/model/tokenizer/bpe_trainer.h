// BpeTrainer: learns a byte-level BPE vocabulary (GPT-2 style, what BpeTokenizer reads) from text.
// Text is split into words by a named pre-tokenizer (default "gpt-2": GPT-2's regular expression;
// any name PreTokenizer::create knows works), equal words are counted once, and starting from the
// 256 single-byte tokens the most frequent adjacent pair of tokens is merged, again and again,
// until the vocabulary reaches its target size. Ties go to the smaller (left id, right id) pair,
// so the result depends on the text alone (not on word order, hashing or threads).
//
// Pair counts are updated incrementally: an index from each pair to the words containing it
// limits each merge to the words it changes, and a max-heap of (count, pair) with lazy deletion
// finds the next pair. Cost: O(B) to pre-tokenize B bytes, then per merge O(sum of the lengths
// of the words containing the pair, times log of their length) plus O(log H) per heap push; no
// full recount ever happens.
//
// Encoding a training word with BpeTokenizer (lowest merge rank first, leftmost among equals)
// gives exactly the trainer's segmentation of it (tests check this), because no token is made by
// two merges: a boundary between tokens never reappears once merged away, and merges never cross
// one, so a stretch of text that ends up as two tokens C, D was split exactly as the word C+D
// alone would be at every step; had C+D been made earlier by another pair, it would be one token.
// The only string a pair can spell that is already taken is a special token's (a special token
// "Ġthe" and the text " the"): such a pair is never merged (counted in n_skipped_pairs).
// Thread-safety: a BpeTrainer is used by one thread; results are plain values.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tessera/base/status.h"
#include "tessera/model/format/metadata.h"
#include "tessera/model/tokenizer/pretokenizer.h"
#include "tessera/model/tokenizer/tokenizer.h"

namespace tessera::model {

struct BpeTrainerOptions {
  // Total tokens: 256 bytes + learned merges + special tokens. Training stops earlier when no
  // pair occurs min_frequency times.
  int32_t vocab_size = 8192;
  int64_t min_frequency = 2;
  // tokenizer.ggml.pre of the result. Pre-tokenizers with ignore_merges (llama3, tekken) encode a
  // word that is itself a token as that token, which may differ from the trained segmentation.
  std::string pre_tokenizer = "gpt-2";
  // Control tokens, appended after the learned tokens in this order, then bos and eos if they
  // are not among them. Their strings are cut out of the training text (never counted).
  std::vector<std::string> special_tokens;
  std::string bos;  // "" for none
  std::string eos;  // "" for none
};

// One distinct word of the training text and how the trained merges split it.
struct BpeTrainedWord {
  std::string bytes;
  int64_t count = 0;
  std::vector<int32_t> ids;
};

struct BpeTrainResult {
  std::vector<std::string> tokens;  // byte-level spelling; special tokens verbatim
  std::vector<TokenAttr> attrs;     // kNormal, or kControl for special tokens
  std::vector<std::string> merges;  // "left right" in rank order; merge i made token 256 + i
  int32_t bos = -1;
  int32_t eos = -1;
  std::string pre_tokenizer;
  std::vector<BpeTrainedWord> words;  // in order of first appearance

  int64_t n_bytes = 0;          // bytes of text counted (special token strings excluded)
  int64_t n_words = 0;          // pre-tokenized words, with repeats
  int64_t n_tokens = 0;         // tokens of the counted text under the trained merges
  int64_t n_skipped_pairs = 0;  // pairs not merged because they spell a special token
  bool below_min_frequency = false;  // stopped before vocab_size: no pair was frequent enough
};

// Progress of train(): merges done, merges wanted, and the count of the pair just merged.
using BpeProgressFn = std::function<void(int32_t n_merges, int32_t target, int64_t count)>;

class BpeTrainer {
 public:
  // Errors: kInvalidArgument for a vocab_size below 256 + the special tokens, a min_frequency
  // below 1, an empty or repeated special token or one spelling a single byte in the byte-level
  // alphabet ("Ā" is byte 0); kUnsupported for an unknown pre-tokenizer.
  static Result<BpeTrainer> create(BpeTrainerOptions options);

  // Counts the words of `text`. May be called several times; a word never spans two calls, so
  // a caller feeding a text in pieces should cut it at newlines.
  void add_text(std::string_view text);

  // Learns the merges. The counted words are consumed: call once. `progress` (optional) is
  // called every 64 merges and at the end.
  BpeTrainResult train(const BpeProgressFn& progress = {});

 private:
  explicit BpeTrainer(BpeTrainerOptions options, PreTokenizer pre, std::vector<std::string> specials);

  BpeTrainerOptions options_;
  PreTokenizer pre_;
  std::vector<std::string> specials_;  // special_tokens, then bos and eos if new
  std::unordered_map<std::string, int32_t> word_index_;
  std::vector<std::string> word_bytes_;
  std::vector<int64_t> word_counts_;
  int64_t n_bytes_ = 0;
  int64_t n_words_ = 0;
};

// The tokenizer.ggml.* metadata of a trained vocabulary (model "gpt2", pre, tokens, token_type,
// merges, BOS/EOS ids; add_bos/add_eos false), which make_tokenizer() reads back.
Metadata bpe_vocab_metadata(const BpeTrainResult& result);

}  // namespace tessera::model
