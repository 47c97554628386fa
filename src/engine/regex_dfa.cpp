#include "tessera/engine/regex_dfa.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <deque>
#include <map>

namespace tessera::engine {
namespace regex_dfa_build {

using ByteSet = std::bitset<256>;

Status refuse(std::string_view pattern, const std::string& why) {
  return Status(ErrorCode::kUnsupported, fmt::format("pattern \"{}\": {}", pattern, why));
}
Status malformed(std::string_view pattern, const std::string& why) {
  return Status(ErrorCode::kInvalidArgument, fmt::format("pattern \"{}\": {}", pattern, why));
}

// Bytes a string value may hold in our outputs: no control character JSON cannot write without
// \u except \b \t \n \f \r.
ByteSet writable() {
  ByteSet b;
  b.set();
  for (int c = 0; c < 0x20; ++c) b.reset(static_cast<size_t>(c));
  for (int c : {0x08, 0x09, 0x0A, 0x0C, 0x0D}) b.set(static_cast<size_t>(c));
  return b;
}
ByteSet ascii() {
  ByteSet b;
  for (int c = 0; c < 0x80; ++c) b.set(static_cast<size_t>(c));
  return b & writable();
}
ByteSet range(int lo, int hi) {
  ByteSet b;
  for (int c = lo; c <= hi; ++c) b.set(static_cast<size_t>(c));
  return b;
}
ByteSet one(int c) { return range(c, c); }
ByteSet digits() { return range('0', '9'); }
ByteSet word() { return range('a', 'z') | range('A', 'Z') | digits() | one('_'); }
ByteSet space() { return one(' ') | one('\t') | one('\n') | one('\r') | one('\f') | one('\v'); }

// A pattern's syntax tree.
struct Node {
  enum Kind : uint8_t { kEmpty, kBytes, kSeq, kAlt, kRepeat } kind = kEmpty;
  ByteSet bytes;                  // kBytes: one byte of the set (ASCII, or one byte of a sequence)
  std::vector<Node> children;     // kSeq, kAlt; kRepeat: one
  int min = 0, max = -1;          // kRepeat (-1: unbounded)
};

Node bytes_node(const ByteSet& b) {
  Node n;
  n.kind = Node::kBytes;
  n.bytes = b & writable();
  return n;
}
Node seq_of(std::vector<Node> parts) {
  Node n;
  n.kind = Node::kSeq;
  n.children = std::move(parts);
  return n;
}
Node alt_of(std::vector<Node> parts) {
  Node n;
  n.kind = Node::kAlt;
  n.children = std::move(parts);
  return n;
}
Node literal_bytes(std::string_view s) {
  std::vector<Node> parts;
  for (char c : s) parts.push_back(bytes_node(one(static_cast<uint8_t>(c))));
  return parts.size() == 1 ? parts[0] : seq_of(std::move(parts));
}
std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// '.': any ASCII but \n and \r, or any well-formed UTF-8 character but U+2028 and U+2029.
Node any_char() {
  const ByteSet cont = range(0x80, 0xBF);
  std::vector<Node> alts;
  alts.push_back(bytes_node(ascii() & ~one('\n') & ~one('\r')));
  alts.push_back(seq_of({bytes_node(range(0xC2, 0xDF)), bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(one(0xE0)), bytes_node(range(0xA0, 0xBF)), bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(range(0xE1, 0xE1) | range(0xE3, 0xEC) | range(0xEE, 0xEF)),
                         bytes_node(cont), bytes_node(cont)}));
  // E2: all but E2 80 A8 / E2 80 A9 (the ECMA line terminators '.' does not match).
  alts.push_back(seq_of({bytes_node(one(0xE2)), bytes_node(one(0x80)),
                         bytes_node(cont & ~one(0xA8) & ~one(0xA9))}));
  alts.push_back(seq_of({bytes_node(one(0xE2)), bytes_node(range(0x81, 0xBF)), bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(one(0xED)), bytes_node(range(0x80, 0x9F)), bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(one(0xF0)), bytes_node(range(0x90, 0xBF)), bytes_node(cont),
                         bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(range(0xF1, 0xF3)), bytes_node(cont), bytes_node(cont),
                         bytes_node(cont)}));
  alts.push_back(seq_of({bytes_node(one(0xF4)), bytes_node(range(0x80, 0x8F)), bytes_node(cont),
                         bytes_node(cont)}));
  return alt_of(std::move(alts));
}

class Parser {
 public:
  explicit Parser(std::string_view p) : p_(p) {}

