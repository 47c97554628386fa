#include "tessera/base/status.h"

#include <gtest/gtest.h>

namespace tessera {
namespace status_test {

Result<int> parse_positive(int v) {
  if (v <= 0) return invalid_argument("expected a positive value");
  return v;
}

Result<int> doubled(int v) {
  TS_ASSIGN_OR_RETURN(int x, parse_positive(v));
  return 2 * x;
}

Status check_both(int a, int b) {
  TS_RETURN_IF_ERROR(parse_positive(a).status());
  TS_RETURN_IF_ERROR(parse_positive(b).status());
  return Status::ok();
}

TEST(Status, OkAndErrors) {
  EXPECT_TRUE(Status::ok().is_ok());
  Status s = not_found("no such tensor");
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), ErrorCode::kNotFound);
  EXPECT_EQ(s.to_string(), "not_found: no such tensor");
  EXPECT_EQ(s.with_context("loading m.gguf").message(), "loading m.gguf: no such tensor");
  EXPECT_TRUE(Status::ok().with_context("x").is_ok());
}

TEST(Status, MacrosPropagate) {
  EXPECT_EQ(*doubled(4), 8);
  EXPECT_EQ(doubled(-1).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(check_both(1, 2).is_ok());
  EXPECT_EQ(check_both(1, 0).code(), ErrorCode::kInvalidArgument);
}

TEST(Status, EveryCodeHasAName) {
  for (int c = 0; c <= static_cast<int>(ErrorCode::kInternal); ++c) {
    EXPECT_NE(error_code_name(static_cast<ErrorCode>(c)), "unknown");
  }
}

TEST(StatusDeathTest, ValueOfErrorAborts) {
  Result<int> r = internal_error("boom");
  EXPECT_DEATH((void)r.value(), "boom");
}

}  // namespace status_test
}  // namespace tessera
