#include "common/status.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

StatusOr<int> ParsePositive(int v) {
  if (v <= 0) return InvalidArgumentError("must be positive");
  return v;
}

Status UsesMacros(int v, int* out) {
  LS_ASSIGN_OR_RETURN(*out, ParsePositive(v));
  LS_RETURN_IF_ERROR(Status::Ok());
  return Status::Ok();
}

TEST(StatusTest, OkByDefaultAndToString) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status().ToString(), "OK");
  EXPECT_EQ(NotFoundError("pods \"x\" not found").ToString(), "NOT_FOUND: pods \"x\" not found");
  EXPECT_TRUE(IsNotFound(NotFoundError("")));
  EXPECT_FALSE(IsNotFound(AbortedError("")));
}

TEST(StatusTest, WithContextPrefixesMessageAndKeepsCode) {
  Status s = UnavailableError("connection refused").WithContext("list pods");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "list pods: connection refused");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusOrTest, ValueOrError) {
  StatusOr<int> good = ParsePositive(3);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  StatusOr<int> bad = ParsePositive(-1);
  EXPECT_FALSE(bad.ok());
  EXPECT_TRUE(IsInvalidArgument(bad.status()));
  EXPECT_EQ(bad.value_or(7), 7);
}

TEST(StatusOrTest, MacrosPropagate) {
  int out = 0;
  EXPECT_TRUE(UsesMacros(5, &out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_TRUE(IsInvalidArgument(UsesMacros(0, &out)));
}

}  // namespace
}  // namespace lockstep
