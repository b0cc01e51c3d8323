#include "operator/scheduler/placement.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::Cluster;
using testing::Gang;
using testing::GpuNode;
using testing::GpuPod;
using ::testing::HasSubstr;

std::map<std::string, int> PodsPerNode(const Placement& p) {
  std::map<std::string, int> out;
  for (const PodAssignment& a : p.assignments) ++out[a.node_name];
  return out;
}

std::set<std::string> LabelValues(const Snapshot& snap, const Placement& p, std::string_view key) {
  std::set<std::string> out;
  for (const PodAssignment& a : p.assignments)
    out.insert(snap.node(a.node).labels.at(std::string(key)));
  return out;
}

TEST(PlaceGangTest, ExactFitUsesEveryNode) {
  const Snapshot snap = Snapshot::Build(Cluster(1, 1, 4, 8));
  const Placement p = PlaceGang(snap, Gang("ns/a", 4, 8));
  ASSERT_TRUE(p.placed()) << p.message;
  ASSERT_EQ(p.assignments.size(), 4u);
  EXPECT_EQ(PodsPerNode(p).size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(p.assignments[i].replica, i);
}

TEST(PlaceGangTest, ShortfallNamesMissingCapacityAndExcludedNodes) {
  std::vector<NodeInfo> nodes = Cluster(1, 1, 4, 8);
  nodes.push_back(GpuNode("down", 8));
  nodes.back().ready = false;
  nodes.push_back(GpuNode("cordoned", 8));
  nodes.back().unschedulable = true;
  nodes.push_back(GpuNode("tainted", 8));
  nodes.back().taints.push_back({"dedicated", "infra", TaintEffect::kNoSchedule});
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Gang("ns/a", 5, 8));
  EXPECT_FALSE(p.placed());
  EXPECT_TRUE(p.assignments.empty());
  EXPECT_EQ(p.failure, PlacementFailure::kInsufficientResources);
  EXPECT_EQ(p.message,
            "needs 40 nvidia.com/gpu; 32 free on schedulable nodes (3 nodes excluded: "
            "1 NotReady, 1 cordoned, 1 taint not tolerated)");
  EXPECT_EQ(PlacementFailureReason(p.failure), "InsufficientResources");
}

TEST(PlaceGangTest, RequiredTopologyMessageNamesLargestDomain) {
  const Snapshot snap =
      Snapshot::Build({GpuNode("a1", 8, "b0", "r0"), GpuNode("a2", 8, "b0", "r0", 4),
                       GpuNode("c1", 8, "b1", "r1")});
  GangRequest gang = Gang("ns/a", 2, 8);
  gang.required_topology_key = std::string(kBlockKey);
  const Placement p = PlaceGang(snap, gang);
  EXPECT_EQ(p.failure, PlacementFailure::kTopology);
  EXPECT_EQ(p.message,
            "needs 16 nvidia.com/gpu within one topology.lockstep.dev/block; largest free block "
            "has 12");
  gang.required_topology_key.clear();
  EXPECT_TRUE(PlaceGang(snap, gang).placed()) << "fits across blocks without the constraint";
}

TEST(PlaceGangTest, RequiredTopologyMessageWhenPiecesAreTooSmall) {
  // Block b0 has 12 free GPUs, but in 4-GPU pieces: enough in total, not for an 8-GPU pod.
  const Snapshot snap =
      Snapshot::Build({GpuNode("a1", 8, "b0", "r0", 4), GpuNode("a2", 8, "b0", "r0", 4),
                       GpuNode("a3", 8, "b0", "r0", 4), GpuNode("c1", 8, "b1", "r1")});
  GangRequest gang = Gang("ns/a", 1, 8);
  gang.roles[0].pods.push_back(GpuPod(4));
  gang.required_topology_key = std::string(kBlockKey);
  const Placement p = PlaceGang(snap, gang);
  EXPECT_EQ(p.failure, PlacementFailure::kTopology);
  EXPECT_EQ(p.message,
            "needs 12 nvidia.com/gpu within one topology.lockstep.dev/block; no block can hold all "
            "2 pods (at most 1 in one block)");
}

