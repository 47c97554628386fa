#include "tessera/engine/token_constraint.h"

#include <algorithm>
#include <limits>
#include <type_traits>
#include <utility>

namespace tessera::engine {

namespace {

// Plain JSON string content: no quote, backslash or control byte, whole UTF-8 characters.
bool plain_string_content(const std::string& p) {
  size_t i = 0;
  while (i < p.size()) {
    const auto c = static_cast<uint8_t>(p[i]);
    if (c < 0x20 || c == '"' || c == '\\') return false;
    if (c < 0x80) {
      ++i;
      continue;
    }
    int n = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + static_cast<size_t>(n) >= p.size()) return false;  // a character cut by the token's end
    for (int k = 1; k <= n; ++k) {
      const auto d = static_cast<uint8_t>(p[i + static_cast<size_t>(k)]);
      if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) return false;
    }
    i += static_cast<size_t>(n) + 1;
  }
  return true;
}

}  // namespace

TokenVocabulary::Trie TokenVocabulary::build(const std::vector<std::string>& pieces,
                                             const std::vector<int32_t>& ids) {
  struct Tmp {
    std::vector<std::pair<uint8_t, uint32_t>> kids;
    std::vector<int32_t> toks;
  };
  std::vector<Tmp> tmp(1);
  for (int32_t id : ids) {
    uint32_t at = 0;
    for (char ch : pieces[static_cast<size_t>(id)]) {
      const auto b = static_cast<uint8_t>(ch);
      uint32_t next = 0;
      for (const auto& [kb, kn] : tmp[at].kids) {
        if (kb == b) next = kn;
      }
      if (next == 0) {
        next = static_cast<uint32_t>(tmp.size());
        tmp[at].kids.emplace_back(b, next);
        tmp.emplace_back();
      }
      at = next;
    }
    tmp[at].toks.push_back(id);
  }
  Trie t;
  t.nodes.resize(tmp.size());
  for (size_t i = 0; i < tmp.size(); ++i) {
    std::sort(tmp[i].kids.begin(), tmp[i].kids.end());
    Node& n = t.nodes[i];
    n.first_edge = static_cast<uint32_t>(t.edges.size());
    n.n_edges = static_cast<uint32_t>(tmp[i].kids.size());
    for (const auto& [b, child] : tmp[i].kids) t.edges.push_back({b, child});
    n.first_token = static_cast<uint32_t>(t.tokens.size());
    n.n_tokens = static_cast<uint32_t>(tmp[i].toks.size());
    t.tokens.insert(t.tokens.end(), tmp[i].toks.begin(), tmp[i].toks.end());
  }
  return t;
}

TokenVocabulary::TokenVocabulary(const std::vector<std::string>& pieces,
                                 std::vector<int32_t> end_tokens)
    : n_vocab_(static_cast<int32_t>(pieces.size())),
      pieces_(pieces),
      end_tokens_(std::move(end_tokens)) {
  std::vector<int32_t> with_bytes, special;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    const std::string& p = pieces_[static_cast<size_t>(id)];
    if (p.empty()) continue;
    max_piece_ = std::max(max_piece_, p.size());
    with_bytes.push_back(id);
    (plain_string_content(p) ? plain_ : special).push_back(id);
  }
  all_ = build(pieces_, with_bytes);
  special_ = build(pieces_, special);
}

std::shared_ptr<const TokenVocabulary> make_token_vocabulary(const model::Tokenizer& tokenizer) {
  std::vector<std::string> pieces(static_cast<size_t>(tokenizer.n_vocab()));
  std::vector<int32_t> ends;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    pieces[static_cast<size_t>(id)] = tokenizer.token_to_piece(id);
    if (tokenizer.is_end_of_generation(id)) ends.push_back(id);
  }
  return std::make_shared<TokenVocabulary>(pieces, std::move(ends));
}

std::shared_ptr<const std::vector<uint8_t>> DfaTokenCache::tokens(const JsonMatcher::DfaPosition& pos,
                                                                  const TokenVocabulary& vocab) {
  const auto key = std::make_tuple(pos.dfa, pos.state, pos.raw);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  }
  auto flags = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(vocab.n_vocab()), 0);
  auto walk = [&](int32_t id) {
    uint16_t st = pos.state;
    for (char ch : vocab.piece(id)) {
      st = pos.dfa->next(st, static_cast<uint8_t>(ch));
      if (st == RegexDfa::kDead) return;
    }
    (*flags)[static_cast<size_t>(id)] = 1;
  };
  if (pos.raw) {
    for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
      if (!vocab.piece(id).empty()) walk(id);
    }
  } else {
    for (int32_t id : vocab.plain()) walk(id);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() < kMaxEntries) entries_.emplace(key, flags);
  return flags;
}

