#include <gtest/gtest.h>

#include "operator/kube/leader_elector.h"

namespace lockstep::kube {
namespace {

using std::chrono::seconds;

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

}  // namespace
}  // namespace lockstep::kube
