#include "tessera/engine/prefix_blocks.h"

#include <gtest/gtest.h>

namespace tessera::engine {
namespace prefix_blocks_test {

// A cached block named by `hash` under `parent` (tokens do not matter to the selection).
CachedBlock blk(uint64_t hash, uint64_t parent) { return {static_cast<int32_t>(hash), hash, parent, {}}; }

std::vector<uint64_t> hashes(const std::vector<CachedBlock>& c, const std::vector<size_t>& idx) {
  std::vector<uint64_t> out;
  for (size_t i : idx) out.push_back(c[i].hash);
  return out;
}

TEST(SelectKeptBlocksTest, KeepsEverythingWithinTheBudgetInRecencyOrder) {
  const std::vector<CachedBlock> c = {blk(1, 0), blk(2, 1), blk(3, 0)};
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 10)), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_TRUE(select_kept_blocks(c, 0).empty());
  EXPECT_TRUE(select_kept_blocks({}, 5).empty());
}

TEST(SelectKeptBlocksTest, ACutBudgetKeepsTheHeadsOfTheMostRecentPrompts) {
  // Prompt A (10 -> 11 -> 12) used first, prompt B (20 -> 21 -> 22) last. Released tail first
  // (the engine's order), so within a prompt the head is the most recent.
  const std::vector<CachedBlock> c = {blk(12, 11), blk(11, 10), blk(10, 0),
                                      blk(22, 21), blk(21, 20), blk(20, 0)};
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 2)), (std::vector<uint64_t>{21, 20}));
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 4)), (std::vector<uint64_t>{10, 22, 21, 20}));
  // Released head first: a plain most-recent cut would keep B's tail, useless without its head.
  const std::vector<CachedBlock> d = {blk(10, 0), blk(11, 10), blk(20, 0), blk(21, 20),
                                      blk(22, 21)};
  EXPECT_EQ(hashes(d, select_kept_blocks(d, 2)), (std::vector<uint64_t>{20, 21}));
  EXPECT_EQ(hashes(d, select_kept_blocks(d, 4)), (std::vector<uint64_t>{10, 20, 21, 22}));
}

TEST(SelectKeptBlocksTest, DropsBlocksWhoseParentIsNotCached) {
  // 31's parent 30 was evicted earlier; 32 hangs off 31.
  const std::vector<CachedBlock> c = {blk(31, 30), blk(32, 31), blk(1, 0), blk(2, 1)};
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 10)), (std::vector<uint64_t>{1, 2}));
}

TEST(SelectKeptBlocksTest, SharedHeadsRankAsTheirMostRecentUse) {
  // Head 1 is shared by 2 (old) and 3 (newest); 9 is a lone block used in between.
  const std::vector<CachedBlock> c = {blk(2, 1), blk(1, 0), blk(9, 0), blk(3, 1)};
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 2)), (std::vector<uint64_t>{1, 3}));
  EXPECT_EQ(hashes(c, select_kept_blocks(c, 3)), (std::vector<uint64_t>{1, 9, 3}));
}

}  // namespace prefix_blocks_test
}  // namespace tessera::engine
