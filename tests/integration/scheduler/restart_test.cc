// The scheduler's side of restarts and elastic jobs (issue 6) against the real kube-apiserver and
// kwok nodes: status.excludedNodes, gangs by attempt, and status.capacity for elastic jobs. The
// tests play the controller (status writes under its field manager, pods per attempt).

#include <set>
#include <thread>

#include "operator/api/time.h"
#include "tests/integration/scheduler/scheduler_env.h"

namespace lockstep::scheduler::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::string InMinutes(int minutes) {
  return api::FormatTime(std::chrono::system_clock::now() + std::chrono::minutes(minutes));
}

std::set<std::string> Nodes(const std::map<std::string, std::string>& placement) {
  std::set<std::string> out;
  for (const auto& [pod, node] : placement) out.insert(node);
  return out;
}

TEST_F(SchedulerTest, StatusExcludedNodesAreAvoidedUntilTheirCoolDownEnds) {
  const std::vector<std::string> nodes = CreateTopology(1, 1, 4);
  StartScheduler();
  CreateJob("cooling", {3, 8, {}, ""}, /*with_pods=*/false);
  // n0 cools down for 10 more minutes; n1's cool-down ended a minute ago.
  ApplyControllerStatus(
      "cooling", {{"excludedNodes",
                   {{{"name", nodes[0]}, {"reason", "NodeLeaseExpired"}, {"until", InMinutes(10)}},
                    {{"name", nodes[1]}, {"reason", "NodeNotReady"}, {"until", InMinutes(-1)}}}}});
  CreatePods("cooling", {3, 8, {}, ""});
  ASSERT_TRUE(WaitAllBound("cooling", 3, seconds(60)));
  EXPECT_EQ(Nodes(Placement("cooling")), (std::set<std::string>{nodes[1], nodes[2], nodes[3]}));

  // With n0 and n2 both excluded, a 3-pod gang cannot fit and the message counts them.
  DeletePods("cooling");
  ApplyControllerStatus(
      "cooling", {{"excludedNodes",
                   {{{"name", nodes[0]}, {"reason", "NodeLeaseExpired"}, {"until", InMinutes(10)}},
                    {{"name", nodes[2]}, {"reason", "NodeNotReady"}, {"until", InMinutes(10)}}}}});
  CreatePods("cooling", {3, 8, {}, "", 0, 0});
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] { return ScheduledCondition("cooling").value("status", "") == "False"; }, seconds(30)))
      << ScheduledCondition("cooling").dump() << " bound: " << BoundCount("cooling");
  const std::string message = ScheduledCondition("cooling").value("message", "");
  EXPECT_NE(message.find("excluded"), std::string::npos) << message;
  EXPECT_EQ(BoundCount("cooling"), 0);
}

TEST_F(SchedulerTest, OnlyTheCurrentAttemptsPodsAreAGang) {
  CreateTopology(1, 1, 4);
  CreateJob("restarting", {2, 8, {}, ""}, /*with_pods=*/false);
  ApplyControllerStatus("restarting", {{"attempt", 1}, {"replicas", 2}});
  // Started after the status write, so its synced cache holds attempt 1 before any pod exists:
  // the job and pod watches are separate streams, and a scheduler started first could see
  // attempt 0's pods before the status naming attempt 1 (CI saw exactly that: 2 bound).
  StartScheduler();
  // A complete gang of attempt 0 (its deletion not yet seen) is never placed...
  CreatePods("restarting", {2, 8, {}, "", 0, 0});
  // ...nor is attempt 2, newer than the status the scheduler sees, until the status says so.
  CreatePods("restarting", {2, 8, {}, "", 0, 2});
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(BoundCount("restarting"), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // Attempt 1 arrives: exactly its two pods are bound; attempt 0's stay pending.
  CreatePods("restarting", {2, 8, {}, "", 0, 1});
  ASSERT_TRUE(WaitAllBound("restarting", 2, seconds(60)));
  for (const auto& [pod, node] : Placement("restarting")) {
    EXPECT_EQ(!node.empty(), pod.ends_with("-a1")) << pod << " on '" << node << "'";
  }
  // The status moves on to attempt 2: its pods get the two free nodes.
  ApplyControllerStatus("restarting", {{"attempt", 2}, {"replicas", 2}});
  ASSERT_TRUE(WaitAllBound("restarting", 4, seconds(60)));
  for (const auto& [pod, node] : Placement("restarting")) {
    EXPECT_EQ(node.empty(), pod.find("-a") == std::string::npos) << pod << " on '" << node << "'";
  }
}

TEST_F(SchedulerTest, ElasticJobGetsTheSizeThatFitsAndGrowsBack) {
  const std::vector<std::string> nodes = CreateTopology(1, 2, 4);  // 8 nodes x 8 GPUs
  CreateForeignPod("theirs-0", nodes[0], 8);
  CreateForeignPod("theirs-1", nodes[4], 8);  // room for 6 one-node workers
  StartScheduler();
  JobSpec spec{8, 8, {std::string(kBlockKey), std::string(kRackKey)}, "", 4, 0};
  CreateJob("stretchy", spec, /*with_pods=*/false);
  ApplyControllerStatus("stretchy", {{"state", "Scheduling"}, {"replicas", 8}, {"attempt", 0}});
  CreatePods("stretchy", spec);

  // The gang of 8 waits, bound nowhere; the scheduler says 6 would fit.
  ASSERT_TRUE(
      kube::testing::WaitFor([&] { return FeasibleReplicas("stretchy") == 6; }, seconds(30)))
      << FeasibleReplicas("stretchy");
  EXPECT_EQ(BoundCount("stretchy"), 0);
  EXPECT_EQ(ScheduledCondition("stretchy").value("status", ""), "False");

  // The controller restarts it at 6 (attempt 1); the gang of 6 runs.
  ApplyControllerStatus("stretchy", {{"state", "Restarting"}, {"replicas", 6}, {"attempt", 1}});
  DeletePods("stretchy");
  spec.replicas = 6;
  spec.attempt = 1;
  CreatePods("stretchy", spec);
  ASSERT_TRUE(WaitAllBound("stretchy", 6, seconds(60)));
  ApplyControllerStatus("stretchy", {{"state", "Running"}, {"replicas", 6}, {"attempt", 1}});
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] { return ScheduledCondition("stretchy").value("status", "") == "True"; }, seconds(30)));
  // Running at 6 with nothing else free: the answer stays 6 (counting its own pods as free),
  // and the Scheduled condition survives the capacity writes (one field manager, both fields).
  std::this_thread::sleep_for(seconds(3));
  EXPECT_EQ(FeasibleReplicas("stretchy"), 6);

  // Capacity returns: two more nodes. The grow-back check finds 8.
  CreateTopology(1, 1, 2);
  ASSERT_TRUE(
      kube::testing::WaitFor([&] { return FeasibleReplicas("stretchy") == 8; }, seconds(30)))
      << FeasibleReplicas("stretchy");
  EXPECT_EQ(ScheduledCondition("stretchy").value("status", ""), "True");
  EXPECT_EQ(BoundCount("stretchy"), 6);  // the scheduler only answers; the controller resizes
}

}  // namespace
}  // namespace lockstep::scheduler::testing
