// FeasibleReplicas: the largest elastic gang that fits now, under the real placement rules.

#include "operator/scheduler/capacity.h"

#include <gtest/gtest.h>

#include "operator/scheduler/placement.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::Cluster;
using testing::Gang;
using testing::GpuNode;
using testing::GpuPod;

// `free` idle 8-GPU nodes and `busy` fully used ones, in one rack.
Snapshot Nodes(int free, int busy = 0) {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < free; ++i) nodes.push_back(GpuNode("free-" + std::to_string(i), 8));
  for (int i = 0; i < busy; ++i) {
    nodes.push_back(GpuNode("busy-" + std::to_string(i), 8, "", "", 8));
  }
  return Snapshot::Build(std::move(nodes));
}

TEST(FeasibleReplicasTest, LargestThatFitsBetweenMinAndMax) {
  // Room for 6 one-node workers; the job wants 8, accepts 4.
  EXPECT_EQ(FeasibleReplicas(Nodes(6, 2), Gang("ns/j", 1, 8), 0, 4, 8), 6);
}

TEST(FeasibleReplicasTest, MaxWhenEverythingFits) {
  EXPECT_EQ(FeasibleReplicas(Nodes(10), Gang("ns/j", 1, 8), 0, 4, 8), 8);
}

TEST(FeasibleReplicasTest, ZeroWhenNotEvenMinFits) {
  EXPECT_EQ(FeasibleReplicas(Nodes(3, 5), Gang("ns/j", 1, 8), 0, 4, 8), 0);
  EXPECT_EQ(FeasibleReplicas(Nodes(0), Gang("ns/j", 1, 8), 0, 1, 8), 0);
}

TEST(FeasibleReplicasTest, EveryCountInRangeAgreesWithPlaceGang) {
  // Half-GPU pieces: 4-GPU workers, 2 per node; min 1 is floored at one worker.
  for (int free = 0; free <= 6; ++free) {
    const Snapshot snap = Nodes(free, 1);
    const int32_t got = FeasibleReplicas(snap, Gang("ns/j", 1, 4), 0, 0, 9);
    EXPECT_EQ(got, std::min(2 * free, 9)) << free << " free nodes";
    if (got > 0) {
      EXPECT_TRUE(PlaceGang(snap, Gang("ns/j", got, 4)).placed());
    }
    if (got < 9) {
      EXPECT_FALSE(PlaceGang(snap, Gang("ns/j", got + 1, 4)).placed());
    }
  }
}

TEST(FeasibleReplicasTest, ExcludedNodesDoNotCount) {
  GangRequest gang = Gang("ns/j", 1, 8);
  gang.excluded_nodes = {"free-0", "free-3"};
  EXPECT_EQ(FeasibleReplicas(Nodes(8), gang, 0, 4, 8), 6);
}

TEST(FeasibleReplicasTest, RequiredTopologyBoundsTheSize) {
  // Two blocks of 2 racks x 2 nodes: 4 nodes per block, 8 in all; the gang must stay in one.
  GangRequest gang = Gang("ns/j", 1, 8);
  gang.required_topology_key = std::string(kBlockKey);
  const Snapshot snap = Snapshot::Build(Cluster(2, 2, 2, 8));
  EXPECT_EQ(FeasibleReplicas(snap, gang, 0, 2, 8), 4);
  EXPECT_EQ(FeasibleReplicas(snap, gang, 0, 5, 8), 0);
}

TEST(FeasibleReplicasTest, OtherRolesTakeTheirShareFirst) {
  // A chief of 8 GPUs beside the workers: 6 nodes hold the chief and 5 workers.
  GangRequest gang = Gang("ns/j", 1, 8);
  gang.roles.push_back(Role{"chief", {GpuPod(8)}});
  EXPECT_EQ(FeasibleReplicas(Nodes(6), gang, 0, 2, 8), 5);
  // The worker role need not come first.
  std::swap(gang.roles[0], gang.roles[1]);
  EXPECT_EQ(FeasibleReplicas(Nodes(6), gang, 1, 2, 8), 5);
}

TEST(FeasibleReplicasTest, UnusableRequestsGiveZero) {
  GangRequest no_workers = Gang("ns/j", 0, 8);
  EXPECT_EQ(FeasibleReplicas(Nodes(4), no_workers, 0, 1, 4), 0);
  EXPECT_EQ(FeasibleReplicas(Nodes(4), Gang("ns/j", 1, 8), 3, 1, 4), 0);
  EXPECT_EQ(FeasibleReplicas(Nodes(4), Gang("ns/j", 1, 8), 0, 5, 4), 0);  // min > max
}

TEST(SnapshotReleaseTest, ReleaseUndoesAssumeAndNeverGoesNegative) {
  Snapshot snap = Snapshot::Build({GpuNode("a", 8, "", "", 6)});
  const ResourceId gpu = *snap.FindResource(kGpu);
  const ResourceId pods = *snap.FindResource(kPods);
  EXPECT_EQ(snap.Free(0, gpu), 2);
  const Resources pod{{std::string(kGpu), 6}, {"cpu", 1000}};
  snap.Release(0, pod);
  EXPECT_EQ(snap.Free(0, gpu), 8);
  EXPECT_EQ(snap.RequestedAmount(0, pods), 0);
  snap.Release(0, pod);  // twice: clamped, not negative
  EXPECT_EQ(snap.Free(0, gpu), 8);
  snap.Assume(0, pod);
  EXPECT_EQ(snap.Free(0, gpu), 2);
  EXPECT_EQ(snap.RequestedAmount(0, pods), 1);
}

}  // namespace
}  // namespace lockstep::scheduler
