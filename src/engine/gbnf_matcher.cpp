#include "tessera/engine/gbnf_matcher.h"

#include <algorithm>
#include <utility>

namespace tessera::engine {

namespace gbnf_matcher_detail {

constexpr uint32_t kSlots = 2 * GbnfMatcher::kMaxStacks;  // a power of two
static_assert((kSlots & (kSlots - 1)) == 0);
constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};

uint32_t hash_words(const uint32_t* w, size_t n) {
  uint32_t h = 2166136261u ^ static_cast<uint32_t>(n);
  for (size_t k = 0; k < n; ++k) h = (h ^ w[k]) * 16777619u;
  return h ^ (h >> 15);
}

std::string utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

}  // namespace gbnf_matcher_detail

GbnfMatcher::GbnfMatcher(std::shared_ptr<const GbnfGrammar> grammar) : g_(std::move(grammar)) {
  slots_.assign(gbnf_matcher_detail::kSlots, 0);
  next_.clear();
  n_next_ = 0;
  steps_ = 0;
  complete_next_ = false;
  ++generation_;
  const GbnfGrammar::Rule& root = g_->rule(g_->root());
  for (uint32_t alt : root.alternatives) {
    if (g_->rest_bytes(alt) >= GbnfGrammar::kNever) continue;
    cur_.assign(1, alt);
    if (!expand()) {
      n_next_ = 0;
      next_.clear();
      complete_next_ = false;
      break;
    }
  }
  std::swap(stacks_, next_);
  n_stacks_ = n_next_;
  complete_ = complete_next_;
}

void GbnfMatcher::assign_state(const GbnfMatcher& other) {
  stacks_ = other.stacks_;
  n_stacks_ = other.n_stacks_;
  complete_ = other.complete_;
  partial_ = other.partial_;
  need_ = other.need_;
  len_ = other.len_;
  lead_ = other.lead_;
}

void GbnfMatcher::state_key(std::vector<uint32_t>* key) const {
  key->assign(stacks_.begin(), stacks_.end());
  key->push_back(partial_);
  key->push_back(uint32_t{need_} | uint32_t{len_} << 8 | uint32_t{lead_} << 16 | uint32_t{complete_} << 24);
}

bool GbnfMatcher::emit() {
  using gbnf_matcher_detail::kSlots;
  const auto n = static_cast<uint32_t>(cur_.size());
  const uint32_t h = gbnf_matcher_detail::hash_words(cur_.data(), n);
  for (uint32_t probe = 0;; ++probe) {
    uint64_t& slot = slots_[(h + probe) & (kSlots - 1)];
    if ((slot >> 32) != generation_) {
      if (n_next_ >= kMaxStacks) return false;
      slot = (uint64_t{generation_} << 32) | (next_.size() + 1);
      next_.push_back(n);
      next_.insert(next_.end(), cur_.begin(), cur_.end());
      ++n_next_;
      if (n == 0) complete_next_ = true;
      return true;
    }
    const size_t at = static_cast<uint32_t>(slot) - 1;
    if (next_[at] == n && std::equal(cur_.begin(), cur_.end(), next_.begin() + static_cast<ptrdiff_t>(at + 1))) {
      return true;  // already there
    }
  }
}

bool GbnfMatcher::expand() {
  using Op = GbnfGrammar::Op;
  pending_.clear();
  for (;;) {
    for (;;) {
      if (++steps_ > kMaxExpansionSteps) return false;
      if (cur_.empty()) {
        if (!emit()) return false;
        break;
      }
      const uint32_t pos = cur_.back();
      const GbnfGrammar::Element& el = g_->element(pos);
      if (el.op == Op::kEnd) {  // the alternative ended: back in the caller
        cur_.pop_back();
        continue;
      }
      if (el.op == Op::kChars) {
        if (!emit()) return false;
        break;
      }
      // A rule: the caller continues after it (no frame when nothing follows: a tail call), and
      // each alternative that can end is tried; all but the first wait in pending_.
      cur_.pop_back();
      if (g_->element(pos + 1).op != Op::kEnd) cur_.push_back(pos + 1);
      if (cur_.size() + 1 > kMaxStackDepth) return false;
      uint32_t first = UINT32_MAX;
      for (uint32_t alt : g_->rule(el.arg).alternatives) {
        if (g_->rest_bytes(alt) >= GbnfGrammar::kNever) continue;
        if (first == UINT32_MAX) {
          first = alt;
          continue;
        }
        pending_.insert(pending_.end(), cur_.begin(), cur_.end());
        pending_.push_back(alt);
        pending_.push_back(static_cast<uint32_t>(cur_.size() + 1));
      }
      if (first == UINT32_MAX) break;  // no alternative can end (not reached: callers can end)
      cur_.push_back(first);
    }
    if (pending_.empty()) return true;
    const uint32_t n = pending_.back();
    const auto from = pending_.end() - 1 - static_cast<ptrdiff_t>(n);
    cur_.assign(from, pending_.end() - 1);
    pending_.erase(from, pending_.end());
  }
}

