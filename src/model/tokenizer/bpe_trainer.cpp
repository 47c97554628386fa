#include "tessera/model/tokenizer/bpe_trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "tessera/base/check.h"
#include "tessera/model/tokenizer/byte_unicode.h"
#include "tessera/model/tokenizer/special_tokens.h"
#include "tessera/model/tokenizer/vocab.h"

namespace tessera::model {
namespace {

using PairKey = uint64_t;

PairKey pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}
int32_t left_of(PairKey k) { return static_cast<int32_t>(k >> 32); }
int32_t right_of(PairKey k) { return static_cast<int32_t>(k & 0xffffffffu); }

// A heap entry: a pair and its count when pushed. Counts only fall after a push (new pairs all
// contain the newest token and are pushed when first complete), so an entry whose count is
// above the pair's current one is stale and is pushed again with the current count.
struct HeapEntry {
  int64_t count;
  PairKey pair;
};
// Highest count first; among equals the smaller (left, right), which the key orders.
struct HeapOrder {
  bool operator()(const HeapEntry& a, const HeapEntry& b) const {
    return a.count < b.count || (a.count == b.count && a.pair > b.pair);
  }
};

// The working state of one train() call.
struct Work {
  std::vector<std::vector<int32_t>> words;  // token ids of each distinct word
  std::vector<int64_t> counts;              // occurrences of each distinct word
  std::unordered_map<PairKey, int64_t> pair_counts;
  // Words that contained the pair when it appeared; entries may be stale or repeated.
  std::unordered_map<PairKey, std::vector<int32_t>> pair_words;
  std::vector<int32_t> visited;  // per word: the merge number that last rewrote it
  std::priority_queue<HeapEntry, std::vector<HeapEntry>, HeapOrder> heap;
  std::vector<std::pair<PairKey, int>> deltas;  // scratch: pair changes within one word

  void add_pair_count(PairKey p, int64_t d) {
    auto it = pair_counts.try_emplace(p, 0).first;
    it->second += d;
    if (it->second == 0) pair_counts.erase(it);
  }
  int64_t pair_count(PairKey p) const {
    auto it = pair_counts.find(p);
    return it == pair_counts.end() ? 0 : it->second;
  }
};

// Rewrites word `w`, replacing each (left, right) from the left by `merged`, and updates the pair
// counts and index by the difference between its old and new pairs. Appends to `new_pairs` the
// pairs (all containing `merged`) that gained occurrences.
void merge_in_word(Work& s, int32_t w, int32_t left, int32_t right, int32_t merged,
                   std::vector<PairKey>& new_pairs) {
  std::vector<int32_t>& ids = s.words[static_cast<size_t>(w)];
  auto& deltas = s.deltas;
  deltas.clear();
  for (size_t i = 0; i + 1 < ids.size(); ++i) deltas.push_back({pair_key(ids[i], ids[i + 1]), -1});
  size_t out = 0;
  for (size_t i = 0; i < ids.size(); ++out) {
    if (i + 1 < ids.size() && ids[i] == left && ids[i + 1] == right) {
      ids[out] = merged;
      i += 2;
    } else {
      ids[out] = ids[i++];
    }
  }
  if (out == ids.size()) return;  // a stale index entry: the word no longer has the pair
  ids.resize(out);
  for (size_t i = 0; i + 1 < ids.size(); ++i) deltas.push_back({pair_key(ids[i], ids[i + 1]), +1});
  // Words are short: sorting the few pairs and summing runs gives the net change per pair.
  std::sort(deltas.begin(), deltas.end());
  const int64_t count = s.counts[static_cast<size_t>(w)];
  for (size_t i = 0; i < deltas.size();) {
    const PairKey p = deltas[i].first;
    int net = 0;
    for (; i < deltas.size() && deltas[i].first == p; ++i) net += deltas[i].second;
    if (net == 0) continue;
    s.add_pair_count(p, net * count);
    if (net > 0) {
      // Only pairs with the new token can be new to this word.
      TS_CHECK(left_of(p) == merged || right_of(p) == merged);
      s.pair_words[p].push_back(w);
      new_pairs.push_back(p);
    }
  }
}

}  // namespace

