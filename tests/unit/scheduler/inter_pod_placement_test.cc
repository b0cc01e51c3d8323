// PlaceGang with inter-pod constraints: required pod affinity and anti-affinity (against bound
// pods, from bound pods, and among the gang's own pods), DoNotSchedule topology spread and host
// ports, each case from kube-scheduler's documented behaviour for pods bound one after another.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "operator/scheduler/placement.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;
using testing::GpuPod;
using ::testing::HasSubstr;

constexpr const char* kHostname = "kubernetes.io/hostname";
constexpr const char* kZone = "topology.kubernetes.io/zone";

// `count` nodes named <zone>-<i> with `gpus` GPUs, hostname and zone labels.
void AddZone(std::vector<NodeInfo>& nodes, const std::string& zone, int count, int64_t gpus) {
  for (int i = 0; i < count; ++i) {
    nodes.push_back(GpuNode(zone + "-" + std::to_string(i), gpus));
    nodes.back().labels[kHostname] = nodes.back().name;
    nodes.back().labels[kZone] = zone;
  }
}

PodRequest Worker(int64_t gpus, const std::string& job = "train") {
  PodRequest pod = GpuPod(gpus);
  pod.namespace_ = "ns";
  pod.labels = {{"job", job}};
  return pod;
}

PodAffinityTerm Selecting(Labels match, const std::string& topology) {
  return PodAffinityTerm{LabelSelector{std::move(match), {}}, {}, false, topology};
}

GangRequest GangOf(std::vector<PodRequest> pods) {
  GangRequest gang;
  gang.job_key = "ns/train";
  // Per-replica labels, as the operator sets them: never part of a pod's shape.
  for (size_t i = 0; i < pods.size(); ++i) pods[i].labels["replica"] = std::to_string(i);
  gang.roles.push_back(Role{"worker", std::move(pods)});
  return gang;
}

GangRequest Replicas(const PodRequest& pod, int n) {
  return GangOf(std::vector<PodRequest>(static_cast<size_t>(n), pod));
}

std::map<std::string, int> PerLabel(const Snapshot& snap, const Placement& p,
                                    const std::string& key) {
  std::map<std::string, int> out;
  for (const PodAssignment& a : p.assignments) ++out[snap.node(a.node).labels.at(key)];
  return out;
}

BoundPod Bound(Labels labels, std::string ns = "ns") {
  BoundPod pod;
  pod.namespace_ = std::move(ns);
  pod.labels = std::move(labels);
  return pod;
}

// ---- anti-affinity

TEST(InterPodPlacementTest, SelfAntiAffinityOnHostnamePutsOnePodPerNode) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 4, 8);
  const Snapshot snap = Snapshot::Build(nodes);
  PodRequest pod = Worker(1);  // 8 would fit on one node without the constraint
  pod.constraints.anti_affinity.push_back(Selecting({{"job", "train"}}, kHostname));
  const Placement p = PlaceGang(snap, Replicas(pod, 4));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kHostname).size(), 4u);
}

TEST(InterPodPlacementTest, SelfAntiAffinityWaitsWhenNodesAreTooFew) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 3, 8);
  const Snapshot snap = Snapshot::Build(nodes);
  PodRequest pod = Worker(1);
  pod.constraints.anti_affinity.push_back(Selecting({{"job", "train"}}, kHostname));
  const Placement p = PlaceGang(snap, Replicas(pod, 4));
  ASSERT_FALSE(p.placed());
  EXPECT_EQ(p.failure, PlacementFailure::kPodAntiAffinity);
  EXPECT_EQ(PlacementFailureReason(p.failure), "PodAntiAffinity");
  EXPECT_EQ(p.message,
            "worker pod 3 fits no node after 3 of the gang's 4 pods (podAntiAffinity topologyKey "
            "kubernetes.io/hostname): 3 nodes excluded: 3 pod anti-affinity");
}

TEST(InterPodPlacementTest, AntiAffinityOnZoneAllowsOnePodPerZone) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 2, 8);
  AddZone(nodes, "c", 2, 8);
  PodRequest pod = Worker(1);
  pod.constraints.anti_affinity.push_back(Selecting({{"job", "train"}}, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement three = PlaceGang(snap, Replicas(pod, 3));
  ASSERT_TRUE(three.placed()) << three.message;
  EXPECT_EQ(PerLabel(snap, three, kZone),
            (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}}));
  EXPECT_EQ(PlaceGang(snap, Replicas(pod, 4)).failure, PlacementFailure::kPodAntiAffinity);
}

TEST(InterPodPlacementTest, AntiAffinityAvoidsBoundPodsItSelects) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 3, 8);
  nodes[0].pods.push_back(Bound({{"app", "db"}}));
  nodes[1].pods.push_back(Bound({{"app", "db"}}, "other"));  // another namespace: not selected
  PodRequest pod = Worker(8);
  pod.constraints.anti_affinity.push_back(Selecting({{"app", "db"}}, kHostname));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 2));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kHostname), (std::map<std::string, int>{{"a-1", 1}, {"a-2", 1}}));

  // namespaceSelector {}: every namespace, so a-1 is out too.
  pod.constraints.anti_affinity[0].all_namespaces = true;
  const Placement all = PlaceGang(snap, Replicas(pod, 2));
  EXPECT_EQ(all.failure, PlacementFailure::kPodAntiAffinity) << all.message;
}