  Result<Node> parse(bool* anchored_start, bool* anchored_end) {
    size_t end = p_.size();
    *anchored_start = !p_.empty() && p_[0] == '^';
    // A trailing '$' not escaped (an odd number of backslashes before it escapes it).
    if (end > 0 && p_[end - 1] == '$') {
      size_t slashes = 0;
      while (slashes + 1 < end && p_[end - 2 - slashes] == '\\') ++slashes;
      if (slashes % 2 == 0) {
        *anchored_end = true;
        --end;
      }
    }
    i_ = *anchored_start ? 1 : 0;
    end_ = end;
    TS_ASSIGN_OR_RETURN(Node n, alternation());
    if (i_ != end_) return malformed(p_, fmt::format("unexpected '{}' at {}", p_[i_], i_));
    if ((*anchored_start || *anchored_end) && n.kind == Node::kAlt) {
      return refuse(p_, "anchors around a top-level '|' (write ^(a|b)$)");
    }
    return n;
  }

 private:
  bool more() const { return i_ < end_; }
  char peek() const { return p_[i_]; }

  Result<Node> alternation() {
    std::vector<Node> alts;
    TS_ASSIGN_OR_RETURN(Node first, sequence());
    alts.push_back(std::move(first));
    while (more() && peek() == '|') {
      ++i_;
      TS_ASSIGN_OR_RETURN(Node next, sequence());
      alts.push_back(std::move(next));
    }
    return alts.size() == 1 ? std::move(alts[0]) : alt_of(std::move(alts));
  }

  Result<Node> sequence() {
    std::vector<Node> parts;
    while (more() && peek() != '|' && peek() != ')') {
      TS_ASSIGN_OR_RETURN(Node a, atom());
      TS_ASSIGN_OR_RETURN(Node q, quantified(std::move(a)));
      parts.push_back(std::move(q));
    }
    if (parts.empty()) return Node{};
    return parts.size() == 1 ? std::move(parts[0]) : seq_of(std::move(parts));
  }

  // {n}, {n,}, {n,m} at i_ (after '{'); false (i_ unmoved) when it is not one (a literal '{').
  bool counts(int* lo, int* hi) {
    size_t j = i_;
    auto number = [&](int* out) {
      const size_t s = j;
      long v = 0;
      while (j < end_ && p_[j] >= '0' && p_[j] <= '9' && v < 100000) v = v * 10 + (p_[j++] - '0');
      *out = static_cast<int>(v);
      return j > s;
    };
    if (!number(lo)) return false;
    *hi = *lo;
    if (j < end_ && p_[j] == ',') {
      ++j;
      if (!number(hi)) *hi = -1;
    }
    if (j >= end_ || p_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  Result<Node> quantified(Node a) {
    if (!more()) return a;
    int lo = 0, hi = -1;
    const char c = peek();
    if (c == '*') {
      ++i_;
    } else if (c == '+') {
      lo = 1;
      ++i_;
    } else if (c == '?') {
      hi = 1;
      ++i_;
    } else if (c == '{') {
      ++i_;
      if (!counts(&lo, &hi)) {
        --i_;
        return a;
      }
      if (lo > RegexDfa::kMaxRepeat || hi > RegexDfa::kMaxRepeat) {
        return refuse(p_, fmt::format("a repeat count above {}", RegexDfa::kMaxRepeat));
      }
      if (hi >= 0 && hi < lo) return malformed(p_, "a repeat {n,m} with m < n");
    } else {
      return a;
    }
    if (more() && peek() == '?') ++i_;  // lazy: the same strings
    if (more() && (peek() == '*' || peek() == '+' || peek() == '{')) {
      return refuse(p_, "a quantifier after a quantifier (possessive or nested without a group)");
    }
    Node r;
    r.kind = Node::kRepeat;
    r.min = lo;
    r.max = hi;
    r.children.push_back(std::move(a));
    return r;
  }

  // One UTF-8 character of the pattern, as bytes.
  std::string_view character() {
    const size_t s = i_;
    const auto c = static_cast<uint8_t>(p_[i_++]);
    if (c >= 0xC0) {
      while (i_ < end_ && (static_cast<uint8_t>(p_[i_]) & 0xC0) == 0x80) ++i_;
    }
    return p_.substr(s, i_ - s);
  }

  // An escape after '\' (i_ at the letter); inside a class `in_class` (\b: backspace).
  Result<Node> escape(bool in_class) {
    if (!more()) return malformed(p_, "a trailing backslash");
    const char c = p_[i_++];
    switch (c) {
      case 'd': return bytes_node(digits());
      case 'D': return bytes_node(ascii() & ~digits());
      case 'w': return bytes_node(word());
      case 'W': return bytes_node(ascii() & ~word());
      case 's': return bytes_node(space());
      case 'S': return bytes_node(ascii() & ~space());
      case 'n': return bytes_node(one('\n'));
      case 'r': return bytes_node(one('\r'));
      case 't': return bytes_node(one('\t'));
      case 'f': return bytes_node(one('\f'));
      case 'v': return bytes_node(one('\v'));
      case '0': return bytes_node(one(0));
      case 'b':
        if (in_class) return bytes_node(one('\b'));
        return refuse(p_, "word boundaries (\\b) are not supported");
      case 'B': return refuse(p_, "word boundaries (\\B) are not supported");
      case 'x':
      case 'u': {
        const size_t n = c == 'x' ? 2 : 4;
        if (i_ + n > end_) return malformed(p_, fmt::format("a short \\{} escape", c));
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          const char h = p_[i_ + k];
          const int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
          if (v < 0) return malformed(p_, fmt::format("a bad \\{} escape", c));
          cp = cp * 16 + static_cast<uint32_t>(v);
        }
        i_ += n;
        if (cp >= 0xD800 && cp <= 0xDFFF) return refuse(p_, "surrogate escapes");
        return literal_bytes(utf8(cp));
      }
      default:
        if ((c >= '1' && c <= '9') || c == 'k') return refuse(p_, "backreferences are not supported");
        if (c == 'p' || c == 'P') return refuse(p_, "Unicode property escapes are not supported");
        if (c == 'c') return refuse(p_, "control escapes (\\c) are not supported");
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
          return refuse(p_, fmt::format("the escape \\{} is not supported", c));
        }
        --i_;
        return literal_bytes(character());
    }
  }