Result<BpeTrainer> BpeTrainer::create(BpeTrainerOptions options) {
  if (options.min_frequency < 1) return invalid_argument("min_frequency must be at least 1");
  TS_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(options.pre_tokenizer));
  std::vector<std::string> specials;
  std::unordered_set<std::string> seen;
  for (const std::string& t : options.special_tokens) {
    if (t.empty()) return invalid_argument("a special token is empty");
    if (!seen.insert(t).second) {
      return invalid_argument(fmt::format("special token '{}' is given twice", t));
    }
    specials.push_back(t);
  }
  for (const std::string& t : {options.bos, options.eos}) {
    if (!t.empty() && seen.insert(t).second) specials.push_back(t);
  }
  for (int b = 0; b < 256; ++b) {
    if (seen.contains(std::string(byte_to_unicode(static_cast<uint8_t>(b))))) {
      return invalid_argument(fmt::format(
          "special token '{}' spells byte 0x{:02X} in the byte-level alphabet; choose another string",
          byte_to_unicode(static_cast<uint8_t>(b)), b));
    }
  }
  const int64_t minimum = 256 + static_cast<int64_t>(specials.size());
  if (options.vocab_size < minimum) {
    return invalid_argument(fmt::format(
        "vocab_size {} is too small: the 256 byte tokens and {} special tokens need {}",
        options.vocab_size, specials.size(), minimum));
  }
  return BpeTrainer(std::move(options), std::move(pre), std::move(specials));
}

BpeTrainer::BpeTrainer(BpeTrainerOptions options, PreTokenizer pre,
                       std::vector<std::string> specials)
    : options_(std::move(options)), pre_(std::move(pre)), specials_(std::move(specials)) {}

void BpeTrainer::add_text(std::string_view text) {
  // Special token strings are cut out with the matcher encoding uses, so their bytes are
  // never counted (as HuggingFace's trainer does with added tokens).
  std::vector<std::string> texts = specials_;
  const Vocab vocab(std::move(texts), std::vector<float>(specials_.size(), 0.0f),
                    std::vector<TokenAttr>(specials_.size(), TokenAttr::kControl));
  const SpecialTokenMatcher matcher(vocab);
  for (const Fragment& f : matcher.partition(text, /*parse_special=*/true)) {
    if (f.token >= 0) continue;
    for (std::string_view word : pre_.split(f.text)) {
      ++n_words_;
      n_bytes_ += static_cast<int64_t>(word.size());
      auto [it, inserted] =
          word_index_.try_emplace(std::string(word), static_cast<int32_t>(word_bytes_.size()));
      if (inserted) {
        word_bytes_.emplace_back(word);
        word_counts_.push_back(0);
      }
      ++word_counts_[static_cast<size_t>(it->second)];
    }
  }
}