TEST(InterPodPlacementTest, BoundPodsAntiAffinityKeepsSelectedPodsAway) {
  // Symmetry: a running pod whose anti-affinity selects the gang's pods keeps them off its
  // domain even though the gang says nothing itself.
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 2, 8);
  BoundPod loner = Bound({{"app", "loner"}});
  loner.anti_affinity.push_back(Selecting({{"job", "train"}}, kZone));
  nodes[0].pods.push_back(loner);
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(Worker(8), 2));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kZone), (std::map<std::string, int>{{"b", 2}}));
  // A gang the term does not select may use zone a.
  const Placement other = PlaceGang(snap, Replicas(Worker(8, "eval"), 4));
  EXPECT_TRUE(other.placed()) << other.message;
  const Placement three = PlaceGang(snap, Replicas(Worker(8), 3));
  EXPECT_EQ(three.failure, PlacementFailure::kPodAntiAffinity);
  EXPECT_THAT(three.message, HasSubstr("a running pod's podAntiAffinity"));
}

TEST(InterPodPlacementTest, NodesWithoutTheTopologyKeyIgnoreAntiAffinity) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 1, 8);
  nodes.push_back(GpuNode("bare", 8));  // no zone label
  nodes[0].pods.push_back(Bound({{"app", "db"}}));
  nodes[1].pods.push_back(Bound({{"app", "db"}}));
  PodRequest pod = Worker(8);
  pod.constraints.anti_affinity.push_back(Selecting({{"app", "db"}}, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 1));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(p.assignments[0].node_name, "bare");
}

// ---- affinity

TEST(InterPodPlacementTest, AffinityFollowsBoundPodsItSelects) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 2, 8);
  nodes[3].pods.push_back(Bound({{"app", "cache"}}));  // b-1
  PodRequest pod = Worker(8);
  pod.constraints.affinity.push_back(Selecting({{"app", "cache"}}, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 2));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kZone), (std::map<std::string, int>{{"b", 2}}));
  EXPECT_EQ(PlaceGang(snap, Replicas(pod, 3)).failure, PlacementFailure::kPodAffinity);
}

TEST(InterPodPlacementTest, AffinityToNothingWaits) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  PodRequest pod = Worker(1);
  pod.constraints.affinity.push_back(Selecting({{"app", "cache"}}, kZone));
  const Placement p = PlaceGang(Snapshot::Build(nodes), Replicas(pod, 1));
  EXPECT_EQ(p.failure, PlacementFailure::kPodAffinity);
  EXPECT_THAT(p.message, HasSubstr("podAffinity topologyKey topology.kubernetes.io/zone"));
}

TEST(InterPodPlacementTest, SelfAffinityPutsTheGangInOneDomain) {
  // The first-pod rule: no pod matches yet, the pod matches its own term, so the first lands
  // anywhere and the rest must join its zone.
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 3, 8);
  PodRequest pod = Worker(8);
  pod.constraints.affinity.push_back(Selecting({{"job", "train"}}, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 3));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kZone), (std::map<std::string, int>{{"b", 3}}));
  const Placement four = PlaceGang(snap, Replicas(pod, 4));
  EXPECT_EQ(four.failure, PlacementFailure::kPodAffinity);
  EXPECT_THAT(four.message, HasSubstr("in one domain of topology.kubernetes.io/zone"));
}

TEST(InterPodPlacementTest, AffinityWithRequiredTopologyKeyAndAntiAffinity) {
  // requiredTopologyKey (one block) and one pod per node: both hold at once.
  std::vector<NodeInfo> nodes = testing::Cluster(2, 1, 2, 8);
  for (NodeInfo& n : nodes) n.labels[kHostname] = n.name;
  PodRequest pod = Worker(1);
  pod.constraints.anti_affinity.push_back(Selecting({{"job", "train"}}, kHostname));
  GangRequest gang = Replicas(pod, 2);
  gang.required_topology_key = std::string(kBlockKey);
  gang.topology_keys = {std::string(kBlockKey)};
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, std::string(kBlockKey)).size(), 1u);
  EXPECT_EQ(PerLabel(snap, p, kHostname).size(), 2u);
  gang = Replicas(pod, 3);
  gang.required_topology_key = std::string(kBlockKey);
  EXPECT_FALSE(PlaceGang(snap, gang).placed());
}

// ---- topology spread (DoNotSchedule)

SpreadConstraint Spread(int32_t max_skew, const std::string& key, int32_t min_domains = 1) {
  return SpreadConstraint{max_skew, key, LabelSelector{{{"job", "train"}}, {}}, min_domains};
}

TEST(InterPodPlacementTest, SpreadBalancesZones) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 2, 8);
  PodRequest pod = Worker(1);  // all four would fit on one node without the constraint
  pod.constraints.spread.push_back(Spread(1, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 4));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kZone), (std::map<std::string, int>{{"a", 2}, {"b", 2}}));
}

