#include "tessera/bench/train_corpus.h"

#include <array>
#include <string_view>

namespace tessera::bench {
namespace {

// splitmix64: a tiny generator whose sequence is the same everywhere.
struct Mix {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  template <size_t N>
  std::string_view pick(const std::array<std::string_view, N>& a) { return a[next() % N]; }
};

constexpr std::array<std::string_view, 6> kArticles = {"the", "a", "this", "that", "every", "one"};
constexpr std::array<std::string_view, 12> kAdjectives = {
    "old", "small", "quiet", "red", "bright", "young", "tired", "clever", "heavy", "green", "cold", "happy"};
constexpr std::array<std::string_view, 16> kNouns = {
    "cat", "dog", "farmer", "river", "teacher", "house", "bird", "child", "city", "horse",
    "window", "garden", "doctor", "train", "letter", "mountain"};
constexpr std::array<std::string_view, 12> kVerbs = {
    "sees", "finds", "likes", "follows", "watches", "carries", "paints", "visits", "hears",
    "remembers", "opens", "keeps"};
constexpr std::array<std::string_view, 8> kPrepositions = {
    "near", "behind", "under", "beside", "above", "across", "inside", "past"};
constexpr std::array<std::string_view, 6> kAdverbs = {
    "slowly", "again", "today", "often", "quietly", "at night"};

void noun_phrase(Mix& r, std::string& out, bool capital) {
  std::string_view art = r.pick(kArticles);
  out += capital ? static_cast<char>(art[0] - 'a' + 'A') : art[0];
  out.append(art.substr(1));
  out += ' ';
  if (r.next() % 2 == 0) {
    out += r.pick(kAdjectives);
    out += ' ';
  }
  out += r.pick(kNouns);
}

}  // namespace

std::string synthetic_training_text(int64_t bytes, uint64_t seed) {
  Mix r{seed};
  std::string out;
  int sentences_in_paragraph = 0;
  do {
    noun_phrase(r, out, true);
    out += ' ';
    out += r.pick(kVerbs);
    out += ' ';
    noun_phrase(r, out, false);
    if (r.next() % 3 == 0) {
      out += ' ';
      out += r.pick(kPrepositions);
      out += ' ';
      noun_phrase(r, out, false);
    }
    if (r.next() % 4 == 0) {
      out += ' ';
      out += r.pick(kAdverbs);
    }
    out += '.';
    if (++sentences_in_paragraph == 5) {
      out += '\n';
      sentences_in_paragraph = 0;
    } else {
      out += ' ';
    }
  } while (static_cast<int64_t>(out.size()) < bytes);
  return out;
}

}  // namespace tessera::bench
