// AssumedPods: placed pods count until the pod list catches up, and a pod recreated under the
// same name (a restart) is not mistaken for the one that was placed.

#include "operator/scheduler/cycle/assumed_pods.h"

#include <gtest/gtest.h>

#include "tests/unit/scheduler/builders.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;
using testing::PodOf;

TEST(AssumedPodsTest, ARecreatedPodOfTheSameNameIsNotTheAssumedOne) {
  AssumedPods assumed(std::chrono::seconds(30));
  const PodPtr placed = PodOf("worker", 0, 0, 8);  // pending, uid pod-worker0-0
  const Resources gpus{{std::string(kGpu), 8}};
  assumed.Assume(placed->meta.Key(), placed->meta.uid, "n0", gpus);
  EXPECT_TRUE(assumed.Contains(placed->meta.Key(), placed->meta.uid));
  const auto now = std::chrono::steady_clock::now();
  assumed.Confirm(placed->meta.Key(), now);

  // The same name, another uid: the pod the scheduler placed was deleted and recreated.
  auto recreated = std::make_shared<kube::Pod>(*placed);
  recreated->meta.uid = "pod-worker0-new";
  EXPECT_FALSE(assumed.Contains(recreated->meta.Key(), recreated->meta.uid));

  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{recreated->meta.Key(), recreated}}, nodes, now);
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);  // not counted against n0
  EXPECT_EQ(assumed.size(), 0u);                     // and dropped at once, not after the TTL
}

TEST(AssumedPodsTest, CountedUntilThePodListShowsItBound) {
  AssumedPods assumed(std::chrono::seconds(30));
  const PodPtr pending = PodOf("worker", 0, 0, 8);
  const Resources gpus{{std::string(kGpu), 8}};
  assumed.Assume(pending->meta.Key(), pending->meta.uid, "n0", gpus);
  const auto now = std::chrono::steady_clock::now();
  assumed.Confirm(pending->meta.Key(), now);
  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{pending->meta.Key(), pending}}, nodes, now);
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 8);
  EXPECT_EQ(assumed.size(), 1u);
  const PodPtr bound = PodOf("worker", 0, 0, 8, "n0");
  nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{bound->meta.Key(), bound}}, nodes, now);
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);  // the pod list counts it now
  EXPECT_EQ(assumed.size(), 0u);
}

}  // namespace
}  // namespace lockstep::scheduler
