#include "tessera/model/tokenizer/bpe_tokenizer.h"

#include <fmt/format.h>

#include <queue>

#include "tessera/base/log.h"
#include "tessera/model/tokenizer/byte_unicode.h"

namespace tessera::model {
namespace {

constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr uint64_t kEmpty = ~uint64_t{0};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// A symbol of the word being merged: a token covering some bytes of the word, in a linked list
// of live symbols. `id` is -1 for a byte whose alphabet character is not in the vocabulary.
struct Symbol {
  int prev;
  int next;
  int32_t id;
};

// A possible merge of symbol `left` with its right neighbour. It is stale when either symbol's
// token has changed since it was queued (`left_id`, `right_id` record them).
struct Candidate {
  int32_t rank;
  int left;
  int32_t left_id;
  int32_t right_id;
  int32_t result;
};

// Lowest rank first; among equals the leftmost.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

Result<std::vector<std::string_view>> read_merges(const Metadata& md) {
  if (!md.contains(kMergesKey)) {
    return not_found(fmt::format("byte-level BPE vocabulary has no '{}'", kMergesKey));
  }
  auto arr = md.get_array(kMergesKey);
  if (!arr.is_ok()) return corrupt_data(arr.status().message());
  std::vector<std::string_view> merges;
  merges.reserve((*arr)->items.size());
  for (size_t i = 0; i < (*arr)->items.size(); ++i) {
    auto s = (*arr)->items[i].as_string();
    if (!s.is_ok())
      return corrupt_data(fmt::format("{}[{}]: {}", kMergesKey, i, s.status().message()));
    if (s->size() < 3 || s->find(' ', 1) == std::string_view::npos) {
      return corrupt_data(fmt::format("{}[{}] is '{}'; expected two tokens separated by a space",
                                      kMergesKey, i, *s));
    }
    merges.push_back(*s);
  }
  return merges;
}

}  // namespace

struct BpeTokenizer::Scratch {
  std::string spelled;  // a word in the byte-level alphabet (for ignore_merges)
  std::vector<Symbol> symbols;
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
};

void BpeTokenizer::MergeTable::reserve(size_t n) {
  size_t n_slots = 16;
  while (n_slots < 2 * n) n_slots *= 2;
  keys_.assign(n_slots, kEmpty);
  merges_.assign(n_slots, Merge{});
  n_used_ = 0;
}

size_t BpeTokenizer::MergeTable::slot_of(uint64_t key) const {
  const size_t mask = keys_.size() - 1;
  size_t slot = (key * 0x9E3779B97F4A7C15ull) >> 20 & mask;
  while (keys_[slot] != kEmpty && keys_[slot] != key) slot = (slot + 1) & mask;
  return slot;
}

void BpeTokenizer::MergeTable::insert(int32_t left, int32_t right, Merge merge) {
  TS_CHECK(2 * (n_used_ + 1) <= keys_.size());
  const uint64_t key = pair_key(left, right);
  const size_t slot = slot_of(key);
  if (keys_[slot] == key) return;
  keys_[slot] = key;
  merges_[slot] = merge;
  ++n_used_;
}

const BpeTokenizer::Merge* BpeTokenizer::MergeTable::find(int32_t left, int32_t right) const {
  const uint64_t key = pair_key(left, right);
  const size_t slot = slot_of(key);
  return keys_[slot] == key ? &merges_[slot] : nullptr;
}

Result<std::unique_ptr<Tokenizer>> BpeTokenizer::create(const Metadata& md) {
  TS_ASSIGN_OR_RETURN(std::string pre_name, md.get_string_or("tokenizer.ggml.pre", ""));
  if (pre_name.empty()) {
    log_warn(
        "tokenizer: no tokenizer.ggml.pre; using the 'default' pre-tokenizer, which may "
        "split text differently from the model's own tokenizer");
  }
  TS_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::create(pre_name));
  TS_ASSIGN_OR_RETURN(Vocab vocab, read_vocab(md));
  TS_ASSIGN_OR_RETURN(std::vector<std::string_view> merges, read_merges(md));
  SpecialTokens defaults;
  defaults.add_bos = pre.traits().add_bos;
  TS_ASSIGN_OR_RETURN(SpecialTokens special, read_special_tokens(md, vocab, defaults));
  return std::unique_ptr<Tokenizer>(
      new BpeTokenizer(std::move(vocab), std::move(special), std::move(pre), merges));
}

