#include "tessera/base/page_buffer.h"

#include <gtest/gtest.h>

#include <utility>

namespace tessera {
namespace page_buffer_test {

TEST(PageBuffer, StartsZeroedAndMoves) {
  auto b = PageBuffer::allocate(3 << 20);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  PageBuffer buf = std::move(b).value();
  ASSERT_EQ(buf.size(), size_t{3} << 20);
  EXPECT_EQ(buf.data()[0], std::byte{0});
  EXPECT_EQ(buf.data()[buf.size() - 1], std::byte{0});
  buf.data()[12345] = std::byte{7};
  PageBuffer moved = std::move(buf);
  EXPECT_EQ(buf.data(), nullptr);  // NOLINT(bugprone-use-after-move): checking the moved-from state
  EXPECT_EQ(moved.data()[12345], std::byte{7});
  PageBuffer assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.data()[12345], std::byte{7});
}

TEST(PageBuffer, EmptyAndHugeRequests) {
  auto empty = PageBuffer::allocate(0);
  ASSERT_TRUE(empty.is_ok());
  EXPECT_EQ(empty->size(), 0u);
  auto huge = PageBuffer::allocate(size_t{1} << 62);  // more address space than exists
  EXPECT_EQ(huge.status().code(), ErrorCode::kResourceExhausted);
}

}  // namespace page_buffer_test
}  // namespace tessera