TEST(PlaceGangTest, RequiredTopologyLandsInOneDomain) {
  const Snapshot snap = Snapshot::Build(Cluster(2, 2, 4, 8));
  GangRequest gang = Gang("ns/a", 6, 8);
  gang.required_topology_key = std::string(kBlockKey);
  gang.topology_keys = {std::string(kBlockKey), std::string(kRackKey)};
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(LabelValues(snap, p, kBlockKey).size(), 1u);
  EXPECT_EQ(LabelValues(snap, p, kRackKey).size(), 2u) << "6 pods need two 4-node racks";
}

TEST(PlaceGangTest, RequiredTopologySkipsUnlabeledNodes) {
  const Snapshot snap = Snapshot::Build({GpuNode("x", 8), GpuNode("y", 8), GpuNode("z", 8, "b0")});
  GangRequest gang = Gang("ns/a", 2, 8);
  gang.required_topology_key = std::string(kBlockKey);
  EXPECT_EQ(PlaceGang(snap, gang).failure, PlacementFailure::kTopology);
}

// 2 blocks x 2 racks x 4 nodes; b1-r1 has two full nodes, so b1 is the tighter block and b1-r0
// the only rack in it with room for four 8-GPU pods.
TEST(PlaceGangTest, PacksIntoOneRackOfTheBestFittingBlock) {
  std::vector<NodeInfo> nodes = Cluster(2, 2, 4, 8);
  for (NodeInfo& n : nodes) {
    if (n.name == "b1-r1-n0" || n.name == "b1-r1-n1")
      AddBoundPod(n, Resources{{std::string(kGpu), 8}});
  }
  const Snapshot snap = Snapshot::Build(nodes);
  GangRequest gang = Gang("ns/a", 4, 8);
  gang.topology_keys = {std::string(kBlockKey), std::string(kRackKey)};
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(LabelValues(snap, p, kRackKey), std::set<std::string>{"b1-r0"});
}

TEST(PlaceGangTest, SpillsIntoFewestRacksWithBestFitRemainder) {
  std::vector<NodeInfo> nodes = {GpuNode("r0-a", 8, "b0", "r0"), GpuNode("r0-b", 8, "b0", "r0"),
                                 GpuNode("r0-c", 8, "b0", "r0"), GpuNode("r1-a", 8, "b0", "r1"),
                                 GpuNode("r1-b", 8, "b0", "r1"), GpuNode("r1-c", 8, "b0", "r1"),
                                 GpuNode("r2-a", 8, "b0", "r2")};
  const Snapshot snap = Snapshot::Build(nodes);
  GangRequest gang = Gang("ns/a", 4, 8);
  gang.topology_keys = {std::string(kRackKey)};
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(LabelValues(snap, p, kRackKey), (std::set<std::string>{"r0", "r2"}));
}

TEST(PlaceGangTest, ReplicaIndexesFollowTopologyOrder) {
  std::vector<NodeInfo> nodes;
  // Names deliberately out of topology order.
  nodes.push_back(GpuNode("a", 8, "b1", "b1-r0"));
  nodes.push_back(GpuNode("b", 8, "b0", "b0-r1"));
  nodes.push_back(GpuNode("c", 8, "b0", "b0-r0"));
  nodes.push_back(GpuNode("d", 8, "b0", "b0-r1"));
  const Snapshot snap = Snapshot::Build(nodes);
  GangRequest gang = Gang("ns/a", 4, 8);
  gang.topology_keys = {std::string(kBlockKey), std::string(kRackKey)};
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  std::vector<std::string> order;
  for (const PodAssignment& a : p.assignments) order.push_back(a.node_name);
  EXPECT_EQ(order, (std::vector<std::string>{"c", "b", "d", "a"}));
}

