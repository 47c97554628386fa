#include "tessera/model/tokenizer/llama2c_tokenizer.h"

#include <fmt/format.h>

#include <cstring>
#include <queue>

#include "tessera/base/mapped_file.h"

namespace tessera::model {
namespace {

// Reads little-endian values from a byte span, failing instead of reading past its end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  template <typename T>
  bool read(T& value) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool read_string(size_t n, std::string& out) {
    if (bytes_.size() - pos_ < n) return false;
    out.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return true;
  }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  std::span<const std::byte> bytes_;
  size_t pos_ = 0;
};

// A token of the sequence being merged, in a linked list; merged-away tokens have id -1.
struct Node {
  int prev;
  int next;
  int32_t id;
};

// A possible merge of node `left` with its right neighbour into token `merged`. The candidate is
// stale if either node's token has changed since (`left_id`, `right_id` record them).
struct Candidate {
  float score;
  int left;
  int32_t left_id;
  int32_t right_id;
  int32_t merged;
};

// Highest score first; among equals the leftmost, which is what run.c's strict '>' scan picks.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> Llama2cTokenizer::load(const std::string& path,
                                                          int32_t n_vocab) {
  if (n_vocab < kFirstByte) {
    return invalid_argument(
        fmt::format("llama2.c tokenizer {}: vocabulary size {} is too small; "
                    "ids 0-2 are <unk>, BOS and EOS",
                    path, n_vocab));
  }
  auto mapped = MappedFile::open(path);
  if (!mapped.is_ok()) return mapped.status().with_context("loading llama2.c tokenizer");
  Reader reader((*mapped)->bytes());
  const auto corrupt = [&](const std::string& what) {
    return corrupt_data(fmt::format("llama2.c tokenizer {}: {}", path, what));
  };
  int32_t max_token_length = 0;
  if (!reader.read(max_token_length)) return corrupt("file is shorter than its 4-byte header");
  if (max_token_length < 0)
    return corrupt(fmt::format("negative max_token_length {}", max_token_length));

  std::vector<std::string> texts(static_cast<size_t>(n_vocab));
  std::vector<float> scores(static_cast<size_t>(n_vocab));
  std::vector<TokenAttr> attrs(static_cast<size_t>(n_vocab), TokenAttr::kNormal);
  for (int32_t i = 0; i < n_vocab; ++i) {
    int32_t len = 0;
    if (!reader.read(scores[i]) || !reader.read(len)) {
      return corrupt(fmt::format("file ends at token {} of {}; is n_vocab right?", i, n_vocab));
    }
    if (len < 0) return corrupt(fmt::format("token {} has negative length {}", i, len));
    if (static_cast<size_t>(len) > reader.remaining()) {
      return corrupt(fmt::format("token {} has length {} but only {} bytes remain", i, len,
                                 reader.remaining()));
    }
    if (!reader.read_string(static_cast<size_t>(len), texts[i])) return corrupt("unreachable");
  }
  attrs[kUnk] = TokenAttr::kUnknown;
  attrs[kBos] = TokenAttr::kControl;
  attrs[kEos] = TokenAttr::kControl;
  for (int32_t i = kFirstByte; i < n_vocab && i < kFirstByte + 256; ++i) {
    if (texts[i] == fmt::format("<0x{:02X}>", i - kFirstByte)) attrs[i] = TokenAttr::kByte;
  }
  return std::unique_ptr<Tokenizer>(
      new Llama2cTokenizer(Vocab(std::move(texts), std::move(scores), std::move(attrs))));
}

Llama2cTokenizer::Llama2cTokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

std::vector<int32_t> Llama2cTokenizer::encode(std::string_view text, bool add_special,
                                              bool /*parse_special*/) const {
  std::vector<int32_t> out;
  if (add_special) out.push_back(kBos);
  const std::vector<int32_t> ids = merge(spell(text));
  out.insert(out.end(), ids.begin(), ids.end());
  return out;
}

std::vector<int32_t> Llama2cTokenizer::spell(std::string_view text) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() + 1);
  if (!text.empty()) {
    const int32_t space = vocab_.find(" ");
    if (space >= 0) ids.push_back(space);
  }
  // run.c groups a lead byte with up to 3 following continuation bytes, whatever the lead says.
  for (size_t pos = 0; pos < text.size();) {
    size_t len = 1;
    while (len < 4 && pos + len < text.size() &&
           (static_cast<uint8_t>(text[pos + len]) & 0xC0) == 0x80) {
      ++len;
    }
    const std::string_view ch = text.substr(pos, len);
    const int32_t id = vocab_.find(ch);
    if (id >= 0) {
      ids.push_back(id);
    } else {
      for (char c : ch) {
        const int32_t byte_id = static_cast<uint8_t>(c) + kFirstByte;
        ids.push_back(byte_id < vocab_.size() ? byte_id : kUnk);
      }
    }
    pos += len;
  }
  return ids;
}

std::vector<int32_t> Llama2cTokenizer::merge(const std::vector<int32_t>& ids) const {
  if (ids.empty()) return {};
  std::vector<Node> nodes;
  nodes.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    const int index = static_cast<int>(i);
    nodes.push_back({index - 1, index + 1, ids[i]});
  }
  nodes.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  std::string key;
  const auto consider = [&](int left) {
    if (left < 0 || nodes[left].next < 0) return;
    const Node& l = nodes[left];
    const Node& r = nodes[l.next];
    key.assign(vocab_.text(l.id));
    key += vocab_.text(r.id);
    const int32_t merged = vocab_.find(key);
    if (merged < 0) return;
    queue.push({vocab_.score(merged), left, l.id, r.id, merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(nodes.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Node& l = nodes[c.left];
    if (l.id != c.left_id || l.next < 0) continue;
    Node& r = nodes[l.next];
    if (r.id != c.right_id) continue;  // stale: a side has been merged since
    l.id = c.merged;
    r.id = -1;
    l.next = r.next;
    if (l.next >= 0) nodes[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
  std::vector<int32_t> merged;
  for (int i = 0; i >= 0; i = nodes[i].next) merged.push_back(nodes[i].id);
  return merged;
}

std::string Llama2cTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!vocab_.contains(id)) return {};
  switch (vocab_.attr(id)) {
    case TokenAttr::kByte:
      return std::string(1, static_cast<char>(vocab_.token_byte(id)));
    case TokenAttr::kUnknown:
    case TokenAttr::kControl:
      return render_special ? vocab_.text(id) : std::string();
    default:
      return vocab_.text(id);
  }
}

std::string Llama2cTokenizer::decode(std::span<const int32_t> ids, bool render_special,
                                     bool strip_leading_space) const {
  std::string out;
  int32_t prev = kBos;  // the start of a sequence counts as following BOS
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip_leading_space && prev == kBos && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
    out += piece;
    prev = id;
  }
  return out;
}

std::string_view Llama2cTokenizer::token_text(int32_t id) const {
  return vocab_.contains(id) ? std::string_view(vocab_.text(id)) : std::string_view();
}

}  // namespace tessera::model