std::shared_ptr<const std::vector<uint8_t>> GrammarTokenCache::find(const std::vector<uint32_t>& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : it->second;
}

void GrammarTokenCache::put(const std::vector<uint32_t>& key, std::shared_ptr<const std::vector<uint8_t>> flags) {
  if (key.size() > kMaxKeyWords) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (entries_.size() < kMaxEntries) entries_.emplace(key, std::move(flags));
}

namespace token_constraint_walk {

// The fastest completion from matcher state `m`: its closing bytes split greedily into the
// longest vocabulary pieces.
template <class Matcher>
std::optional<TokenConstraint::Closing> closing_from(const Matcher& m, const TokenVocabulary& vocab) {
  const std::optional<std::string> bytes = m.closing_bytes();
  if (!bytes) return std::nullopt;
  const TokenVocabulary::Trie& trie = vocab.all();
  TokenConstraint::Closing c;
  size_t at = 0;
  while (at < bytes->size()) {
    // The longest piece that starts the rest: walk the trie along it.
    uint32_t node = 0;
    size_t best_len = 0;
    int32_t best = -1;
    for (size_t i = at; i < bytes->size(); ++i) {
      const TokenVocabulary::Node& n = trie.nodes[node];
      uint32_t child = 0;
      bool found = false;
      for (uint32_t e = 0; e < n.n_edges; ++e) {
        const TokenVocabulary::Edge& edge = trie.edges[n.first_edge + e];
        if (edge.byte == static_cast<uint8_t>((*bytes)[i])) {
          child = edge.child;
          found = true;
          break;
        }
      }
      if (!found) break;
      node = child;
      if (trie.nodes[node].n_tokens > 0) {
        best_len = i + 1 - at;
        best = trie.tokens[trie.nodes[node].first_token];
      }
    }
    if (best < 0) return std::nullopt;
    if (c.first < 0) c.first = best;
    ++c.n_tokens;
    at += best_len;
  }
  return c;
}

template <class Matcher>
int32_t keep_completable(const TokenConstraint::Walk<Matcher>& w, const TokenVocabulary& v,
                         int32_t token, int64_t budget) {
  if (budget < 0) return token;
  if (token < 0 || token >= v.n_vocab()) return token;
  const std::optional<TokenConstraint::Closing> now = closing_from(w.matcher, v);
  if (!now || now->n_tokens == 0) return token;
  Matcher after = w.levels[0];
  after.assign_state(w.matcher);
  const std::string& p = v.piece(token);
  if (p.empty() || !after.feed(p)) return token;  // an end token, or one the mask refused
  const std::optional<TokenConstraint::Closing> then = closing_from(after, v);
  if (then && then->n_tokens <= budget - 1) return token;
  return now->first;
}

// Marks in `allowed` the tokens whose bytes `w.matcher` accepts, walking the trie depth-first;
// returns how many it marked. Under a schema the shortcuts where the answer is known without the
// walk (plain string content, a RegexDfa's cached tokens) come first.
template <class Matcher>
int64_t mark_tokens(TokenConstraint::Walk<Matcher>& w, const StructuredOutput& spec,
                    std::vector<uint8_t>& allowed) {
  const TokenVocabulary& v = *spec.vocab;
  int64_t n_allowed = 0;
  bool in_string = false;
  bool walk_trie = true;
  if constexpr (std::is_same_v<Matcher, JsonMatcher>) {
    in_string = w.matcher.in_plain_string();
    if (in_string) {
      for (int32_t t : v.plain()) allowed[static_cast<size_t>(t)] = 1;
      n_allowed += static_cast<int64_t>(v.plain().size());
    } else if (const auto pos = w.matcher.dfa_position(); pos && spec.dfa_cache) {
      // Only the automaton decides: the tokens it takes from this state, cached per state; inside
      // a string, the other tokens (a quote, an escape, a split character) are walked below.
      const auto flags = spec.dfa_cache->tokens(*pos, v);
      for (size_t i = 0; i < flags->size(); ++i) {
        allowed[i] = (*flags)[i];
        n_allowed += (*flags)[i];
      }
      in_string = !pos->raw;
      walk_trie = !pos->raw;
    }
  }
  if (!walk_trie) return n_allowed;
  std::shared_ptr<GrammarTokenCache> cache;
  if constexpr (std::is_same_v<Matcher, GbnfMatcher>) {
    // The tokens a grammar state takes, walked once per distinct state.
    cache = spec.grammar_cache;
    if (cache) {
      w.matcher.state_key(&w.key);
      if (const auto flags = cache->find(w.key)) {
        for (size_t i = 0; i < flags->size(); ++i) {
          allowed[i] = (*flags)[i];
          n_allowed += (*flags)[i];
        }
        return n_allowed;
      }
    }
  }
  const TokenVocabulary::Trie& trie = in_string ? v.special() : v.all();
  const auto& nodes = trie.nodes;
  const auto& edges = trie.edges;
  const auto& toks = trie.tokens;
  w.levels[0].assign_state(w.matcher);
  struct Item {
    uint32_t node, next_edge, depth;
  };
  std::vector<Item> stack;
  stack.push_back({0, 0, 0});
  while (!stack.empty()) {
    Item& it = stack.back();
    const TokenVocabulary::Node& n = nodes[it.node];
    if (it.next_edge == n.n_edges) {
      stack.pop_back();
      continue;
    }
    const TokenVocabulary::Edge& e = edges[n.first_edge + it.next_edge++];
    const uint32_t d = it.depth;
    Matcher& next = w.levels[d + 1];
    next.assign_state(w.levels[d]);
    if (!next.advance(e.byte)) continue;
    const TokenVocabulary::Node& c = nodes[e.child];
    for (uint32_t k = 0; k < c.n_tokens; ++k) {
      allowed[static_cast<size_t>(toks[c.first_token + k])] = 1;
      ++n_allowed;
    }
    if (c.n_edges > 0) stack.push_back({e.child, 0, d + 1});
  }
  if (cache) cache->put(w.key, std::make_shared<const std::vector<uint8_t>>(allowed));
  return n_allowed;
}

}  // namespace token_constraint_walk