  // [...] (i_ after '['): ASCII bytes and ranges, escapes, multi-byte characters.
  Result<Node> char_class() {
    bool negated = false;
    if (more() && peek() == '^') {
      negated = true;
      ++i_;
    }
    if (more() && peek() == ']') return refuse(p_, "a class starting with ']' (engines disagree)");
    ByteSet set;
    std::vector<Node> multi;
    while (more() && peek() != ']') {
      Node item;
      int lo = -1;
      if (peek() == '\\') {
        ++i_;
        TS_ASSIGN_OR_RETURN(item, escape(true));
      } else {
        const std::string_view ch = character();
        item = literal_bytes(ch);
        if (ch.size() == 1) lo = static_cast<uint8_t>(ch[0]);
      }
      if (item.kind == Node::kBytes && item.bytes.count() == 1) {
        for (size_t b = 0; b < 256; ++b) {
          if (item.bytes.test(b)) lo = static_cast<int>(b);
        }
      }
      // A range a-b (ASCII ends).
      if (lo >= 0 && i_ + 1 < end_ && peek() == '-' && p_[i_ + 1] != ']') {
        ++i_;
        int hi = -1;
        if (peek() == '\\') {
          ++i_;
          TS_ASSIGN_OR_RETURN(Node e, escape(true));
          if (e.kind == Node::kBytes && e.bytes.count() == 1) {
            for (size_t b = 0; b < 256; ++b) {
              if (e.bytes.test(b)) hi = static_cast<int>(b);
            }
          }
        } else {
          const std::string_view ch = character();
          if (ch.size() == 1) hi = static_cast<uint8_t>(ch[0]);
        }
        if (hi < 0 || lo >= 0x80 || hi >= 0x80) return refuse(p_, "ranges beyond ASCII in a class");
        if (hi < lo) return malformed(p_, "a range out of order in a class");
        set |= range(lo, hi);
        continue;
      }
      if (item.kind == Node::kBytes) {
        set |= item.bytes;
      } else {
        multi.push_back(std::move(item));
      }
    }
    if (!more()) return malformed(p_, "an unclosed '['");
    ++i_;
    if (negated) return bytes_node(ascii() & ~set);  // ASCII only (see the header)
    std::vector<Node> alts;
    if (set.any()) alts.push_back(bytes_node(set));
    for (Node& m : multi) alts.push_back(std::move(m));
    if (alts.empty()) return bytes_node(ByteSet{});
    return alts.size() == 1 ? std::move(alts[0]) : alt_of(std::move(alts));
  }