TEST(PlaceGangTest, BadNodesGetNothing) {
  std::vector<NodeInfo> nodes = Cluster(1, 1, 3, 8);
  nodes.push_back(GpuNode("down", 8));
  nodes.back().ready = false;
  nodes.push_back(GpuNode("cordoned", 8));
  nodes.back().unschedulable = true;
  nodes.push_back(GpuNode("tainted", 8));
  nodes.back().taints.push_back({"gpu-broken", "", TaintEffect::kNoExecute});
  nodes.push_back(GpuNode("soft", 8));
  nodes.back().taints.push_back({"prefer-not", "", TaintEffect::kPreferNoSchedule});
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Gang("ns/a", 16, 2));
  ASSERT_TRUE(p.placed()) << p.message;
  const auto per_node = PodsPerNode(p);
  EXPECT_EQ(per_node.count("down") + per_node.count("cordoned") + per_node.count("tainted"), 0u);
  EXPECT_EQ(per_node.at("soft"), 4) << "PreferNoSchedule is not a hard constraint";
}

TEST(PlaceGangTest, PodsOfOtherSchedulersCountAgainstCapacity) {
  NodeInfo busy = GpuNode("busy", 8);
  AddBoundPod(busy, Resources{{std::string(kGpu), 6}});  // e.g. bound by kube-scheduler
  const Snapshot snap = Snapshot::Build({busy, GpuNode("idle", 8)});
  const Placement p = PlaceGang(snap, Gang("ns/a", 2, 4));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PodsPerNode(p), (std::map<std::string, int>{{"idle", 2}}));
  EXPECT_FALSE(PlaceGang(snap, Gang("ns/a", 3, 4)).placed());
}

TEST(PlaceGangTest, BestFitTakesTheTightestNode) {
  const Snapshot snap = Snapshot::Build(
      {GpuNode("eight", 8), GpuNode("four", 8, "", "", 4), GpuNode("two", 8, "", "", 6)});
  const Placement p = PlaceGang(snap, Gang("ns/a", 1, 2));
  ASSERT_TRUE(p.placed());
  EXPECT_EQ(p.assignments[0].node_name, "two");
  const Placement q = PlaceGang(snap, Gang("ns/a", 2, 2));
  ASSERT_TRUE(q.placed());
  EXPECT_EQ(PodsPerNode(q), (std::map<std::string, int>{{"four", 2}}))
      << "two pods fill 'four' exactly; 'two' would leave a pod for another node";
}

TEST(PlaceGangTest, ExcludedNodesAreSkippedAndCounted) {
  const Snapshot snap = Snapshot::Build(Cluster(1, 1, 2, 8));
  GangRequest gang = Gang("ns/a", 2, 8);
  gang.excluded_nodes = {"b0-r0-n1", "no-such-node"};
  const Placement p = PlaceGang(snap, gang);
  EXPECT_EQ(p.message,
            "needs 16 nvidia.com/gpu; 8 free on schedulable nodes (1 node excluded: 1 excluded "
            "after failure)");
  gang.roles[0].pods.pop_back();
  const Placement one = PlaceGang(snap, gang);
  ASSERT_TRUE(one.placed());
  EXPECT_EQ(one.assignments[0].node_name, "b0-r0-n0");
}

TEST(PlaceGangTest, AllRolesTogetherOrNothing) {
  // Two nodes with 8 GPUs and 64 cpu; workers take 8 GPUs + 1 cpu, parameter servers only cpu.
  const Snapshot snap = Snapshot::Build(Cluster(1, 1, 2, 8));
  GangRequest gang = Gang("ns/a", 2, 8);
  PodRequest ps;
  ps.requests = Resources{{"cpu", 63000}};
  gang.roles.push_back(Role{"ps", {ps, ps}});
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  ASSERT_EQ(p.assignments.size(), 4u);
  EXPECT_EQ(p.assignments[2].role, 1u);
  EXPECT_EQ(p.assignments[3].replica, 1u);
  EXPECT_EQ(PodsPerNode(p), (std::map<std::string, int>{{"b0-r0-n0", 2}, {"b0-r0-n1", 2}}));

  gang.roles[1].pods[1].requests.Set("cpu", 64000);  // one cpu too many next to a worker
  const Placement none = PlaceGang(snap, gang);
  EXPECT_FALSE(none.placed());
  EXPECT_TRUE(none.assignments.empty()) << "the workers alone would fit; no partial gang";
  EXPECT_EQ(none.failure, PlacementFailure::kInsufficientResources);
  EXPECT_THAT(none.message, HasSubstr("needs 129 cpu; 128 free"));
}

