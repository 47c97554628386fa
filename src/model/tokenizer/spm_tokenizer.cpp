#include "tessera/model/tokenizer/spm_tokenizer.h"

#include <queue>

#include "tessera/model/tokenizer/utf8.h"

namespace tessera::model {
namespace {

// A piece of the text being merged: bytes [start, start + len) of the escaped text, in a linked
// list of live pieces. A piece merged into its left neighbour keeps len 0.
struct Piece {
  int prev;
  int next;
  uint32_t start;
  uint32_t len;
};

// A possible merge of piece `left` with its right neighbour into a token of score `score`.
// `len` is the merged length, which tells a stale candidate (either side changed) from a live one.
struct Candidate {
  float score;
  int left;
  uint32_t len;
};

// Highest score first; among equals the leftmost, as SentencePiece does.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

// `text` with each space spelled "▁", after a "▁" when `prefix`.
std::string escape_spaces(std::string_view text, bool prefix) {
  std::string out;
  out.reserve(text.size() * 2 + kSpmSpace.size());
  if (prefix) out += kSpmSpace;
  for (char c : text) {
    if (c == ' ') {
      out += kSpmSpace;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> SpmTokenizer::create(const Metadata& md) {
  TS_ASSIGN_OR_RETURN(Vocab vocab, read_vocab(md));
  SpecialTokens defaults;
  defaults.bos = 1;
  defaults.eos = 2;
  defaults.unk = 0;
  defaults.add_bos = true;
  defaults.add_eos = false;
  TS_ASSIGN_OR_RETURN(SpecialTokens special, read_special_tokens(md, vocab, defaults));
  TS_ASSIGN_OR_RETURN(bool add_space_prefix,
                      md.get_bool_or("tokenizer.ggml.add_space_prefix", true));
  return std::unique_ptr<Tokenizer>(
      new SpmTokenizer(std::move(vocab), std::move(special), add_space_prefix));
}

SpmTokenizer::SpmTokenizer(Vocab vocab, SpecialTokens special, bool add_space_prefix)
    : VocabTokenizer(std::move(vocab), std::move(special)), add_space_prefix_(add_space_prefix) {}

void SpmTokenizer::encode_fragment(std::string_view fragment, bool after_special,
                                   std::vector<int32_t>& out) const {
  // The dummy prefix makes a text's first word look like any other word.
  const std::string text = escape_spaces(fragment, add_space_prefix_ && after_special);
  std::vector<Piece> pieces;
  pieces.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_char_length(text, pos);
    const int index = static_cast<int>(pieces.size());
    pieces.push_back(
        {index - 1, index + 1, static_cast<uint32_t>(pos), static_cast<uint32_t>(len)});
    pos += len;
  }
  pieces.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  const auto consider = [&](int left) {
    if (left < 0 || pieces[left].next < 0) return;
    const Piece& l = pieces[left];
    const Piece& r = pieces[l.next];
    const int32_t id = vocab_.find(std::string_view(text).substr(l.start, l.len + r.len));
    if (id < 0) return;
    queue.push({vocab_.score(id), left, l.len + r.len});
  };
  for (int i = 0; i + 1 < static_cast<int>(pieces.size()); ++i) consider(i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Piece& l = pieces[c.left];
    if (l.len == 0 || l.next < 0) continue;
    Piece& r = pieces[l.next];
    if (l.len + r.len != c.len) continue;  // stale: one side has grown since
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (l.next >= 0) pieces[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }

  for (int i = 0; i >= 0; i = pieces[i].next) {
    append_piece(std::string_view(text).substr(pieces[i].start, pieces[i].len), out);
  }
}

void SpmTokenizer::append_piece(std::string_view piece, std::vector<int32_t>& out) const {
  const int32_t id = vocab_.find(piece);
  if (id >= 0) {
    out.push_back(id);
    return;
  }
  // Only single characters can lack a token (every merge makes one): spell them in bytes.
  for (char c : piece) {
    int32_t byte_id = vocab_.byte_token(static_cast<uint8_t>(c));
    if (byte_id < 0) byte_id = vocab_.find(std::string_view(&c, 1));
    if (byte_id < 0) byte_id = special_.unk;
    if (byte_id >= 0) out.push_back(byte_id);
  }
}

std::string SpmTokenizer::token_to_piece(int32_t id, bool render_special) const {
  if (!vocab_.contains(id)) return {};
  const std::string& text = vocab_.text(id);
  switch (vocab_.attr(id)) {
    case TokenAttr::kNormal: {
      std::string piece;
      piece.reserve(text.size());
      for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSpmSpace.size(), kSpmSpace) == 0) {
          piece += ' ';
          pos += kSpmSpace.size();
        } else {
          piece += text[pos++];
        }
      }
      return piece;
    }
    case TokenAttr::kByte: {
      const int b = vocab_.token_byte(id);
      return b >= 0 ? std::string(1, static_cast<char>(b))
                    : text;  // typed as a byte but not spelled "<0xXX>": show what it is
    }
    case TokenAttr::kUserDefined:
      return text;
    case TokenAttr::kControl:
    case TokenAttr::kUnknown:
    case TokenAttr::kUnused:
      return render_special ? text : std::string();
  }
  return {};
}

std::string SpmTokenizer::decode(std::span<const int32_t> ids, bool render_special,
                                 bool strip_leading_space) const {
  std::string out;
  bool strip = add_space_prefix_ && strip_leading_space;
  for (int32_t id : ids) {
    std::string piece = token_to_piece(id, render_special);
    if (strip && vocab_.contains(id) && !is_hidden(id)) {
      if (!piece.empty() && piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace tessera::model