  Result<Node> atom() {
    const char c = peek();
    if (c == '(') {
      ++i_;
      if (more() && peek() == '?') {
        if (i_ + 1 < end_ && p_[i_ + 1] == ':') {
          i_ += 2;
        } else {
          return refuse(p_, "lookaround and named groups are not supported");
        }
      }
      TS_ASSIGN_OR_RETURN(Node inner, alternation());
      if (!more() || peek() != ')') return malformed(p_, "an unclosed '('");
      ++i_;
      return inner;
    }
    if (c == '[') {
      ++i_;
      return char_class();
    }
    if (c == '.') {
      ++i_;
      return any_char();
    }
    if (c == '\\') {
      ++i_;
      return escape(false);
    }
    if (c == '^' || c == '$') return refuse(p_, "anchors other than a leading '^' and a trailing '$'");
    if (c == '*' || c == '+' || c == '?') return malformed(p_, fmt::format("nothing to repeat at {}", i_));
    return literal_bytes(character());
  }

  std::string_view p_;
  size_t i_ = 0, end_ = 0;
};

// Thompson NFA: epsilon edges and byte-set edges.
struct Nfa {
  struct State {
    std::vector<int> eps;
    std::vector<std::pair<ByteSet, int>> edges;
  };
  std::vector<State> states;
  int add() {
    states.emplace_back();
    return static_cast<int>(states.size() - 1);
  }
};
constexpr size_t kMaxNfaStates = 20000;

// Builds `n` between new states; returns {start, end}.
Result<std::pair<int, int>> build(Nfa& nfa, const Node& n, std::string_view pattern) {
  if (nfa.states.size() > kMaxNfaStates) return refuse(pattern, "the pattern is too large");
  const int s = nfa.add(), e = nfa.add();
  switch (n.kind) {
    case Node::kEmpty:
      nfa.states[s].eps.push_back(e);
      break;
    case Node::kBytes:
      nfa.states[s].edges.push_back({n.bytes, e});
      break;
    case Node::kSeq: {
      int at = s;
      for (const Node& c : n.children) {
        TS_ASSIGN_OR_RETURN(auto f, build(nfa, c, pattern));
        nfa.states[at].eps.push_back(f.first);
        at = f.second;
      }
      nfa.states[at].eps.push_back(e);
      break;
    }
    case Node::kAlt:
      for (const Node& c : n.children) {
        TS_ASSIGN_OR_RETURN(auto f, build(nfa, c, pattern));
        nfa.states[s].eps.push_back(f.first);
        nfa.states[f.second].eps.push_back(e);
      }
      break;
    case Node::kRepeat: {
      int at = s;
      for (int k = 0; k < n.min; ++k) {
        TS_ASSIGN_OR_RETURN(auto f, build(nfa, n.children[0], pattern));
        nfa.states[at].eps.push_back(f.first);
        at = f.second;
      }
      if (n.max < 0) {
        TS_ASSIGN_OR_RETURN(auto f, build(nfa, n.children[0], pattern));
        nfa.states[at].eps.push_back(f.first);
        nfa.states[f.second].eps.push_back(f.first);
        nfa.states[f.second].eps.push_back(e);
        nfa.states[at].eps.push_back(e);
      } else {
        for (int k = n.min; k < n.max; ++k) {
          TS_ASSIGN_OR_RETURN(auto f, build(nfa, n.children[0], pattern));
          nfa.states[at].eps.push_back(e);
          nfa.states[at].eps.push_back(f.first);
          at = f.second;
        }
        nfa.states[at].eps.push_back(e);
      }
      break;
    }
  }
  return std::make_pair(s, e);
}

// The epsilon closure of `set`, sorted and unique. `mark`/`gen`: scratch of one per NFA state.
void closure(const Nfa& nfa, std::vector<int>& set, std::vector<uint32_t>& mark, uint32_t& gen) {
  ++gen;
  size_t w = 0;
  for (int x : set) {
    if (mark[static_cast<size_t>(x)] != gen) {
      mark[static_cast<size_t>(x)] = gen;
      set[w++] = x;
    }
  }
  set.resize(w);
  for (size_t k = 0; k < set.size(); ++k) {
    for (int y : nfa.states[static_cast<size_t>(set[k])].eps) {
      if (mark[static_cast<size_t>(y)] != gen) {
        mark[static_cast<size_t>(y)] = gen;
        set.push_back(y);
      }
    }
  }
  std::sort(set.begin(), set.end());
}
// Subset construction's work (byte moves and closures visited) before a pattern is refused as too
// complex: a hostile pattern must not take seconds.
constexpr int64_t kMaxWork = 20'000'000;

}  // namespace regex_dfa_build

class RegexDfaBuilder {
 public:
  static Result<std::shared_ptr<const RegexDfa>> run(std::string_view pattern, RegexDfa::Match match);

