#include "tessera/engine/pattern_lengths.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <limits>

namespace tessera::engine {
namespace {

constexpr int32_t kFar = std::numeric_limits<int32_t>::max();

// The decoded bytes a JSON string can carry as one character of their own: printable ASCII
// (written raw or, for '"' and '\\', escaped) and the five control characters with short escapes.
bool single_byte_character(int b) {
  return (b >= 0x20 && b <= 0x7F) || b == 0x08 || b == 0x09 || b == 0x0A || b == 0x0C || b == 0x0D;
}

// A UTF-8 lead byte's continuation count and its first continuation's range code; 0 for none.
int lead_remaining(int b, int* range) {
  *range = 0;
  if (b >= 0xC2 && b <= 0xDF) return 1;
  if (b >= 0xE0 && b <= 0xEF) {
    *range = b == 0xE0 ? 1 : b == 0xED ? 2 : 0;
    return 2;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    *range = b == 0xF0 ? 3 : b == 0xF4 ? 4 : 0;
    return 3;
  }
  return 0;
}

bool in_range(int b, int range) {
  switch (range) {
    case 1: return b >= 0xA0 && b <= 0xBF;
    case 2: return b >= 0x80 && b <= 0x9F;
    case 3: return b >= 0x90 && b <= 0xBF;
    case 4: return b >= 0x80 && b <= 0x8F;
    default: return b >= 0x80 && b <= 0xBF;
  }
}

// Readable bytes first when a completion is chosen.
int preference(uint8_t b) {
  if (b >= 'a' && b <= 'z') return 0;
  if ((b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9')) return 1;
  if (b >= 0x20 && b < 0x7F) return 2;
  return 3;
}

}  // namespace

Result<std::shared_ptr<const PatternLengths>> PatternLengths::build(std::shared_ptr<const RegexDfa> dfa,
                                                                    int64_t min_length,
                                                                    int64_t max_length) {
  auto out = std::make_shared<PatternLengths>();
  PatternLengths& t = *out;
  t.dfa_ = std::move(dfa);
  t.min_length_ = min_length;
  t.max_length_ = max_length;
  if (max_length >= 0 && max_length <= kMaxTableLength) {
    t.mode_ = Mode::kExact;
    t.table_length_ = max_length;
  } else if (max_length < 0 && min_length > 0 && min_length <= kMaxTableLength) {
    t.mode_ = Mode::kAtLeast;
    t.table_length_ = min_length;
  } else if (min_length == 0) {
    t.mode_ = Mode::kShortest;
  } else {
    return Status(ErrorCode::kUnsupported,
                  fmt::format("'pattern' with minLength {} and maxLength {}: a minLength beside the "
                              "pattern is supported up to {} characters, or with a maxLength up to "
                              "{}", min_length, max_length, kMaxTableLength, kMaxTableLength));
  }
  const RegexDfa& d = *t.dfa_;
  // The (automaton state, phase) pairs reachable from the start through well-formed UTF-8.
  t.lookup_.assign(d.size() * kPhases, 0);
  int64_t work = 0;
  const auto visit = [&](uint16_t s, uint8_t p) -> uint32_t {
    uint32_t& slot = t.lookup_[static_cast<size_t>(s) * kPhases + p];
    if (slot == 0) {
      t.states_.emplace_back(s, p);
      slot = static_cast<uint32_t>(t.states_.size());
    }
    return slot - 1;
  };
  visit(d.start(), 0);
  t.first_edge_.push_back(0);
  for (size_t x = 0; x < t.states_.size(); ++x) {
    const auto [s, p] = t.states_[x];
    const int remaining = p / 5, range = p % 5;
    for (int b = 0; b < 256; ++b) {
      if (++work > kMaxWork) {
        return Status(ErrorCode::kUnsupported, "'pattern' with minLength/maxLength: the pattern is "
                                               "too large to combine with a length");
      }
      uint8_t next_phase = 0, weight = 1;
      if (remaining > 0) {
        if (!in_range(b, range)) continue;
        next_phase = phase(remaining - 1, 0);
        weight = 0;
      } else if (int r = 0, n = lead_remaining(b, &r); n > 0) {
        next_phase = phase(n, r);
      } else if (!single_byte_character(b)) {
        continue;
      }
      const uint16_t to = d.next(s, static_cast<uint8_t>(b));
      if (to == RegexDfa::kDead) continue;
      const uint32_t y = visit(to, next_phase);
      t.edges_.push_back({y, static_cast<uint8_t>(b), weight});
    }
    t.first_edge_.push_back(static_cast<uint32_t>(t.edges_.size()));
  }
  const size_t n = t.states_.size();
  // Fewest bytes and fewest characters to an accepting state (between characters): backwards.
  std::vector<std::vector<uint32_t>> into(n);
  for (size_t x = 0; x < n; ++x) {
    for (uint32_t e = t.first_edge_[x]; e < t.first_edge_[x + 1]; ++e) into[t.edges_[e].to].push_back(static_cast<uint32_t>(x));
  }
  const auto accepting = [&](size_t x) { return t.states_[x].second == 0 && d.accepting(t.states_[x].first); };
  t.byte_distance_.assign(n, kFar);
  t.char_distance_.assign(n, kFar);
  std::deque<uint32_t> q;
  for (size_t x = 0; x < n; ++x) {
    if (accepting(x)) {
      t.byte_distance_[x] = 0;
      q.push_back(static_cast<uint32_t>(x));
    }
  }
  while (!q.empty()) {
    const uint32_t y = q.front();
    q.pop_front();
    for (uint32_t x : into[y]) {
      if (t.byte_distance_[x] == kFar) {
        t.byte_distance_[x] = t.byte_distance_[y] + 1;
        q.push_back(x);
      }
    }
  }
  // Characters: Bellman-Ford style relaxation over the (small) edge list until stable; weight-0
  // edges only lower the phase, so it settles.
  for (size_t x = 0; x < n; ++x) {
    if (accepting(x)) t.char_distance_[x] = 0;
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t x = 0; x < n; ++x) {
      for (uint32_t e = t.first_edge_[x]; e < t.first_edge_[x + 1]; ++e) {
        const Edge& ed = t.edges_[e];
        if (t.char_distance_[ed.to] == kFar) continue;
        const int32_t c = t.char_distance_[ed.to] + ed.weight;
        if (c < t.char_distance_[x]) {
          t.char_distance_[x] = c;
          changed = true;
        }
      }
      if ((work += t.first_edge_[x + 1] - t.first_edge_[x]) > kMaxWork) {
        return Status(ErrorCode::kUnsupported, "'pattern' with minLength/maxLength: the pattern is "
                                               "too large to combine with a length");
      }
    }
  }
  if (t.mode_ == Mode::kShortest) return std::shared_ptr<const PatternLengths>(out);
  // The length table, j = 0..table_length_: within one j, phases with fewer continuation bytes
  // due first (a weight-0 edge lowers the count due by one).
  t.words_ = static_cast<size_t>(t.table_length_ / 64 + 1);
  if (static_cast<int64_t>(n) * (t.table_length_ + 1) * 4 > kMaxWork ||
      work + static_cast<int64_t>(t.edges_.size()) * (t.table_length_ + 1) > kMaxWork) {
    return Status(ErrorCode::kUnsupported, "'pattern' with minLength/maxLength: the pattern and the "
                                           "length together are too large");
  }
  t.bits_.assign(n * t.words_, 0);
  std::vector<uint32_t> order(n);
  for (size_t x = 0; x < n; ++x) order[x] = static_cast<uint32_t>(x);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return t.states_[a].second / 5 < t.states_[b].second / 5; });
  const bool exact = t.mode_ == Mode::kExact;
  for (int64_t j = 0; j <= t.table_length_; ++j) {
    for (uint32_t x : order) {
      bool v = j == 0 ? (exact ? accepting(x) : t.char_distance_[x] != kFar) : false;
      for (uint32_t e = t.first_edge_[x]; e < t.first_edge_[x + 1] && !v; ++e) {
        const Edge& ed = t.edges_[e];
        const int64_t rest = j - ed.weight;
        if (rest < 0) continue;
        v = t.bit(static_cast<int32_t>(ed.to), rest);
      }
      if (v) t.bits_[x * t.words_ + static_cast<size_t>(j / 64)] |= uint64_t{1} << (j % 64);
    }
  }
  return std::shared_ptr<const PatternLengths>(out);
}