TEST(PlaceGangTest, MissingResourceIsNamed) {
  GangRequest gang = Gang("ns/a", 1, 0);
  gang.roles[0].pods[0].requests.Set("example.com/fpga", 2);
  const Placement p = PlaceGang(Snapshot::Build(Cluster(1, 1, 2, 8)), gang);
  EXPECT_EQ(p.failure, PlacementFailure::kInsufficientResources);
  EXPECT_EQ(p.message, "needs 2 example.com/fpga per pod; no node has example.com/fpga");
}

TEST(PlaceGangTest, FragmentedCapacityIsExplained) {
  const Snapshot snap = Snapshot::Build({GpuNode("a", 8, "", "", 4), GpuNode("b", 8, "", "", 4),
                                         GpuNode("c", 8, "", "", 4), GpuNode("d", 8, "", "", 4)});
  const Placement p = PlaceGang(snap, Gang("ns/a", 2, 8));
  EXPECT_EQ(p.failure, PlacementFailure::kFragmented);
  EXPECT_EQ(p.message,
            "needs 2 pods of 8 nvidia.com/gpu; 16 nvidia.com/gpu free on schedulable nodes but "
            "only 0 of the pods fit (free capacity is fragmented)");
}

TEST(PlaceGangTest, NoSchedulableNode) {
  std::vector<NodeInfo> nodes = Cluster(1, 1, 2, 8);
  for (NodeInfo& n : nodes) n.ready = false;
  const Placement p = PlaceGang(Snapshot::Build(nodes), Gang("ns/a", 1, 1));
  EXPECT_EQ(p.failure, PlacementFailure::kNoFeasibleNodes);
  EXPECT_EQ(p.message, "no schedulable node (2 nodes excluded: 2 NotReady)");
}

TEST(PlaceGangTest, EmptyAndInvalidGangs) {
  const Snapshot snap = Snapshot::Build(Cluster(1, 1, 1, 8));
  GangRequest empty;
  EXPECT_TRUE(PlaceGang(snap, empty).placed());
  GangRequest negative = Gang("ns/a", 1, 1);
  negative.roles[0].pods[0].requests.Set("cpu", -5);
  EXPECT_EQ(PlaceGang(snap, negative).failure, PlacementFailure::kInvalidRequest);
}

TEST(PlaceGangTest, PodCapacityLimitsPlacement) {
  NodeInfo node = GpuNode("small", 8);
  node.allocatable.Set("pods", 3);
  AddBoundPod(node, Resources{});
  const Snapshot snap = Snapshot::Build({node});
  EXPECT_TRUE(PlaceGang(snap, Gang("ns/a", 2, 0)).placed());
  EXPECT_FALSE(PlaceGang(snap, Gang("ns/a", 3, 0)).placed());
}

TEST(AssumePlacementTest, LaterGangsSeeEarlierPlacements) {
  Snapshot snap = Snapshot::Build(Cluster(1, 1, 4, 8));
  const GangRequest first = Gang("ns/a", 3, 8);
  const Placement p = PlaceGang(snap, first);
  ASSERT_TRUE(p.placed());
  AssumePlacement(snap, first, p);
  const GangRequest second = Gang("ns/b", 2, 8);
  EXPECT_FALSE(PlaceGang(snap, second).placed());
  const Placement q = PlaceGang(snap, Gang("ns/c", 1, 8));
  ASSERT_TRUE(q.placed());
  EXPECT_EQ(PodsPerNode(p).count(q.assignments[0].node_name), 0u);
}

TEST(ReservationModeTest, PlacesOnAllocatablePreferringNodesFreeNow) {
  const Snapshot snap =
      Snapshot::Build({GpuNode("full", 8, "", "", 8), GpuNode("half", 8, "", "", 4),
                       GpuNode("free", 8), GpuNode("quarter", 8, "", "", 6)});
  const GangRequest gang = Gang("ns/a", 2, 8);
  EXPECT_FALSE(PlaceGang(snap, gang).placed());
  const Placement p = PlaceGang(snap, gang, {CapacityMode::kAllocatable});
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PodsPerNode(p), (std::map<std::string, int>{{"free", 1}, {"half", 1}}));
}

}  // namespace
}  // namespace lockstep::scheduler
