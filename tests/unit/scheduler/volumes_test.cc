// Volumes with kube-scheduler's VolumeBinding semantics (volumes.h): claims resolved against a
// catalog of claims, PVs and classes (table), fitted to nodes (table), and whole gangs placed by
// PlaceGang (local PVs chosen per node and once each, provisioning within allowedTopologies,
// claims shared by pods, waits and their messages).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "operator/scheduler/placement.h"
#include "operator/scheduler/volumes.h"
#include "tests/unit/scheduler/builders.h"

namespace lockstep::scheduler {
namespace {

using testing::GpuNode;
using testing::GpuPod;
using ::testing::HasSubstr;

constexpr const char* kHostname = "kubernetes.io/hostname";
constexpr int64_t kGi = int64_t{1} << 30;

std::vector<NodeSelectorTerm> OnHost(const std::string& node) {
  return {NodeSelectorTerm{{{kHostname, SelectorOperator::kIn, {node}}}, {}}};
}

NodeInfo Node(const std::string& name, const std::string& zone = "z1") {
  NodeInfo node = GpuNode(name, 8);
  node.labels[kHostname] = name;
  node.labels["zone"] = zone;
  return node;
}

VolumeInfo LocalPv(const std::string& name, const std::string& node, int64_t gi = 10) {
  VolumeInfo pv;
  pv.name = name;
  pv.storage_class = "local";
  pv.capacity = gi * kGi;
  pv.access_modes = {"ReadWriteOnce"};
  pv.node_affinity = OnHost(node);
  return pv;
}

ClaimInfo Claim(const std::string& name, std::optional<std::string> cls = "local",
                int64_t gi = 5) {
  ClaimInfo c;
  c.namespace_ = "ns";
  c.name = name;
  c.uid = "uid-" + name;
  c.storage_class = std::move(cls);
  c.request = gi * kGi;
  c.access_modes = {"ReadWriteOnce"};
  return c;
}

VolumeCatalog Catalog(std::vector<ClaimInfo> claims, std::vector<VolumeInfo> pvs) {
  VolumeCatalog catalog;
  for (ClaimInfo& c : claims) catalog.claims[c.namespace_ + "/" + c.name] = std::move(c);
  for (VolumeInfo& pv : pvs) catalog.volumes[pv.name] = std::move(pv);
  catalog.classes["local"] = {"local", kNoProvisioner, VolumeBindingMode::kWaitForFirstConsumer, {}};
  catalog.classes["fast"] = {"fast", "ebs.csi.aws.com", VolumeBindingMode::kImmediate, {}};
  catalog.classes["path"] = {"path", "rancher.io/local-path",
                             VolumeBindingMode::kWaitForFirstConsumer, {}};
  catalog.classes["zonal"] = {
      "zonal", "ebs.csi.aws.com", VolumeBindingMode::kWaitForFirstConsumer,
      {NodeSelectorTerm{{{"zone", SelectorOperator::kIn, {"z2"}}}, {}}}};
  return catalog;
}

TEST(ResolveClaimTest, Table) {
  ClaimInfo bound = Claim("bound");
  bound.volume_name = "pv-a";
  VolumeInfo pv_a = LocalPv("pv-a", "n1");
  pv_a.claim_namespace = "ns";
  pv_a.claim_name = "bound";
  ClaimInfo dangling = Claim("dangling");
  dangling.volume_name = "pv-gone";
  ClaimInfo deleting = Claim("deleting");
  deleting.deleting = true;
  ClaimInfo big = Claim("big", "local", 50);
  ClaimInfo rwx = Claim("rwx");
  rwx.access_modes = {"ReadWriteMany"};
  ClaimInfo block = Claim("block");
  block.volume_mode = "Block";
  ClaimInfo picky = Claim("picky");
  picky.selector = LabelSelector{{{"tier", "gold"}}, {}};
  VolumeInfo gold = LocalPv("pv-gold", "n3", 20);
  gold.labels = {{"tier", "gold"}};
  VolumeInfo prebound = LocalPv("pv-pre", "n4");
  prebound.claim_namespace = "ns";
  prebound.claim_name = "wanted";
  VolumeInfo dying = LocalPv("pv-dying", "n1", 5);
  dying.deleting = true;
  ClaimInfo path_picky = Claim("path-picky", "path");
  path_picky.selector = LabelSelector{{{"tier", "none"}}, {}};
  const VolumeCatalog catalog = Catalog(
      {bound, dangling, deleting, big, rwx, block, picky, Claim("free"), Claim("wanted"),
       Claim("classless", std::nullopt), Claim("immediate", "fast"), Claim("nowhere", "ghost"),
       Claim("dynamic", "path"), path_picky},
      {pv_a, LocalPv("pv-b", "n2", 20), LocalPv("pv-c", "n3", 10), gold, prebound, dying});

  struct Case {
    std::string claim;
    bool ephemeral;
    ClaimState state;
    std::string waiting;                  // substring, kWaiting
    std::vector<std::string> candidates;  // kUnbound, in order
    bool provision;
  };
  const std::vector<Case> cases = {
      {"bound", false, ClaimState::kBound, "", {}, false},
      {"missing", false, ClaimState::kWaiting, "not found", {}, false},
      {"train-0-scratch", true, ClaimState::kWaiting, "ephemeral volume controller", {}, false},
      {"dangling", false, ClaimState::kWaiting, "bound to volume pv-gone, which does not exist",
       {}, false},
      {"deleting", false, ClaimState::kWaiting, "being deleted", {}, false},
      {"classless", false, ClaimState::kWaiting, "no storage class", {}, false},
      {"immediate", false, ClaimState::kWaiting, "binds Immediate", {}, false},
      {"nowhere", false, ClaimState::kWaiting, "storage class ghost not found", {}, false},
      // Smallest first; the bound, pre-bound and deleted PVs are not free.
      {"free", false, ClaimState::kUnbound, "", {"pv-c", "pv-b", "pv-gold"}, false},
      {"big", false, ClaimState::kWaiting, "no free PV matches it", {}, false},
      {"rwx", false, ClaimState::kWaiting, "provisioner kubernetes.io/no-provisioner", {}, false},
      {"block", false, ClaimState::kWaiting, "no free PV matches it", {}, false},
      {"picky", false, ClaimState::kUnbound, "", {"pv-gold"}, false},
      {"wanted", false, ClaimState::kUnbound, "", {"pv-pre"}, false},
      {"dynamic", false, ClaimState::kUnbound, "", {}, true},
      {"path-picky", false, ClaimState::kWaiting, "the claim has a selector", {}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.claim);
    const ClaimNeed need = ResolveClaim("ns", {c.claim, c.ephemeral}, catalog);
    EXPECT_EQ(need.claim, c.claim);
    EXPECT_EQ(need.state, c.state);
    if (c.state == ClaimState::kWaiting) {
      EXPECT_THAT(need.waiting, HasSubstr(c.waiting));
    }
    std::vector<std::string> names;
    for (const VolumeCandidate& v : need.candidates) names.push_back(v.name);
    if (c.state == ClaimState::kUnbound) {
      EXPECT_EQ(names, c.candidates);
    }
    EXPECT_EQ(need.provision, c.provision);
  }
  const ClaimNeed b = ResolveClaim("ns", {"bound", false}, catalog);
  EXPECT_EQ(b.volume, "pv-a");
  EXPECT_EQ(b.node_affinity, OnHost("n1"));
  EXPECT_TRUE(ResolveClaim("ns", {"wanted", false}, catalog).candidates[0].prebound);
  // Another namespace's claim of the same name is not this one.
  EXPECT_EQ(ResolveClaim("other", {"free", false}, catalog).state, ClaimState::kWaiting);
}

TEST(FitClaimTest, Table) {
  const VolumeCatalog catalog = Catalog(
      {Claim("free"), Claim("dynamic", "path"), Claim("zonal", "zonal"), Claim("mixed", "zonal")},
      {LocalPv("pv-1", "n1"), LocalPv("pv-2", "n2")});
  ClaimNeed bound;
  bound.claim = "b";
  bound.state = ClaimState::kBound;
  bound.volume = "pv-x";
  bound.node_affinity = OnHost("n2");
  ClaimNeed selected = ResolveClaim("ns", {"dynamic", false}, catalog);
  selected.selected_node = "n2";
  const ClaimNeed free = ResolveClaim("ns", {"free", false}, catalog);
  const ClaimNeed dynamic = ResolveClaim("ns", {"dynamic", false}, catalog);
  const ClaimNeed zonal = ResolveClaim("ns", {"zonal", false}, catalog);
  const ClaimChoice shared_pv{"free", "pv-1", "n1", false};
  const ClaimChoice shared_node{"dynamic", "", "n1", false};
  const std::set<std::string> none;
  const std::set<std::string> pv1_taken = {"pv-1"};

  struct Case {
    std::string name;
    const ClaimNeed* need;
    NodeInfo node;
    const std::set<std::string>* taken;
    const ClaimChoice* earlier;
    std::optional<ClaimChoice> want;
  };
  const std::vector<Case> cases = {
      {"bound, PV's node", &bound, Node("n2"), &none, nullptr, ClaimChoice{}},
      {"bound, other node", &bound, Node("n1"), &none, nullptr, std::nullopt},
      {"local PV on the node", &free, Node("n1"), &none, nullptr,
       ClaimChoice{"free", "pv-1", "n1", false}},
      {"local PV taken", &free, Node("n1"), &pv1_taken, nullptr, std::nullopt},
      {"no local PV on the node", &free, Node("n3"), &none, nullptr, std::nullopt},
      {"provision anywhere", &dynamic, Node("n3"), &none, nullptr,
       ClaimChoice{"dynamic", "", "n3", false}},
      {"allowedTopologies admit z2", &zonal, Node("n3", "z2"), &none, nullptr,
       ClaimChoice{"zonal", "", "n3", false}},
      {"allowedTopologies refuse z1", &zonal, Node("n3", "z1"), &none, nullptr, std::nullopt},
      {"selected node only", &selected, Node("n1"), &none, nullptr, std::nullopt},
      {"on the selected node", &selected, Node("n2"), &none, nullptr,
       ClaimChoice{"dynamic", "", "n2", false}},
      {"shared claim follows its PV", &free, Node("n1"), &pv1_taken, &shared_pv, shared_pv},
      {"shared claim, PV elsewhere", &free, Node("n2"), &none, &shared_pv, std::nullopt},
      {"shared provisioned claim, same node", &dynamic, Node("n1"), &none, &shared_node,
       shared_node},
      {"shared provisioned claim, other node", &dynamic, Node("n2"), &none, &shared_node,
       std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto taken = [&](const std::string& v) { return c.taken->count(v) != 0; };
    EXPECT_EQ(FitClaim(*c.need, c.node, taken, c.earlier), c.want);
  }
}

TEST(FitClaimTest, APreboundVolumeIsTheOnlyChoice) {
  VolumeInfo pre = LocalPv("pv-pre", "n1");
  pre.claim_namespace = "ns";
  pre.claim_name = "c";
  VolumeCatalog catalog = Catalog({Claim("c", "path")}, {pre, LocalPv("pv-2", "n2")});
  catalog.volumes["pv-2"].storage_class = "path";
  const ClaimNeed need = ResolveClaim("ns", {"c", false}, catalog);
  auto none = [](const std::string&) { return true; };  // even "taken" does not hide it
  EXPECT_EQ(FitClaim(need, Node("n1"), none, nullptr), (ClaimChoice{"c", "pv-pre", "n1", true}));
  // Not provisioned elsewhere, not bound to another PV.
  EXPECT_EQ(FitClaim(need, Node("n2"), none, nullptr), std::nullopt);
}

// A gang whose pod i has the claims `claims(i)`, resolved against `catalog`.
GangRequest GangWithClaims(int pods, const VolumeCatalog& catalog,
                           const std::function<std::vector<PodClaimRef>(int)>& claims) {
  GangRequest gang;
  gang.job_key = "ns/train";
  gang.roles.push_back(Role{"worker", {}});
  for (int i = 0; i < pods; ++i) {
    PodRequest pod = GpuPod(1);
    pod.namespace_ = "ns";
    for (const PodClaimRef& ref : claims(i)) {
      pod.volumes.push_back(ResolveClaim("ns", ref, catalog));
    }
    gang.roles[0].pods.push_back(std::move(pod));
  }
  return gang;
}

std::vector<NodeInfo> FourNodes() { return {Node("n1"), Node("n2"), Node("n3"), Node("n4")}; }

TEST(VolumePlacementTest, LocalVolumesOnTwoOfFourNodesPlaceTheGangExactlyThere) {
  const VolumeCatalog catalog = Catalog({Claim("data-0"), Claim("data-1")},
                                        {LocalPv("pv-n2", "n2"), LocalPv("pv-n4", "n4")});
  const Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest gang = GangWithClaims(2, catalog, [](int i) {
    return std::vector<PodClaimRef>{{"data-" + std::to_string(i), false}};
  });
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  std::set<std::string> nodes;
  std::set<std::string> pvs;
  for (const PodAssignment& a : p.assignments) {
    nodes.insert(a.node_name);
    ASSERT_EQ(a.volumes.size(), 1u);
    EXPECT_EQ(a.volumes[0].claim, "data-" + std::to_string(a.replica));
    EXPECT_EQ(a.volumes[0].node, a.node_name);
    EXPECT_EQ(a.volumes[0].volume, "pv-" + a.node_name);  // the PV on the pod's own node
    pvs.insert(a.volumes[0].volume);
  }
  EXPECT_EQ(nodes, (std::set<std::string>{"n2", "n4"}));
  EXPECT_EQ(pvs.size(), 2u);  // each PV chosen once
}

TEST(VolumePlacementTest, EachVolumeIsChosenOnceAcrossGangsOfACycle) {
  const VolumeCatalog catalog =
      Catalog({Claim("a"), Claim("b")}, {LocalPv("pv-n2", "n2"), LocalPv("pv-n2b", "n2", 20)});
  Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest first =
      GangWithClaims(1, catalog, [](int) { return std::vector<PodClaimRef>{{"a", false}}; });
  const Placement p1 = PlaceGang(snap, first);
  ASSERT_TRUE(p1.placed()) << p1.message;
  EXPECT_EQ(p1.assignments[0].volumes[0].volume, "pv-n2");  // the smaller one
  AssumePlacement(snap, first, p1);
  const GangRequest second =
      GangWithClaims(1, catalog, [](int) { return std::vector<PodClaimRef>{{"b", false}}; });
  const Placement p2 = PlaceGang(snap, second);
  ASSERT_TRUE(p2.placed()) << p2.message;
  EXPECT_EQ(p2.assignments[0].volumes[0].volume, "pv-n2b");
}

TEST(VolumePlacementTest, TooFewFreeVolumesWaitNamingTheClaim) {
  const VolumeCatalog catalog =
      Catalog({Claim("data-0"), Claim("data-1")}, {LocalPv("pv-n2", "n2")});
  const Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest gang = GangWithClaims(2, catalog, [](int i) {
    return std::vector<PodClaimRef>{{"data-" + std::to_string(i), false}};
  });
  const Placement p = PlaceGang(snap, gang);
  ASSERT_FALSE(p.placed());
  EXPECT_EQ(p.failure, PlacementFailure::kVolumeBinding);
  EXPECT_EQ(PlacementFailureReason(p.failure), "VolumeBinding");
  EXPECT_EQ(p.message,
            "worker pod 1 fits no node after 1 of the gang's 2 pods (claim data-1 (class "
            "local): no free PV matching it on 4 candidate nodes): 4 nodes excluded: 4 volume "
            "binding");
}

TEST(VolumePlacementTest, AWaitingClaimKeepsTheGangWaiting) {
  const VolumeCatalog catalog = Catalog({Claim("data", "fast")}, {});
  const Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest gang =
      GangWithClaims(2, catalog, [](int) { return std::vector<PodClaimRef>{{"data", false}}; });
  const Placement p = PlaceGang(snap, gang);
  EXPECT_EQ(p.failure, PlacementFailure::kVolumeBinding);
  EXPECT_EQ(p.message,
            "worker pod 0 waits: claim data (class fast): unbound, and its class binds "
            "Immediate: the PV controller (or the class's provisioner) binds it first");
  const GangRequest ephemeral = GangWithClaims(1, catalog, [](int) {
    return std::vector<PodClaimRef>{{"train-worker-0-scratch", true}};
  });
  EXPECT_THAT(PlaceGang(snap, ephemeral).message,
              HasSubstr("claim train-worker-0-scratch (no class): not created yet"));
}

TEST(VolumePlacementTest, ProvisioningFollowsAllowedTopologiesAndOtherChecks) {
  const VolumeCatalog catalog = Catalog({Claim("s-0", "zonal"), Claim("s-1", "zonal")}, {});
  std::vector<NodeInfo> nodes = {Node("n1", "z1"), Node("n2", "z2"), Node("n3", "z2"),
                                 Node("n4", "z1")};
  nodes[2].unschedulable = true;
  const Snapshot snap = Snapshot::Build(nodes);
  GangRequest gang = GangWithClaims(1, catalog, [](int i) {
    return std::vector<PodClaimRef>{{"s-" + std::to_string(i), false}};
  });
  Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(p.assignments[0].node_name, "n2");
  EXPECT_EQ(p.assignments[0].volumes, (std::vector<ClaimChoice>{{"s-0", "", "n2", false}}));
  // Two pods: one node of z2 is cordoned and the other takes one pod of 8 GPUs each.
  gang = GangWithClaims(2, catalog, [](int i) {
    return std::vector<PodClaimRef>{{"s-" + std::to_string(i), false}};
  });
  for (PodRequest& pod : gang.roles[0].pods) pod.requests.Set(std::string(kGpu), 8);
  p = PlaceGang(snap, gang);
  ASSERT_FALSE(p.placed());
  EXPECT_EQ(p.failure, PlacementFailure::kVolumeBinding);
  EXPECT_THAT(p.message, HasSubstr("claim s-1 (class zonal): no free PV matching it, and none its "
                                   "class's allowedTopologies admit, on 2 candidate nodes"));
}

TEST(VolumePlacementTest, ASharedClaimKeepsItsPodsTogether) {
  const VolumeCatalog catalog = Catalog({Claim("shared", "path")}, {});
  const Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest gang =
      GangWithClaims(3, catalog, [](int) { return std::vector<PodClaimRef>{{"shared", false}}; });
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  std::set<std::string> nodes;
  size_t writes = 0;
  for (const PodAssignment& a : p.assignments) {
    nodes.insert(a.node_name);
    writes += a.volumes.size();
  }
  EXPECT_EQ(nodes.size(), 1u);
  EXPECT_EQ(writes, 1u);  // the claim is acted on once, for the first pod
}

TEST(VolumePlacementTest, ABoundVolumeBringsThePodToItsNode) {
  ClaimInfo claim = Claim("data");
  claim.volume_name = "pv-n3";
  VolumeInfo pv = LocalPv("pv-n3", "n3");
  pv.claim_namespace = "ns";
  pv.claim_name = "data";
  const VolumeCatalog catalog = Catalog({claim}, {pv});
  const Snapshot snap = Snapshot::Build(FourNodes());
  const GangRequest gang =
      GangWithClaims(1, catalog, [](int) { return std::vector<PodClaimRef>{{"data", false}}; });
  const Placement p = PlaceGang(snap, gang);
  ASSERT_TRUE(p.placed()) << p.message;
  EXPECT_EQ(p.assignments[0].node_name, "n3");
  EXPECT_TRUE(p.assignments[0].volumes.empty());  // nothing to write for a bound claim
}

}  // namespace
}  // namespace lockstep::scheduler
