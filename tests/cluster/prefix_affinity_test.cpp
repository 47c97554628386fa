#include "tessera/cluster/prefix_affinity.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::cluster {
namespace prefix_affinity_test {

std::vector<int32_t> match(const PrefixAffinity& p, const std::string& text, size_t n = 3) {
  std::vector<int32_t> out(n, -1);
  p.match(text, out);
  return out;
}

TEST(PrefixAffinity, CountsTheLeadingWholeBlocksEachReplicaWasSent) {
  PrefixAffinity p(4);
  p.record("aaaabbbbcccc", 0);
  p.record("aaaabbbbdddd", 1);
  EXPECT_EQ(match(p, "aaaabbbbcccc"), (std::vector<int32_t>{3, 2, 0}));
  EXPECT_EQ(match(p, "aaaabbbbddddeeee"), (std::vector<int32_t>{2, 3, 0}));
  EXPECT_EQ(match(p, "aaaaxxxxcccc"), (std::vector<int32_t>{1, 1, 0}));
  EXPECT_EQ(match(p, "zzzzbbbb"), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_EQ(match(p, "aaa"), (std::vector<int32_t>{0, 0, 0}));  // no whole block
}

TEST(PrefixAffinity, KeysNameWholePrefixesNotSingleBlocks) {
  PrefixAffinity p(4);
  p.record("xxxxcccc", 0);
  // "cccc" as a second block after a different first block is a different prefix.
  EXPECT_EQ(match(p, "yyyycccc"), (std::vector<int32_t>{0, 0, 0}));
}

TEST(PrefixAffinity, ForgetDropsAReplicaAndLruBoundsTheIndex) {
  PrefixAffinity p(4, 3);
  p.record("aaaabbbb", 0);
  p.record("aaaabbbb", 1);
  p.forget(0);
  EXPECT_EQ(match(p, "aaaabbbb"), (std::vector<int32_t>{0, 2, 0}));
  p.record("ccccdddd", 2);  // 4 blocks > 3: the least recently used goes
  EXPECT_LE(p.blocks(), 3u);
  EXPECT_EQ(match(p, "ccccdddd"), (std::vector<int32_t>{0, 0, 2}));
  p.forget(1);
  p.forget(2);
  EXPECT_EQ(p.blocks(), 0u);
  p.record("aaaa", 64);  // out of range: ignored
  p.record("aaaa", -1);
  EXPECT_EQ(p.blocks(), 0u);
}

}  // namespace prefix_affinity_test
}  // namespace tessera::cluster
