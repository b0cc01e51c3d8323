// Two operators with --leader-elect: exactly one leads and reconciles; when it stops (SIGTERM
// releases the Lease) the standby takes over and reconciles new jobs.
#include <gtest/gtest.h>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller::testing {
namespace {

using std::chrono::seconds;

bool PodsCreated(kube::RestClient& client, const std::string& ns, const std::string& job) {
  auto pods = ListJobPods(client, ns, job);
  return pods.ok() && pods->size() == 1;
}

TEST(OperatorLeaderTest, OnlyTheLeaderReconcilesAndAStandbyTakesOver) {
  LS_REQUIRE_CLUSTER();
  StatusOr<kube::testing::Cluster> c = kube::testing::Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  kube::RestClient& client = *c->client;
  ASSERT_TRUE(InstallCrd().ok());
  kube::testing::TestNamespace ns(client, "ctrl-leader");
  ASSERT_TRUE(ns.status().ok());
  const std::vector<std::string> args = {"--leader-elect",
                                         "--leader-election-namespace=" + ns.name()};
  OperatorProcess a({ns.name()}, args);
  OperatorProcess b({ns.name()}, args);
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(a.WaitReady(seconds(30)));
  ASSERT_TRUE(kube::testing::WaitFor([&] { return LeaderStatus(a.metrics_port()) == 1; },
                                     seconds(30)));
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(b.WaitReady(seconds(30))) << "a standby is ready once its caches sync";
  EXPECT_EQ(LeaderStatus(b.metrics_port()), 0);

  ASSERT_TRUE(client.Create(kube::resources::TrainingJobs(), ns.name(), MakeJob("one", 1)).ok());
  EXPECT_TRUE(kube::testing::WaitFor([&] { return PodsCreated(client, ns.name(), "one"); },
                                     seconds(30)));

  a.Kill(SIGTERM);
  EXPECT_EQ(a.last_exit(), 0);
  ASSERT_TRUE(kube::testing::WaitFor([&] { return LeaderStatus(b.metrics_port()) == 1; },
                                     seconds(30)))
      << "the standby never took over; log " << b.log_path();
  ASSERT_TRUE(client.Create(kube::resources::TrainingJobs(), ns.name(), MakeJob("two", 1)).ok());
  EXPECT_TRUE(kube::testing::WaitFor([&] { return PodsCreated(client, ns.name(), "two"); },
                                     seconds(30)));
  b.Kill(SIGTERM);
  EXPECT_EQ(b.last_exit(), 0);
}

}  // namespace
}  // namespace lockstep::controller::testing
