// Inter-pod constraints end to end (issue 41 item 2): the gang scheduler, on the real apiserver
// with kwok nodes of the test's own, honours required pod anti-affinity among a gang's pods, a
// DoNotSchedule topology spread constraint, and host ports against a bound pod; a gang the
// constraint leaves without nodes waits with a Scheduled=False reason naming it.

#include <functional>
#include <map>
#include <set>

#include "operator/api/children.h"
#include "tests/integration/scheduler/scheduler_env.h"

namespace lockstep::scheduler::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

std::set<std::string> Nodes(const std::map<std::string, std::string>& placement) {
  std::set<std::string> out;
  for (const auto& [pod, node] : placement) out.insert(node);
  return out;
}

// "One worker per node": anti-affinity to the job's own pods on kubernetes.io/hostname.
json OnePerNode(const std::string& job) {
  return {{"affinity",
           {{"podAntiAffinity",
             {{"requiredDuringSchedulingIgnoredDuringExecution",
               {{{"labelSelector", {{"matchLabels", {{std::string(api::kLabelJobName), job}}}}},
                 {"topologyKey", "kubernetes.io/hostname"}}}}}}}}};
}

// Until `condition()` (the job's Scheduled condition) is False with `reason`.
bool WaitsWith(const std::function<json()>& condition, const std::string& reason) {
  return kube::testing::WaitFor(
      [&] {
        const json c = condition();
        return c.value("status", "") == "False" && c.value("reason", "") == reason;
      },
      seconds(30));
}

TEST_F(SchedulerTest, AntiAffinityPutsOneWorkerPerNode) {
  CreateTopology(1, 1, 3);  // 3 nodes x 8 GPUs: all 3 pods would fit on one
  StartScheduler();
  JobSpec spread{3, 1, {}, ""};
  spread.pod_spec_patch = OnePerNode("apart");
  CreateJob("apart", spread);
  ASSERT_TRUE(WaitAllBound("apart", 3, seconds(60)));
  EXPECT_EQ(Nodes(Placement("apart")).size(), 3u);

  JobSpec crowded{4, 1, {}, ""};  // 4 pods, one per node, on 3 nodes
  crowded.pod_spec_patch = OnePerNode("crowded");
  CreateJob("crowded", crowded);
  ASSERT_TRUE(WaitsWith([&] { return ScheduledCondition("crowded"); }, "PodAntiAffinity"))
      << ScheduledCondition("crowded");
  const std::string message = ScheduledCondition("crowded").value("message", "");
  EXPECT_NE(message.find("podAntiAffinity topologyKey kubernetes.io/hostname"), std::string::npos)
      << message;
  EXPECT_EQ(BoundCount("crowded"), 0);
}

TEST_F(SchedulerTest, SpreadConstraintBalancesBlocks) {
  CreateTopology(2, 1, 2);  // 2 blocks x 2 nodes
  StartScheduler();
  JobSpec spec{4, 1, {}, ""};  // would pack onto one node without the constraint
  spec.pod_spec_patch = {
      {"topologySpreadConstraints",
       {{{"maxSkew", 1},
         {"topologyKey", std::string(kBlockKey)},
         {"whenUnsatisfiable", "DoNotSchedule"},
         {"labelSelector", {{"matchLabels", {{std::string(api::kLabelJobName), "even"}}}}}},
        // A preference only: must not keep the gang from being placed.
        {{"maxSkew", 1},
         {"topologyKey", "kubernetes.io/hostname"},
         {"whenUnsatisfiable", "ScheduleAnyway"},
         {"labelSelector", {{"matchLabels", {{std::string(api::kLabelJobName), "even"}}}}}}}}};
  CreateJob("even", spec);
  ASSERT_TRUE(WaitAllBound("even", 4, seconds(60)));
  std::map<std::string, int> per_block;
  for (const auto& [pod, node] : Placement("even")) {
    ++per_block[NodeLabels(node).value(std::string(kBlockKey), "")];
  }
  EXPECT_EQ(per_block, (std::map<std::string, int>{{"block-0", 2}, {"block-1", 2}}));
}

TEST_F(SchedulerTest, HostPortCollisionWaitsUntilThePortIsFree) {
  const std::vector<std::string> nodes = CreateTopology(1, 1, 2);
  StartScheduler();
  CreateForeignPod("holder", nodes[0], 0, /*host_port=*/8080);
  JobSpec spec{2, 1, {}, ""};
  spec.host_port = 8080;  // the two pods need two nodes, and node 0's port is taken
  CreateJob("ported", spec);
  ASSERT_TRUE(WaitsWith([&] { return ScheduledCondition("ported"); }, "HostPortInUse"))
      << ScheduledCondition("ported");
  EXPECT_NE(ScheduledCondition("ported").value("message", "").find("hostPort 8080/TCP"),
            std::string::npos)
      << ScheduledCondition("ported");
  EXPECT_EQ(BoundCount("ported"), 0);
  kube::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client().Delete(kube::resources::Pods(), ns(), "holder", now).ok());
  ASSERT_TRUE(WaitAllBound("ported", 2, seconds(60)));
  EXPECT_EQ(Nodes(Placement("ported")).size(), 2u);
}

}  // namespace
}  // namespace lockstep::scheduler::testing
