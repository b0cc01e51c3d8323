#include "operator/kube/rate_limiter.h"

#include <gtest/gtest.h>

#include "tests/testing/fake_clock.h"

namespace lockstep::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(TokenBucketTest, BurstThenQps) {
  testing::FakeClock clock;
  TokenBucket bucket(10, 3, clock);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
  // The 4th and 5th tokens are 100 ms and 200 ms in the future.
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), milliseconds(200));
  clock.Advance(milliseconds(1000));
  // 10 tokens refilled, 2 were borrowed, capped at the burst of 3.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
  EXPECT_GT(bucket.Reserve(), nanoseconds(0));
}

TEST(TokenBucketTest, DisabledWhenQpsNotPositive) {
  testing::FakeClock clock;
  TokenBucket bucket(0, 1, clock);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(bucket.Reserve(), nanoseconds(0));
}

TEST(BackoffTest, ExponentialCappedWithJitter) {
  Backoff backoff({milliseconds(100), milliseconds(1000), 2.0, 0.5}, /*seed=*/1);
  for (int trial = 0; trial < 50; ++trial) {
    const auto d0 = backoff.Delay(0);
    EXPECT_GE(d0, milliseconds(100));
    EXPECT_LE(d0, milliseconds(150));
    const auto d3 = backoff.Delay(3);
    EXPECT_GE(d3, milliseconds(800));
    EXPECT_LE(d3, milliseconds(1200));
    const auto d20 = backoff.Delay(20);
    EXPECT_GE(d20, milliseconds(1000));
    EXPECT_LE(d20, milliseconds(1500));
  }
  Backoff exact({milliseconds(5), milliseconds(40), 2.0, 0.0});
  EXPECT_EQ(exact.Delay(0), milliseconds(5));
  EXPECT_EQ(exact.Delay(2), milliseconds(20));
  EXPECT_EQ(exact.Delay(9), milliseconds(40));
}

}  // namespace
}  // namespace lockstep::kube
