#include "tessera/engine/block_allocator.h"

#include <gtest/gtest.h>

namespace tessera::engine {
namespace block_allocator_test {

TEST(BlockAllocator, AllocatesEveryBlockOnceThenRunsOut) {
  BlockAllocator a(3);
  std::vector<int32_t> got;
  for (int i = 0; i < 3; ++i) {
    auto b = a.allocate();
    ASSERT_TRUE(b.has_value());
    got.push_back(*b);
  }
  EXPECT_FALSE(a.allocate().has_value());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(a.n_referenced(), 3);
  a.release(got[1]);
  EXPECT_EQ(a.n_free(), 1);
  EXPECT_EQ(a.allocate(), got[1]);
}

TEST(BlockAllocator, PublishedBlockIsFoundAfterReleaseAndSharedWhileReferenced) {
  BlockAllocator a(4);
  const std::vector<int32_t> toks = {5, 6, 7, 8};
  const uint64_t h = chain_block_hash(0, toks, -1);
  const int32_t b = *a.allocate();
  a.publish(b, h, 0, toks);
  // Shared while the writer still holds it.
  auto hit = a.lookup(h, 0, toks);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(*hit, b);
  EXPECT_EQ(a.ref_count(b), 2);
  a.release(b);
  a.release(b);
  EXPECT_EQ(a.n_cached(), 1);
  EXPECT_EQ(a.n_available(), 4);
  hit = a.lookup(h, 0, toks);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(a.n_cached(), 0);
  EXPECT_EQ(a.ref_count(b), 1);
}

TEST(BlockAllocator, LookupChecksTokensParentAndAdapter) {
  BlockAllocator a(2);
  const std::vector<int32_t> toks = {1, 2};
  const uint64_t h = chain_block_hash(0, toks, -1);
  const int32_t b = *a.allocate();
  a.publish(b, h, 0, toks);
  const std::vector<int32_t> other = {1, 3};
  EXPECT_FALSE(a.lookup(h, 0, other).has_value());  // same hash, other tokens: a collision
  EXPECT_FALSE(a.lookup(h, 42, toks).has_value());  // other parent
  EXPECT_NE(chain_block_hash(0, toks, 3), h);        // adapters do not share KV
  EXPECT_NE(chain_block_hash(h, toks, -1), h);       // position in the chain matters
}

TEST(BlockAllocator, EvictsLeastRecentlyReleasedCachedBlockWhenFreeRunsOut) {
  BlockAllocator a(2);
  const std::vector<int32_t> t1 = {1}, t2 = {2};
  const uint64_t h1 = chain_block_hash(0, t1, -1), h2 = chain_block_hash(0, t2, -1);
  const int32_t b1 = *a.allocate();
  const int32_t b2 = *a.allocate();
  a.publish(b1, h1, 0, t1);
  a.publish(b2, h2, 0, t2);
  a.release(b1);  // older
  a.release(b2);
  EXPECT_EQ(a.n_free(), 0);
  EXPECT_EQ(a.n_cached(), 2);
  EXPECT_EQ(a.allocate(), b1);  // evicts the least recently released
  EXPECT_FALSE(a.lookup(h1, 0, t1).has_value());
  EXPECT_TRUE(a.lookup(h2, 0, t2).has_value());
}

TEST(BlockAllocator, DuplicatePublishKeepsTheFirstCopy) {
  BlockAllocator a(2);
  const std::vector<int32_t> t = {9};
  const uint64_t h = chain_block_hash(0, t, -1);
  const int32_t b1 = *a.allocate();
  const int32_t b2 = *a.allocate();
  a.publish(b1, h, 0, t);
  a.publish(b2, h, 0, t);
  a.release(b2);
  EXPECT_EQ(a.n_free(), 1);  // b2 was never published: back to free, not cached
  EXPECT_EQ(a.lookup(h, 0, t), b1);
}

TEST(BlockAllocatorDeath, ReleasingAnUnreferencedBlockIsABug) {
  BlockAllocator a(1);
  const int32_t b = *a.allocate();
  a.release(b);
  EXPECT_DEATH(a.release(b), "");
}

}  // namespace block_allocator_test
}  // namespace tessera::engine
