// The scheduler's volume caches and writes (volume_objects.h, volume_binding.h) on API objects:
// claims, PVs and classes decoded as volumes.h reads them (quantities exact, an unparsable one
// refused), a pod's claims (persistentVolumeClaim volumes and generic ephemeral volumes named
// <pod>-<volume>), and the writes a placement needs, once per claim.

#include <gtest/gtest.h>

#include "operator/scheduler/cycle/volume_binding.h"
#include "operator/scheduler/cycle/volume_objects.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;

TEST(VolumeObjectsTest, DecodesClaimsVolumesAndClasses) {
  const json claim = json::parse(R"({
    "metadata": {"name": "data", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                 "annotations": {"volume.kubernetes.io/selected-node": "n2"}},
    "spec": {"storageClassName": "local", "accessModes": ["ReadWriteOnce"],
             "resources": {"requests": {"storage": "1.5Gi"}},
             "selector": {"matchLabels": {"tier": "gold"}}}})");
  StatusOr<ClaimObject> c = DecodeClaim(claim);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->info.storage_class, std::optional<std::string>("local"));
  EXPECT_EQ(c->info.request, int64_t{3} << 29);
  EXPECT_EQ(c->info.access_modes, std::vector<std::string>{"ReadWriteOnce"});
  EXPECT_EQ(c->info.volume_mode, "Filesystem");
  EXPECT_EQ(c->info.selected_node, "n2");
  ASSERT_TRUE(c->info.selector.has_value());
  EXPECT_EQ(c->info.selector->match_labels, (Labels{{"tier", "gold"}}));
  // No storageClassName at all is not the class "".
  EXPECT_FALSE(DecodeClaim(json::parse(R"({"metadata": {"name": "x", "namespace": "ns"},
                                          "spec": {}})"))->info.storage_class.has_value());
  EXPECT_FALSE(DecodeClaim(json::parse(R"({"metadata": {"name": "x", "namespace": "ns"},
      "spec": {"resources": {"requests": {"storage": "lots"}}}})")).ok());

  StatusOr<VolumeObject> v = DecodeVolume(json::parse(R"({
    "metadata": {"name": "pv-1", "resourceVersion": "9", "labels": {"tier": "gold"}},
    "spec": {"storageClassName": "local", "capacity": {"storage": "10Gi"},
             "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "volumeMode": "Block",
             "claimRef": {"namespace": "ns", "name": "data", "uid": "u1"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
               {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}}})"));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->info.capacity, int64_t{10} << 30);
  EXPECT_EQ(v->info.volume_mode, "Block");
  EXPECT_EQ(v->info.claim_name, "data");
  EXPECT_EQ(v->info.resource_version, "9");
  ASSERT_EQ(v->info.node_affinity.size(), 1u);
  EXPECT_EQ(v->info.node_affinity[0].match_expressions[0],
            (NodeSelectorRequirement{"kubernetes.io/hostname", SelectorOperator::kIn, {"n1"}}));

  StatusOr<StorageClassObject> s = DecodeStorageClass(json::parse(R"({
    "metadata": {"name": "zonal"}, "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [
      {"key": "topology.kubernetes.io/zone", "values": ["z1", "z2"]}]}]})"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->info.mode, VolumeBindingMode::kWaitForFirstConsumer);
  ASSERT_EQ(s->info.allowed_topologies.size(), 1u);
  EXPECT_EQ(s->info.allowed_topologies[0].match_expressions[0],
            (NodeSelectorRequirement{"topology.kubernetes.io/zone", SelectorOperator::kIn,
                                     {"z1", "z2"}}));
  EXPECT_EQ(DecodeStorageClass(json::parse(R"({"metadata": {"name": "i"}, "provisioner": "p"})"))
                ->info.mode,
            VolumeBindingMode::kImmediate);
}

TEST(VolumeObjectsTest, APodsClaimsIncludeItsGenericEphemeralVolumes) {
  StatusOr<kube::Pod> pod = kube::DecodePod(json::parse(R"({
    "metadata": {"name": "train-worker-0", "namespace": "ns"},
    "spec": {"containers": [{"name": "c"}], "volumes": [
      {"name": "data", "persistentVolumeClaim": {"claimName": "shared"}},
      {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
      {"name": "tmp", "emptyDir": {}}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_TRUE(HasVolumeClaims(*pod));
  const auto& claims = pod->placement_terms->volume_claims;
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[0].claim, "shared");
  EXPECT_FALSE(claims[0].ephemeral);
  EXPECT_EQ(claims[1].claim, "train-worker-0-scratch");
  EXPECT_TRUE(claims[1].ephemeral);
  StatusOr<kube::Pod> plain = kube::DecodePod(json::parse(R"({
    "metadata": {"name": "p", "namespace": "ns"},
    "spec": {"containers": [{"name": "c"}], "volumes": [{"name": "tmp", "emptyDir": {}}]}})"));
  EXPECT_FALSE(HasVolumeClaims(*plain));
  EXPECT_EQ(plain->placement_terms, nullptr);  // still one null pointer per plain pod
}

TEST(VolumeObjectsTest, WritesOncePerClaimAndNoneThatAreDone) {
  CollectedGang gang;
  gang.pods = {{testing::PodOf("worker", 0, 0, 1), testing::PodOf("worker", 1, 0, 1)}};
  VolumeCatalog catalog;
  ClaimInfo a{"ns", "a", "uid-a", "1", "local", "", 0, {}, "Filesystem", {}, "", false};
  ClaimInfo b{"ns", "b", "uid-b", "1", "path", "", 0, {}, "Filesystem", {}, "", false};
  ClaimInfo done{"ns", "done", "uid-d", "1", "path", "", 0, {}, "Filesystem", {}, "n1", false};
  catalog.claims = {{"ns/a", a}, {"ns/b", b}, {"ns/done", done}};
  VolumeInfo pv;
  pv.name = "pv-1";
  pv.resource_version = "42";
  catalog.volumes = {{"pv-1", pv}};
  Placement placement;
  placement.assignments = {
      {0, 0, 0, "n1",
       {{"a", "pv-1", "n1", false}, {"b", "", "n1", false}, {"done", "", "n1", false}}},
      {0, 1, 0, "n1", {{"b", "", "n1", false}, {"pre", "pv-9", "n1", true}}}};
  const std::vector<VolumeWrite> writes = VolumeWritesFor(gang, placement, catalog);
  EXPECT_EQ(writes, (std::vector<VolumeWrite>{{"ns", "a", "uid-a", "pv-1", "42", "n1"},
                                              {"ns", "b", "uid-b", "", "", "n1"}}));
  EXPECT_EQ(VolumeWritePatch(writes[0]), json::parse(R"({
    "metadata": {"resourceVersion": "42",
                 "annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
    "spec": {"claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                          "namespace": "ns", "name": "a", "uid": "uid-a"}}})"));
  EXPECT_EQ(VolumeWritePatch(writes[1]), json::parse(R"({
    "metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}})"));
}

}  // namespace
}  // namespace lockstep::scheduler