int32_t PatternLengths::index(uint16_t state, uint8_t phase) const {
  if (state == RegexDfa::kDead || state >= dfa_->size() || phase >= kPhases) return -1;
  return static_cast<int32_t>(lookup_[static_cast<size_t>(state) * kPhases + phase]) - 1;
}

bool PatternLengths::bit(int32_t x, int64_t j) const {
  return (bits_[static_cast<size_t>(x) * words_ + static_cast<size_t>(j / 64)] >> (j % 64)) & 1;
}

int64_t PatternLengths::target(int32_t x, int64_t count) const {
  const int64_t lo = std::max<int64_t>(0, min_length_ - count);
  switch (mode_) {
    case Mode::kExact:
      for (int64_t j = lo; j <= max_length_ - count; ++j) {
        if (bit(x, j)) return j;
      }
      return -1;
    case Mode::kAtLeast:
      return bit(x, std::min(lo, table_length_)) ? lo : -1;
    case Mode::kShortest:
      if (char_distance_[static_cast<size_t>(x)] == kFar) return -1;
      return max_length_ < 0 || char_distance_[static_cast<size_t>(x)] <= max_length_ - count ? 0 : -1;
  }
  return -1;
}

bool PatternLengths::feasible(uint16_t state, uint8_t phase, int64_t count) const {
  const int32_t x = index(state, phase);
  return x >= 0 && target(x, count) >= 0;
}

int PatternLengths::next_value_byte(uint16_t state, uint8_t phase, int64_t count) const {
  const int32_t x = index(state, phase);
  if (x < 0) return -2;
  const int64_t need = target(x, count);
  if (need < 0) return -2;
  if (phase == 0 && dfa_->accepting(state) && count >= min_length_ &&
      (max_length_ < 0 || count <= max_length_)) {
    return -1;
  }
  // An edge that keeps the chosen length reachable and gets closer: in the exact and at-least
  // tables one character fewer to go (need - weight); once nothing more is needed, the fewest
  // characters to an accepting state.
  int best = -2, best_pref = 4;
  for (uint32_t e = first_edge_[static_cast<size_t>(x)]; e < first_edge_[static_cast<size_t>(x) + 1]; ++e) {
    const Edge& ed = edges_[e];
    bool ok = false;
    if (mode_ != Mode::kShortest && need > 0) {
      ok = need - ed.weight >= 0 && bit(static_cast<int32_t>(ed.to), need - ed.weight);
    } else {  // (the exact table never gets here: need 0 there means the string may close)
      ok = char_distance_[ed.to] != kFar &&
           char_distance_[ed.to] + ed.weight == char_distance_[static_cast<size_t>(x)];
    }
    if (ok && preference(ed.byte) < best_pref) {
      best = ed.byte;
      best_pref = preference(ed.byte);
    }
  }
  return best;
}

}  // namespace tessera::engine