 private:
  // The subset construction's result: a transition table over every reachable state set.
  struct Table {
    std::vector<uint16_t> next;   // [state * 256 + byte]
    std::vector<uint8_t> accept;
    size_t size() const { return accept.size(); }
  };
  static Result<Table> determinize(const regex_dfa_build::Nfa& nfa, int start, int accept_state,
                                   std::string_view pattern);
  static Result<std::shared_ptr<const RegexDfa>> prune(const Table& t, std::string_view pattern);
};

Result<std::shared_ptr<const RegexDfa>> RegexDfaBuilder::run(std::string_view pattern,
                                                              RegexDfa::Match match) {
  using namespace regex_dfa_build;  // NOLINT: this builder's own parts
  bool anchored_start = false, anchored_end = false;
  Parser parser(pattern);
  TS_ASSIGN_OR_RETURN(Node root, parser.parse(&anchored_start, &anchored_end));
  if (match == RegexDfa::Match::kFull) anchored_start = anchored_end = true;
  // Search semantics: anything before and after unless anchored.
  std::vector<Node> parts;
  Node any;
  any.kind = Node::kRepeat;
  any.children.push_back(any_char());
  if (!anchored_start) parts.push_back(any);
  parts.push_back(std::move(root));
  if (!anchored_end) parts.push_back(any);
  Nfa nfa;
  TS_ASSIGN_OR_RETURN(auto frag, build(nfa, seq_of(std::move(parts)), pattern));
  TS_ASSIGN_OR_RETURN(Table table, determinize(nfa, frag.first, frag.second, pattern));
  return prune(table, pattern);
}

// Subset construction over byte classes, bounded in states and work.
Result<RegexDfaBuilder::Table> RegexDfaBuilder::determinize(const regex_dfa_build::Nfa& nfa, int start_state,
                                                            int accept_state, std::string_view pattern) {
  using namespace regex_dfa_build;  // NOLINT: this builder's own parts
  std::map<std::vector<int>, uint16_t> ids;
  std::vector<std::vector<int>> sets;
  std::vector<uint16_t> table;
  std::vector<uint8_t> accept;
  // Byte classes: bytes in exactly the same edge sets behave alike.
  std::vector<int> byte_class(256, 0);
  {
    std::vector<ByteSet> distinct;
    for (const auto& st : nfa.states) {
      for (const auto& [set, _] : st.edges) {
        if (std::find(distinct.begin(), distinct.end(), set) == distinct.end()) distinct.push_back(set);
      }
    }
    for (const ByteSet& set : distinct) {
      std::map<std::pair<int, bool>, int> split;
      for (size_t b = 0; b < 256; ++b) {
        const auto key = std::make_pair(byte_class[b], set.test(b));
        auto [it, fresh] = split.emplace(key, static_cast<int>(split.size()));
        byte_class[b] = it->second;
      }
    }
  }
  std::vector<size_t> reps;
  for (size_t b = 0; b < 256; ++b) {
    if (static_cast<size_t>(byte_class[b]) >= reps.size()) reps.resize(static_cast<size_t>(byte_class[b]) + 1, b);
  }
  std::vector<uint32_t> mark(nfa.states.size(), 0);
  uint32_t gen = 0;
  int64_t work = 0;
  std::vector<int> start{start_state};
  closure(nfa, start, mark, gen);
  ids[start] = 0;
  sets.push_back(start);
  for (size_t d = 0; d < sets.size(); ++d) {
    const std::vector<int> cur = sets[d];
    accept.push_back(std::binary_search(cur.begin(), cur.end(), accept_state) ? 1 : 0);
    table.resize((d + 1) * 256, RegexDfa::kDead);
    // Where each class of bytes leads (bytes no edge tells apart move alike).
    for (size_t k = 0; k < reps.size(); ++k) {
      const size_t r = reps[k];
      std::vector<int> to;
      for (int x : cur) {
        for (const auto& [set, y] : nfa.states[static_cast<size_t>(x)].edges) {
          if (set.test(r)) to.push_back(y);
        }
        work += static_cast<int64_t>(nfa.states[static_cast<size_t>(x)].edges.size()) + 1;
      }
      if (work > kMaxWork) {
        return Status(ErrorCode::kUnsupported,
                      fmt::format("pattern \"{}\": too complex to compile to an automaton", pattern));
      }
      if (to.empty()) continue;
      work += static_cast<int64_t>(to.size());
      closure(nfa, to, mark, gen);
      auto it = ids.find(to);
      if (it == ids.end()) {
        if (sets.size() >= RegexDfa::kMaxStates) {
          return Status(ErrorCode::kUnsupported,
                        fmt::format("pattern \"{}\": its automaton needs more than {} states", pattern,
                                    RegexDfa::kMaxStates));
        }
        it = ids.emplace(to, static_cast<uint16_t>(sets.size())).first;
        sets.push_back(to);
      }
      for (size_t b = 0; b < 256; ++b) {
        if (byte_class[b] == static_cast<int>(k)) table[d * 256 + b] = it->second;
      }
    }
  }
  Table t;
  t.next = std::move(table);
  t.accept = std::move(accept);
  return t;
}

// Distances to acceptance (reverse BFS); states that never accept are removed and the rest
// renumbered (the start stays 0).
Result<std::shared_ptr<const RegexDfa>> RegexDfaBuilder::prune(const Table& dfa, std::string_view pattern) {
  const std::vector<uint16_t>& table = dfa.next;
  const std::vector<uint8_t>& accept = dfa.accept;
  const size_t n = dfa.size();
  std::vector<std::vector<std::pair<uint16_t, uint8_t>>> rev(n);
  for (size_t d = 0; d < n; ++d) {
    for (int b = 0; b < 256; ++b) {
      const uint16_t t = table[d * 256 + static_cast<size_t>(b)];
      if (t != RegexDfa::kDead) rev[t].push_back({static_cast<uint16_t>(d), static_cast<uint8_t>(b)});
    }
  }
  std::vector<int32_t> dist(n, -1);
  std::deque<uint16_t> q;
  for (size_t d = 0; d < n; ++d) {
    if (accept[d]) {
      dist[d] = 0;
      q.push_back(static_cast<uint16_t>(d));
    }
  }
  while (!q.empty()) {
    const uint16_t t = q.front();
    q.pop_front();
    for (const auto& [from, b] : rev[t]) {
      if (dist[from] < 0) {
        dist[from] = dist[t] + 1;
        q.push_back(from);
      }
    }
  }
  if (dist[0] < 0) {
    return Status(ErrorCode::kInvalidArgument,
                  fmt::format("pattern \"{}\": no string JSON can write matches it", pattern));
  }
  std::vector<uint16_t> renumber(n, RegexDfa::kDead);
  uint16_t live = 0;
  for (size_t d = 0; d < n; ++d) {
    if (dist[d] >= 0) renumber[d] = live++;
  }
  auto out = std::shared_ptr<RegexDfa>(new RegexDfa());
  out->table_.assign(static_cast<size_t>(live) * 256, RegexDfa::kDead);
  out->accept_.resize(live);
  out->distance_.resize(live);
  out->toward_.assign(live, 0);
  out->continues_.assign(live, 0);
  for (size_t d = 0; d < n; ++d) {
    if (renumber[d] == RegexDfa::kDead) continue;
    const uint16_t r = renumber[d];
    out->accept_[r] = accept[d];
    out->distance_[r] = dist[d];
    int best = -1, best_rank = 99;
    for (int b = 0; b < 256; ++b) {
      const uint16_t t = table[d * 256 + static_cast<size_t>(b)];
      const uint16_t rt = t == RegexDfa::kDead ? RegexDfa::kDead : renumber[t];
      out->table_[static_cast<size_t>(r) * 256 + static_cast<size_t>(b)] = rt;
      if (rt != RegexDfa::kDead) out->continues_[r] = 1;
      if (rt == RegexDfa::kDead || dist[t] != dist[d] - 1) continue;
      // Prefer a letter or digit, then other printable ASCII but the quote and backslash.
      const bool alnum = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
      const int rank = alnum ? 0 : (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') ? 1 : b < 0x80 ? 2 : 3;
      if (rank < best_rank) {
        best_rank = rank;
        best = b;
      }
    }
    if (best >= 0) out->toward_[r] = static_cast<uint8_t>(best);
  }
  return std::shared_ptr<const RegexDfa>(std::move(out));
}

Result<std::shared_ptr<const RegexDfa>> RegexDfa::compile(std::string_view pattern, Match match) {
  return RegexDfaBuilder::run(pattern, match);
}

}  // namespace tessera::engine