bool GbnfMatcher::step(uint32_t cp) {
  next_.clear();
  n_next_ = 0;
  steps_ = 0;
  complete_next_ = false;
  if (++generation_ == 0) {  // wrapped: old stamps could collide
    std::fill(slots_.begin(), slots_.end(), 0);
    generation_ = 1;
  }
  for (size_t at = 0; at < stacks_.size();) {
    const uint32_t n = stacks_[at];
    const size_t top = at + n;
    const size_t end = at + 1 + n;
    if (n > 0 && g_->class_contains(g_->element(stacks_[top]).arg, cp)) {
      cur_.assign(stacks_.begin() + static_cast<ptrdiff_t>(at + 1), stacks_.begin() + static_cast<ptrdiff_t>(end));
      cur_.back() += 1;  // past the class
      if (!expand()) return false;
    }
    at = end;
  }
  if (n_next_ == 0) return false;
  std::swap(stacks_, next_);
  n_stacks_ = n_next_;
  complete_ = complete_next_;
  return true;
}

void GbnfMatcher::interval(uint32_t prefix, uint32_t len, uint32_t remaining, uint32_t* lo, uint32_t* hi) {
  const uint32_t shift = 6 * remaining;
  *lo = std::max(prefix << shift, gbnf_matcher_detail::kMinForLength[len]);
  *hi = std::min((prefix << shift) | ((1u << shift) - 1), 0x10FFFFu);
}

bool GbnfMatcher::viable(uint32_t prefix, uint32_t len, uint32_t remaining) const {
  uint32_t lo = 0, hi = 0;
  interval(prefix, len, remaining, &lo, &hi);
  if (lo > hi) return false;
  for (size_t at = 0; at < stacks_.size(); at += 1 + stacks_[at]) {
    const uint32_t n = stacks_[at];
    if (n > 0 && g_->class_intersects(g_->element(stacks_[at + n]).arg, lo, hi)) return true;
  }
  return false;
}

bool GbnfMatcher::advance(uint8_t c) {
  if (need_ == 0) {
    if (c < 0x80) return step(c);
    uint32_t len = 0, bits = 0;
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2, bits = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3, bits = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4, bits = c & 0x07u;
    } else {
      return false;
    }
    if (!viable(bits, len, len - 1)) return false;
    partial_ = bits;
    len_ = static_cast<uint8_t>(len);
    need_ = static_cast<uint8_t>(len - 1);
    lead_ = c;
    return true;
  }
  // A continuation byte; the second one is narrowed so that no overlong form, surrogate or code
  // point past U+10FFFF can be written.
  uint8_t lo = 0x80, hi = 0xBF;
  if (need_ + 1 == len_) {
    if (lead_ == 0xE0) lo = 0xA0;
    if (lead_ == 0xED) hi = 0x9F;
    if (lead_ == 0xF0) lo = 0x90;
    if (lead_ == 0xF4) hi = 0x8F;
  }
  if (c < lo || c > hi) return false;
  const uint32_t bits = (partial_ << 6) | (c & 0x3Fu);
  if (need_ == 1) {
    if (!step(bits)) return false;
    need_ = 0;
    return true;
  }
  if (!viable(bits, len_, need_ - 1u)) return false;
  partial_ = bits;
  --need_;
  return true;
}

bool GbnfMatcher::feed(std::string_view bytes) {
  if (bytes.size() == 1) return advance(static_cast<uint8_t>(bytes[0]));  // leaves the state as it was
  const std::vector<uint32_t> stacks = stacks_;
  const uint32_t n_stacks = n_stacks_, partial = partial_;
  const bool complete = complete_;
  const uint8_t need = need_, len = len_, lead = lead_;
  for (char ch : bytes) {
    if (!advance(static_cast<uint8_t>(ch))) {
      stacks_ = stacks;
      n_stacks_ = n_stacks;
      complete_ = complete;
      partial_ = partial;
      need_ = need;
      len_ = len;
      lead_ = lead;
      return false;
    }
  }
  return true;
}

std::optional<std::string> GbnfMatcher::closing_bytes(size_t max_bytes) const {
  GbnfMatcher m(*this);
  std::string out;
  while (!m.complete()) {
    // The live stack with the fewest bytes left (among those that can finish a cut character).
    uint32_t lo = 0, hi = 0x10FFFF;
    if (m.need_ > 0) interval(m.partial_, m.len_, m.need_, &lo, &hi);
    uint64_t best_cost = UINT64_MAX;
    uint32_t best_class = 0;
    for (size_t at = 0; at < m.stacks_.size(); at += 1 + m.stacks_[at]) {
      const uint32_t n = m.stacks_[at];
      if (n == 0) continue;
      const uint32_t cls = g_->element(m.stacks_[at + n]).arg;
      if (m.need_ > 0 && !g_->class_intersects(cls, lo, hi)) continue;
      uint64_t cost = 0;
      for (uint32_t k = 1; k <= n; ++k) cost += g_->rest_bytes(m.stacks_[at + k]);
      if (cost < best_cost) {
        best_cost = cost;
        best_class = cls;
      }
    }
    if (best_cost == UINT64_MAX) return std::nullopt;
    const uint32_t cp = g_->class_pick(best_class, lo, hi);
    if (cp == UINT32_MAX) return std::nullopt;
    std::string bytes = gbnf_matcher_detail::utf8(cp);
    if (m.need_ > 0) bytes = bytes.substr(bytes.size() - m.need_);
    if (out.size() + bytes.size() > max_bytes || !m.feed(bytes)) return std::nullopt;
    out += bytes;
  }
  return out;
}

}  // namespace tessera::engine