TEST(InterPodPlacementTest, SpreadCountsBoundPods) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 1, 8);
  AddZone(nodes, "b", 1, 8);
  nodes[0].pods.push_back(Bound({{"job", "train"}}));
  nodes[0].pods.push_back(Bound({{"job", "train"}}));
  PodRequest pod = Worker(1);
  pod.constraints.spread.push_back(Spread(1, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 2));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kZone), (std::map<std::string, int>{{"b", 2}}));
}

TEST(InterPodPlacementTest, AFullZoneHoldsTheSkew) {
  // Zone b fits one pod: after 1/1 and 2/1, a third pod in a would skew 2.
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  AddZone(nodes, "b", 1, 1);
  PodRequest pod = Worker(1);
  pod.constraints.spread.push_back(Spread(1, kZone));
  const Snapshot snap = Snapshot::Build(nodes);
  EXPECT_TRUE(PlaceGang(snap, Replicas(pod, 3)).placed());
  const Placement p = PlaceGang(snap, Replicas(pod, 4));
  ASSERT_FALSE(p.placed());
  EXPECT_EQ(p.failure, PlacementFailure::kTopologySpread);
  EXPECT_EQ(PlacementFailureReason(p.failure), "TopologySpread");
  EXPECT_EQ(p.message,
            "worker pod 3 fits no node after 3 of the gang's 4 pods (topologySpreadConstraints "
            "maxSkew 1 on topology.kubernetes.io/zone): 3 nodes excluded: 1 insufficient "
            "resources, 2 topology spread maxSkew");
}

TEST(InterPodPlacementTest, SpreadMinDomainsCountsMissingDomainsAsZero) {
  // minDomains 3 with two zones: the global minimum is 0, so each zone takes maxSkew pods.
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 1, 8);
  AddZone(nodes, "b", 1, 8);
  PodRequest pod = Worker(1);
  pod.constraints.spread.push_back(Spread(1, kZone, 3));
  const Snapshot snap = Snapshot::Build(nodes);
  EXPECT_TRUE(PlaceGang(snap, Replicas(pod, 2)).placed());
  EXPECT_EQ(PlaceGang(snap, Replicas(pod, 3)).failure, PlacementFailure::kTopologySpread);
}

TEST(InterPodPlacementTest, SpreadSkipsNodesWithoutTheKey) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 1, 8);
  nodes.push_back(GpuNode("bare", 8));
  PodRequest pod = Worker(8);
  pod.constraints.spread.push_back(Spread(5, kZone));
  const Placement p = PlaceGang(Snapshot::Build(nodes), Replicas(pod, 2));
  EXPECT_EQ(p.failure, PlacementFailure::kTopologySpread) << p.message;
}

// ---- host ports

TEST(InterPodPlacementTest, HostPortOncePerNode) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 3, 8);
  nodes[0].pods.push_back(BoundPod{"other", {}, {{8080, "TCP", ""}}, {}});
  PodRequest pod = Worker(1);
  pod.constraints.host_ports.push_back({8080, "TCP", ""});
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(pod, 2));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kHostname), (std::map<std::string, int>{{"a-1", 1}, {"a-2", 1}}));
  const Placement three = PlaceGang(snap, Replicas(pod, 3));
  ASSERT_FALSE(three.placed());
  EXPECT_EQ(three.failure, PlacementFailure::kHostPort);
  EXPECT_EQ(PlacementFailureReason(three.failure), "HostPortInUse");
  EXPECT_EQ(three.message,
            "worker pod 2 fits no node after 2 of the gang's 3 pods (hostPort 8080/TCP): "
            "3 nodes excluded: 3 host port in use");
  // Another protocol on the same port does not collide.
  pod.constraints.host_ports[0].protocol = "UDP";
  EXPECT_TRUE(PlaceGang(snap, Replicas(pod, 3)).placed());
}

TEST(InterPodPlacementTest, AssumedGangsHoldTheirPortsForTheNext) {
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  Snapshot snap = Snapshot::Build(nodes);
  PodRequest pod = Worker(1);
  pod.constraints.host_ports.push_back({9000, "TCP", ""});
  const GangRequest first = Replicas(pod, 2);
  const Placement p = PlaceGang(snap, first);
  ASSERT_TRUE(p.placed()) << p.message;
  AssumePlacement(snap, first, p);
  EXPECT_EQ(PlaceGang(snap, Replicas(pod, 1)).failure, PlacementFailure::kHostPort);
}

TEST(InterPodPlacementTest, GangsWithoutConstraintsPackAsBefore) {
  // The per-replica labels do not split shapes, and no constraint means the packing path.
  std::vector<NodeInfo> nodes;
  AddZone(nodes, "a", 2, 8);
  const Snapshot snap = Snapshot::Build(nodes);
  const Placement p = PlaceGang(snap, Replicas(Worker(1), 8));
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(PerLabel(snap, p, kHostname).size(), 1u);
}

}  // namespace
}  // namespace lockstep::scheduler
