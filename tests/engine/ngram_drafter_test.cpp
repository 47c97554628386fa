#include "tessera/engine/ngram_drafter.h"

#include <gtest/gtest.h>

namespace tessera::engine {
namespace ngram_drafter_test {

std::vector<int32_t> draft(const NgramDrafter& d, const std::vector<int32_t>& toks, int32_t k,
                           std::unique_ptr<DraftState>& state) {
  std::vector<int32_t> out;
  d.draft(toks, k, state, out);
  return out;
}

TEST(NgramDrafter, ContinuesTheLongestEarlierMatch) {
  NgramDrafter d(1, 3);
  std::unique_ptr<DraftState> st;
  // "5 6 7" occurred followed by 8 9; "6 7" also occurred followed by 1 (later): the longer
  // match wins.
  const std::vector<int32_t> toks = {5, 6, 7, 8, 9, 4, 6, 7, 1, 2, 5, 6, 7};
  EXPECT_EQ(draft(d, toks, 3, st), (std::vector<int32_t>{8, 9, 4}));
}

TEST(NgramDrafter, PrefersTheMostRecentOccurrence) {
  NgramDrafter d(2, 2);
  std::unique_ptr<DraftState> st;
  const std::vector<int32_t> toks = {1, 2, 3, 1, 2, 4, 1, 2};
  EXPECT_EQ(draft(d, toks, 1, st), (std::vector<int32_t>{4}));
}

TEST(NgramDrafter, NoMatchNoDraftAndMinimumLengthHolds) {
  NgramDrafter d(2, 4);
  std::unique_ptr<DraftState> st;
  EXPECT_TRUE(draft(d, {1, 2, 3, 4}, 4, st).empty());
  st.reset();
  EXPECT_TRUE(draft(d, {1, 2, 3, 1}, 4, st).empty());  // only a unigram match
}

TEST(NgramDrafter, ARepeatingPatternContinuesPastTheEnd) {
  NgramDrafter d(2, 3);
  std::unique_ptr<DraftState> st;
  EXPECT_EQ(draft(d, {7, 8, 9, 7, 8, 9, 7, 8}, 5, st), (std::vector<int32_t>{9, 7, 8, 9, 7}));
}

TEST(NgramDrafter, TheIndexGrowsWithTheSequence) {
  NgramDrafter d(2, 3);
  std::unique_ptr<DraftState> st;
  std::vector<int32_t> toks = {10, 11, 12, 13};
  EXPECT_TRUE(draft(d, toks, 2, st).empty());
  for (int32_t t : {14, 10, 11}) toks.push_back(t);
  EXPECT_EQ(draft(d, toks, 2, st), (std::vector<int32_t>{12, 13}));
  // The same answers as an index built from scratch, for every prefix.
  std::vector<int32_t> grow;
  std::unique_ptr<DraftState> inc;
  const std::vector<int32_t> all = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4,
                                    6, 2, 6, 4, 3, 3, 8, 3, 2, 7, 9, 5, 3, 1, 4, 1, 5, 9, 2, 6};
  for (int32_t t : all) {
    grow.push_back(t);
    std::unique_ptr<DraftState> fresh;
    EXPECT_EQ(draft(d, grow, 4, inc), draft(d, grow, 4, fresh)) << "length " << grow.size();
  }
}

}  // namespace ngram_drafter_test
}  // namespace tessera::engine