TokenConstraint::TokenConstraint(const StructuredOutput& spec)
    : spec_(spec),
      walk_(spec.grammar ? decltype(walk_)(Walk<GbnfMatcher>{GbnfMatcher(spec.grammar), {}, {}})
                         : decltype(walk_)(Walk<JsonMatcher>{JsonMatcher(spec.schema), {}, {}})) {
  std::visit([this](auto& w) { w.levels.assign(spec_.vocab->max_piece_bytes() + 1, w.matcher); }, walk_);
  allowed_.assign(static_cast<size_t>(spec_.vocab->n_vocab()), 0);
}

std::optional<TokenConstraint::Closing> TokenConstraint::closing() const {
  return std::visit([this](const auto& w) { return token_constraint_walk::closing_from(w.matcher, *spec_.vocab); },
                    walk_);
}

int32_t TokenConstraint::keep_completable(int32_t token, int64_t budget) const {
  return std::visit(
      [&](const auto& w) { return token_constraint_walk::keep_completable(w, *spec_.vocab, token, budget); }, walk_);
}

bool TokenConstraint::closed() const {
  return std::visit([](const auto& w) { return w.matcher.closed(); }, walk_);
}

bool TokenConstraint::complete() const {
  return std::visit([](const auto& w) { return w.matcher.complete(); }, walk_);
}

int64_t TokenConstraint::mask(std::span<float> logits, int64_t budget) {
  const TokenVocabulary& v = *spec_.vocab;
  if (budget >= 0) {
    if (const std::optional<Closing> c = closing(); c && c->n_tokens > 0 && c->n_tokens >= budget) {
      for (size_t i = 0; i < logits.size(); ++i) {
        if (static_cast<int32_t>(i) != c->first) logits[i] = -std::numeric_limits<float>::infinity();
      }
      return 1;
    }
  }
  std::fill(allowed_.begin(), allowed_.end(), uint8_t{0});
  int64_t n_allowed =
      std::visit([this](auto& w) { return token_constraint_walk::mark_tokens(w, spec_, allowed_); }, walk_);
  if (complete() || n_allowed == 0) {
    for (int32_t t : v.end_tokens()) {
      if (t >= 0 && t < v.n_vocab() && !allowed_[static_cast<size_t>(t)]) {
        allowed_[static_cast<size_t>(t)] = 1;
        ++n_allowed;
      }
    }
  }
  // Rows past the tokenizer's vocabulary (a model's padded output) are never allowed.
  for (size_t i = 0; i < logits.size(); ++i) {
    if (i >= allowed_.size() || !allowed_[i]) logits[i] = -std::numeric_limits<float>::infinity();
  }
  return n_allowed;
}

bool TokenConstraint::accept(int32_t token) {
  const TokenVocabulary& v = *spec_.vocab;
  if (token < 0 || token >= v.n_vocab()) return false;
  const std::string& p = v.piece(token);
  if (std::find(v.end_tokens().begin(), v.end_tokens().end(), token) != v.end_tokens().end() &&
      p.empty()) {
    return complete();
  }
  if (p.empty()) return false;
  return std::visit([&p](auto& w) { return w.matcher.feed(p); }, walk_);
}

}  // namespace tessera::engine