BpeTokenizer::BpeTokenizer(Vocab vocab, SpecialTokens special, PreTokenizer pre_tokenizer,
                           const std::vector<std::string_view>& merges)
    : VocabTokenizer(std::move(vocab), std::move(special)),
      pre_tokenizer_(std::move(pre_tokenizer)) {
  for (int b = 0; b < 256; ++b)
    byte_ids_[b] = vocab_.find(byte_to_unicode(static_cast<uint8_t>(b)));
  merges_.reserve(merges.size());
  size_t n_skipped = 0;
  std::string joined;
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string_view m = merges[i];
    const size_t space = m.find(' ', 1);  // from 1: a left side may itself be a space
    const int32_t left = space == std::string_view::npos ? -1 : vocab_.find(m.substr(0, space));
    const int32_t right = left < 0 ? -1 : vocab_.find(m.substr(space + 1));
    joined.assign(m.substr(0, space == std::string_view::npos ? 0 : space));
    if (right >= 0) joined.append(m.substr(space + 1));
    const int32_t result = right < 0 ? -1 : vocab_.find(joined);
    if (result < 0) {
      ++n_skipped;
      continue;
    }
    merges_.insert(left, right, {static_cast<int32_t>(i), result});
  }
  if (n_skipped > 0) {
    log_warn("tokenizer: skipped {} of {} merges whose sides or result are not tokens", n_skipped,
             merges.size());
  }
}

void BpeTokenizer::encode_fragment(std::string_view text, bool /*after_special*/,
                                   std::vector<int32_t>& out) const {
  Scratch scratch;
  for (std::string_view word : pre_tokenizer_.split(text)) {
    if (pre_tokenizer_.traits().ignore_merges) {
      scratch.spelled.clear();
      append_byte_level(scratch.spelled, word);
      const int32_t id = vocab_.find(scratch.spelled);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
    }
    encode_word(word, scratch, out);
  }
}

void BpeTokenizer::encode_word(std::string_view word, Scratch& scratch,
                               std::vector<int32_t>& out) const {
  // Each byte is one character of the byte-level alphabet, so it starts as one symbol.
  auto& symbols = scratch.symbols;
  symbols.clear();
  for (size_t i = 0; i < word.size(); ++i) {
    const int index = static_cast<int>(i);
    symbols.push_back({index - 1, index + 1, byte_ids_[static_cast<uint8_t>(word[i])]});
  }
  if (symbols.empty()) return;
  symbols.back().next = -1;

  auto& queue = scratch.queue;
  const auto consider = [&](int left) {
    if (left < 0 || symbols[left].next < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[l.next];
    if (l.id < 0 || r.id < 0) return;
    const Merge* m = merges_.find(l.id, r.id);
    if (m != nullptr) queue.push({m->rank, left, l.id, r.id, m->result});
  };
  for (int i = 0; i + 1 < static_cast<int>(symbols.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& l = symbols[c.left];
    if (l.id != c.left_id || l.next < 0) continue;
    Symbol& r = symbols[l.next];
    if (r.id != c.right_id) continue;  // stale: a side has been merged since
    l.id = c.result;
    r.id = -1;
    l.next = r.next;
    if (l.next >= 0) symbols[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }

  for (int i = 0; i >= 0; i = symbols[i].next) {
    // A byte whose character the vocabulary lacks becomes <unk>, or nothing without one.
    const int32_t id = symbols[i].id >= 0 ? symbols[i].id : special_.unk;
    if (id >= 0) out.push_back(id);
  }
}

std::string BpeTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!vocab_.contains(id)) return {};
  const std::string& text = vocab_.text(id);
  std::string piece;
  switch (vocab_.attr(id)) {
    case TokenAttr::kNormal:
      append_from_byte_level(piece, text);
      return piece;
    case TokenAttr::kByte: {
      const int b = vocab_.token_byte(id);
      if (b >= 0) return std::string(1, static_cast<char>(b));
      append_from_byte_level(piece, text);
      return piece;
    }
    case TokenAttr::kUserDefined:
      return text;
    case TokenAttr::kControl:
    case TokenAttr::kUnknown:
    case TokenAttr::kUnused:
      return render_special ? text : std::string();
  }
  return piece;
}

}  // namespace tessera::model
