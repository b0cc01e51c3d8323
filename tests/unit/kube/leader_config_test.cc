#include <gtest/gtest.h>

#include "operator/kube/leader_elector.h"

namespace lockstep::kube {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

LeaderElectionConfig Timings(milliseconds lease, milliseconds renew, milliseconds retry) {
  LeaderElectionConfig c;
  c.lease_namespace = "n";
  c.lease_name = "l";
  c.identity = "i";
  c.lease_duration = lease;
  c.renew_deadline = renew;
  c.retry_period = retry;
  return c;
}

TEST(LeaderConfigTest, ValidatesTimings) {
  LeaderElectionConfig c;
  c.lease_namespace = "n";
  c.lease_name = "l";
  c.identity = "i";
  EXPECT_TRUE(ValidateLeaderElectionConfig(c).ok());
  c.renew_deadline = c.lease_duration;
  EXPECT_FALSE(ValidateLeaderElectionConfig(c).ok());
  c.renew_deadline = seconds(2);
  c.retry_period = seconds(2);
  EXPECT_FALSE(ValidateLeaderElectionConfig(c).ok());
}

TEST(LeaderConfigTest, MaxBackdateLeavesTheOldLeaderTimeToStop) {
  // client-go's timings: the old leader stops by 10 s + 2 s timeout; 3 s margin, capped at 2 s.
  EXPECT_EQ(MaxBackdate(Timings(seconds(15), seconds(10), seconds(2))), seconds(2));
  EXPECT_EQ(LeaderElectionRequestTimeout(Timings(seconds(15), seconds(10), seconds(2))),
            seconds(2));
  // Margin smaller than the retry period: the margin wins.
  EXPECT_EQ(MaxBackdate(Timings(seconds(13), seconds(10), seconds(2))), seconds(1));
  // No margin at all (timeout at least 1 s): no backdating, client-go's rule.
  EXPECT_EQ(MaxBackdate(Timings(seconds(3), seconds(2), milliseconds(500))), milliseconds(0));
  for (auto c : {Timings(seconds(15), seconds(10), seconds(2)),
                 Timings(seconds(60), seconds(40), seconds(5)),
                 Timings(seconds(3), seconds(2), milliseconds(500))}) {
    EXPECT_LE(c.renew_deadline + LeaderElectionRequestTimeout(c) + MaxBackdate(c),
              c.lease_duration);
  }
}

class LeaseRecordStartTest : public ::testing::Test {
 protected:
  const Clock::Steady seen_at_ = Clock::Steady(seconds(1000));
  const Clock::Wall seen_wall_ = Clock::Wall(seconds(1'800'000'000));
  const milliseconds max_ = seconds(2);
  Clock::Steady StartFor(milliseconds age) {
    return LeaseRecordStart(seen_at_, seen_wall_, seen_wall_ - age, max_);
  }
};

TEST_F(LeaseRecordStartTest, ARecordSeenWithinTheWindowCountsFromItsRenewTime) {
  EXPECT_EQ(StartFor(milliseconds(0)), seen_at_);
  EXPECT_EQ(StartFor(milliseconds(1300)), seen_at_ - milliseconds(1300));
  EXPECT_EQ(StartFor(seconds(2)), seen_at_ - seconds(2));
}

TEST_F(LeaseRecordStartTest, AnOlderLookingRecordIsBackdatedAtMostMaxBackdate) {
  // Seen late (slow poll, or this candidate's clock ahead): never more than max_ early.
  EXPECT_EQ(StartFor(milliseconds(2001)), seen_at_ - seconds(2));
  EXPECT_EQ(StartFor(seconds(3600)), seen_at_ - seconds(2));
}

TEST_F(LeaseRecordStartTest, ARenewTimeFromTheFutureCountsFromTheObservation) {
  // The holder's clock is ahead of ours: fall back to client-go's rule, never later than seen.
  EXPECT_EQ(StartFor(-seconds(5)), seen_at_);
}

TEST_F(LeaseRecordStartTest, ZeroMaxBackdateIsClientGosRule) {
  EXPECT_EQ(LeaseRecordStart(seen_at_, seen_wall_, seen_wall_ - seconds(1), milliseconds(0)),
            seen_at_);
}

TEST_F(LeaseRecordStartTest, ExpiryOfAKilledLeadersLeaseIsItsRenewTimePlusTheDuration) {
  // The leader renewed at wall time R and died; a candidate polling every 2-4.4 s first sees the
  // record 1.7 s later. With agreeing clocks, expiry is R + 15 s on the candidate's clock, where
  // client-go would say R + 16.7 s.
  const Clock::Steady start = StartFor(milliseconds(1700));
  EXPECT_EQ(start + seconds(15), seen_at_ - milliseconds(1700) + seconds(15));
}

}  // namespace
}  // namespace lockstep::kube