BpeTrainResult BpeTrainer::train(const BpeProgressFn& progress) {
  BpeTrainResult r;
  r.pre_tokenizer = options_.pre_tokenizer;
  r.n_bytes = n_bytes_;
  r.n_words = n_words_;
  // Token b is byte b, spelled in the byte-level alphabet.
  std::unordered_map<std::string, int32_t> token_ids;
  for (int b = 0; b < 256; ++b) {
    r.tokens.emplace_back(byte_to_unicode(static_cast<uint8_t>(b)));
    r.attrs.push_back(TokenAttr::kNormal);
    token_ids.emplace(r.tokens.back(), b);
  }
  // Special tokens' strings are reserved so that no learned token takes one.
  for (const std::string& t : specials_) token_ids.emplace(t, -1);

  Work s;
  s.words.resize(word_bytes_.size());
  s.counts = std::move(word_counts_);
  s.visited.assign(word_bytes_.size(), -1);
  for (size_t w = 0; w < word_bytes_.size(); ++w) {
    const std::string& bytes = word_bytes_[w];
    auto& ids = s.words[w];
    ids.reserve(bytes.size());
    for (char c : bytes) ids.push_back(static_cast<uint8_t>(c));
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const PairKey p = pair_key(ids[i], ids[i + 1]);
      s.add_pair_count(p, s.counts[w]);
      s.pair_words[p].push_back(static_cast<int32_t>(w));
    }
  }
  for (const auto& [p, count] : s.pair_counts) s.heap.push({count, p});
  word_index_.clear();

  const int32_t target =
      options_.vocab_size - 256 - static_cast<int32_t>(specials_.size());  // merges wanted
  std::vector<PairKey> new_pairs;
  int64_t last_count = 0;
  while (static_cast<int32_t>(r.merges.size()) < target) {
    if (s.heap.empty()) {
      r.below_min_frequency = true;
      break;
    }
    const HeapEntry top = s.heap.top();
    s.heap.pop();
    const int64_t count = s.pair_count(top.pair);
    if (count == 0) continue;  // merged already, or gone
    if (count != top.count) {  // stale: fell since it was pushed
      s.heap.push({count, top.pair});
      continue;
    }
    if (count < options_.min_frequency) {
      r.below_min_frequency = true;
      break;
    }
    const int32_t left = left_of(top.pair), right = right_of(top.pair);
    std::string text = r.tokens[static_cast<size_t>(left)] + r.tokens[static_cast<size_t>(right)];
    if (auto taken = token_ids.find(text); taken != token_ids.end()) {
      // Only a special token's string can be taken (see the header). The pair is dropped for
      // good: the heap gets only pairs with the newest token from here on.
      TS_CHECK_MSG(taken->second < 0, "a learned token would be made by a second pair");
      ++r.n_skipped_pairs;
      continue;
    }
    const auto merged = static_cast<int32_t>(r.tokens.size());
    const auto n_merge = static_cast<int32_t>(r.merges.size());
    r.merges.push_back(r.tokens[static_cast<size_t>(left)] + " " +
                       r.tokens[static_cast<size_t>(right)]);
    token_ids.emplace(text, merged);
    r.tokens.push_back(std::move(text));
    r.attrs.push_back(TokenAttr::kNormal);

    auto node = s.pair_words.extract(top.pair);
    new_pairs.clear();
    for (int32_t w : node.mapped()) {
      if (s.visited[static_cast<size_t>(w)] == n_merge) continue;
      s.visited[static_cast<size_t>(w)] = n_merge;
      merge_in_word(s, w, left, right, merged, new_pairs);
    }
    TS_CHECK(s.pair_count(top.pair) == 0);
    std::sort(new_pairs.begin(), new_pairs.end());
    new_pairs.erase(std::unique(new_pairs.begin(), new_pairs.end()), new_pairs.end());
    for (PairKey p : new_pairs) {
      const int64_t c = s.pair_count(p);
      if (c > 0) s.heap.push({c, p});
    }
    last_count = count;
    if (progress && r.merges.size() % 64 == 0) {
      progress(static_cast<int32_t>(r.merges.size()), target, count);
    }
  }
  if (progress) progress(static_cast<int32_t>(r.merges.size()), target, last_count);

  for (const std::string& t : specials_) {
    const auto id = static_cast<int32_t>(r.tokens.size());
    if (t == options_.bos) r.bos = id;
    if (t == options_.eos) r.eos = id;
    r.tokens.push_back(t);
    r.attrs.push_back(TokenAttr::kControl);
  }
  r.words.reserve(s.words.size());
  for (size_t w = 0; w < s.words.size(); ++w) {
    r.n_tokens += s.counts[w] * static_cast<int64_t>(s.words[w].size());
    r.words.push_back({std::move(word_bytes_[w]), s.counts[w], std::move(s.words[w])});
  }
  word_bytes_.clear();
  word_counts_.clear();
  return r;
}

Metadata bpe_vocab_metadata(const BpeTrainResult& r) {
  GgufArray tokens{GgufType::kString, {}};
  GgufArray types{GgufType::kInt32, {}};
  GgufArray merges{GgufType::kString, {}};
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    tokens.items.push_back(GgufValue::string(r.tokens[i]));
    types.items.push_back(GgufValue::i32(static_cast<int32_t>(r.attrs[i])));
  }
  for (const std::string& m : r.merges) merges.items.push_back(GgufValue::string(m));
  Metadata m;
  m.set("tokenizer.ggml.model", GgufValue::string("gpt2"));
  m.set("tokenizer.ggml.pre", GgufValue::string(r.pre_tokenizer));
  m.set("tokenizer.ggml.tokens", GgufValue::array(std::move(tokens)));
  m.set("tokenizer.ggml.token_type", GgufValue::array(std::move(types)));
  m.set("tokenizer.ggml.merges", GgufValue::array(std::move(merges)));
  if (r.bos >= 0) m.set("tokenizer.ggml.bos_token_id", GgufValue::u32(static_cast<uint32_t>(r.bos)));
  if (r.eos >= 0) m.set("tokenizer.ggml.eos_token_id", GgufValue::u32(static_cast<uint32_t>(r.eos)));
  // `tessera train` tokenizes without BOS/EOS, so the model never saw them around its text.
  m.set("tokenizer.ggml.add_bos_token", GgufValue::boolean(false));
  m.set("tokenizer.ggml.add_eos_token", GgufValue::boolean(false));
  return m;
}

}  // namespace tessera::model
