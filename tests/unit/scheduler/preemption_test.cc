// ChooseVictims, table tests: who is evicted, who never is, and why nothing is.

#include "operator/scheduler/preemption.h"

#include <gtest/gtest.h>

#include "tests/unit/scheduler/preemption_builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;
using testing::Preemptor;
using testing::RunningCluster;
using Keys = std::vector<std::string>;

std::vector<NodeInfo> Nodes(int count, std::string block = "") {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < count; ++i)
    nodes.push_back(GpuNode(block + "n" + std::to_string(i), 8, block));
  return nodes;
}

TEST(ChooseVictims, FitsAlreadyEvictsNothing) {
  RunningCluster c(Nodes(2));
  c.RunGpus("ns/low", 1, 0, {"n0"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 8, 10), c.running());
  EXPECT_TRUE(plan.victims.empty());
  EXPECT_EQ(plan.message, "it fits without evicting anything");
}

TEST(ChooseVictims, PreemptionPolicyNeverEvictsNothing) {
  RunningCluster c(Nodes(1));
  c.RunGpus("ns/low", 1, 0, {"n0"}, 8);
  GangRequest preemptor = Preemptor(1, 8, 10);
  preemptor.preemption_policy = PreemptionPolicy::kNever;
  const PreemptionPlan plan = ChooseVictims(c.Build(), preemptor, c.running());
  EXPECT_TRUE(plan.victims.empty());
  EXPECT_NE(plan.message.find("Never"), std::string::npos);
}

TEST(ChooseVictims, EqualOrHigherPriorityIsNeverEvicted) {
  RunningCluster c(Nodes(2));
  c.RunGpus("ns/equal", 10, 0, {"n0"}, 8).RunGpus("ns/higher", 11, 0, {"n1"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 8, 10), c.running());
  EXPECT_TRUE(plan.victims.empty());
  EXPECT_EQ(plan.message, "no running gang has a lower priority than 10");
}

TEST(ChooseVictims, LowestPriorityFirst) {
  RunningCluster c(Nodes(3));
  c.RunGpus("ns/p5", 5, 0, {"n0"}, 8)
      .RunGpus("ns/p1", 1, 0, {"n1"}, 8)
      .RunGpus("ns/p3", 3, 0, {"n2"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 8, 10), c.running());
  EXPECT_EQ(c.VictimKeys(plan), Keys{"ns/p1"});
  ASSERT_TRUE(plan.placement.placed());
  EXPECT_EQ(plan.placement.assignments[0].node_name, "n1");
}

TEST(ChooseVictims, YoungestFirstOnEqualPriority) {
  RunningCluster c(Nodes(3));
  c.RunGpus("ns/old", 1, 100, {"n0"}, 8)
      .RunGpus("ns/young", 1, 300, {"n1"}, 8)
      .RunGpus("ns/mid", 1, 200, {"n2"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 8, 10), c.running());
  EXPECT_EQ(c.VictimKeys(plan), Keys{"ns/young"});
}

TEST(ChooseVictims, SeveralGangsWhenOneIsNotEnough) {
  RunningCluster c(Nodes(4));
  c.RunGpus("ns/a", 1, 0, {"n0", "n1"}, 8)
      .RunGpus("ns/b", 2, 0, {"n2"}, 8)
      .RunGpus("ns/c", 3, 0, {"n3"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(3, 8, 10), c.running());
  EXPECT_EQ(c.VictimKeys(plan), (Keys{"ns/a", "ns/b"}));
  EXPECT_TRUE(plan.placement.placed());
}

// The lowest-priority gang frees too little to matter: it is reprieved, not evicted for nothing.
TEST(ChooseVictims, UselessLowerVictimIsReprieved) {
  std::vector<NodeInfo> nodes = Nodes(2);
  AddBoundPod(nodes[0], testing::GpuPod(6).requests);  // another scheduler's pod
  RunningCluster c(std::move(nodes));
  c.RunGpus("ns/tiny", 1, 0, {"n0"}, 2).RunGpus("ns/big", 2, 0, {"n1"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 8, 10), c.running());
  EXPECT_EQ(c.VictimKeys(plan), Keys{"ns/big"});
}

// requiredTopologyKey: evicting the lowest gang frees a node in a block that cannot hold the
// gang anyway; the gang that empties a whole block is the answer, alone.
TEST(ChooseVictims, TopologyRulesDecide) {
  std::vector<NodeInfo> nodes = Nodes(2, "b0");
  for (NodeInfo& n : Nodes(2, "b1")) nodes.push_back(std::move(n));
  RunningCluster c(std::move(nodes));
  c.RunGpus("ns/lowest", 1, 0, {"b0n0"}, 8)
      .RunGpus("ns/high", 50, 0, {"b0n1"}, 8)
      .RunGpus("ns/mid", 2, 0, {"b1n0", "b1n1"}, 8);
  GangRequest preemptor = Preemptor(2, 8, 10);
  preemptor.required_topology_key = std::string(kBlockKey);
  const PreemptionPlan plan = ChooseVictims(c.Build(), preemptor, c.running());
  EXPECT_EQ(c.VictimKeys(plan), Keys{"ns/mid"});
  ASSERT_TRUE(plan.placement.placed());
  for (const PodAssignment& a : plan.placement.assignments)
    EXPECT_EQ(a.node_name.substr(0, 2), "b1");
}

TEST(ChooseVictims, NothingWhenEvictingEveryCandidateIsNotEnough) {
  RunningCluster c(Nodes(2));
  c.RunGpus("ns/low", 1, 0, {"n0"}, 8).RunGpus("ns/high", 20, 0, {"n1"}, 8);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(2, 8, 10), c.running());
  EXPECT_TRUE(plan.victims.empty());
  EXPECT_EQ(plan.message, "evicting all 1 lower-priority gangs would still not make it fit");
}

// A victim leaves whole: every pod of the gang, on every node, is released.
TEST(ChooseVictims, VictimIsTheWholeGang) {
  RunningCluster c(Nodes(3));
  c.RunGpus("ns/wide", 1, 0, {"n0", "n1", "n2"}, 4);
  c.RunGpus("ns/other", 1, 0, {"n0", "n1", "n2"}, 4);
  const PreemptionPlan plan = ChooseVictims(c.Build(), Preemptor(1, 4, 10), c.running());
  ASSERT_EQ(plan.victims.size(), 1u);
  const Snapshot after = WithoutGangs(c.Build(), c.running(), plan.victims);
  const ResourceId gpu = *after.FindResource(kGpu);
  for (NodeIndex n = 0; n < after.size(); ++n) EXPECT_EQ(after.Free(n, gpu), 4);
}

}  // namespace
}  // namespace lockstep::scheduler
