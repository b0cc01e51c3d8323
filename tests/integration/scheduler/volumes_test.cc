// Volumes end to end (issue 41 item 1): the gang scheduler, on the real apiserver with kwok nodes
// of the test's own and the local control plane's kube-controller-manager (its ephemeral volume
// controller creates each pod's generic ephemeral claim, its PV controller binds what the
// scheduler pre-bound), places pods with WaitForFirstConsumer claims as kube-scheduler's
// VolumeBinding would: local PVs on 2 of 4 nodes bring a 2-pod gang to exactly those nodes and
// their claims are bound; a claim without a free PV is a waiting reason naming it; a claim of a
// provisioning class gets volume.kubernetes.io/selected-node of its pod's node.

#include <set>

#include "tests/integration/scheduler/scheduler_env.h"

namespace lockstep::scheduler::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class VolumeTest : public SchedulerTest {
 protected:
  void TearDown() override {
    SchedulerTest::TearDown();  // the namespace (and its claims) first: then the PVs are free
    for (const std::string& pv : volumes_) {
      client().Delete(PersistentVolumes(), "", pv).status().IgnoreError();
    }
    for (const std::string& sc : classes_) {
      client().Delete(StorageClasses(), "", sc).status().IgnoreError();
    }
  }

  // A WaitForFirstConsumer StorageClass "<ns>-<name>"; returns its name.
  std::string CreateClass(const std::string& name, const std::string& provisioner) {
    const std::string full = ns() + "-" + name;
    const json sc = {{"apiVersion", "storage.k8s.io/v1"},
                     {"kind", "StorageClass"},
                     {"metadata", {{"name", full}}},
                     {"provisioner", provisioner},
                     {"volumeBindingMode", "WaitForFirstConsumer"}};
    StatusOr<json> created = client().Create(StorageClasses(), "", sc);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    classes_.push_back(full);
    return full;
  }

  // A local PV of 10Gi on `node`, of class `cls`; returns its name.
  std::string CreateLocalVolume(const std::string& node, const std::string& cls) {
    const std::string name = "pv-" + node;
    json pv = json::parse(R"({
      "apiVersion": "v1", "kind": "PersistentVolume",
      "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
               "persistentVolumeReclaimPolicy": "Retain", "local": {"path": "/mnt/disks/scratch"},
               "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                 {"key": "kubernetes.io/hostname", "operator": "In"}]}]}}}})");
    pv["metadata"] = {{"name", name}};
    pv["spec"]["storageClassName"] = cls;
    pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
      ["values"] = {node};
    StatusOr<json> created = client().Create(PersistentVolumes(), "", pv);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    volumes_.push_back(name);
    return name;
  }

  // Each pod gets a generic ephemeral volume "scratch" of class `cls`: claim <pod>-scratch.
  static json ScratchVolume(const std::string& cls) {
    return {{"volumes",
             {{{"name", "scratch"},
               {"ephemeral",
                {{"volumeClaimTemplate",
                  {{"spec",
                    {{"accessModes", {"ReadWriteOnce"}},
                     {"storageClassName", cls},
                     {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}}}}}}}}};
  }

  json Claim(const std::string& name) {
    StatusOr<json> claim = client().Get(PersistentVolumeClaims(), ns(), name);
    return claim.ok() ? *claim : json::object();
  }

  std::vector<std::string> volumes_;
  std::vector<std::string> classes_;
};

TEST_F(VolumeTest, LocalVolumesOnTwoOfFourNodesTakeTheGangThereAndAreBound) {
  const std::vector<std::string> nodes = CreateTopology(1, 1, 4);
  const std::string cls = CreateClass("local", "kubernetes.io/no-provisioner");
  const std::map<std::string, std::string> pv_on = {
      {nodes[1], CreateLocalVolume(nodes[1], cls)}, {nodes[3], CreateLocalVolume(nodes[3], cls)}};
  StartScheduler();
  JobSpec spec{2, 1, {}, ""};  // would pack onto one node without the volumes
  spec.pod_spec_patch = ScratchVolume(cls);
  CreateJob("local", spec);
  ASSERT_TRUE(WaitAllBound("local", 2, seconds(60))) << ScheduledCondition("local");
  std::set<std::string> used;
  for (const auto& [pod, node] : Placement("local")) {
    used.insert(node);
    ASSERT_EQ(pv_on.count(node), 1u) << pod << " on " << node;
    // Pre-bound by the scheduler, then bound by the PV controller.
    const std::string claim = pod + "-scratch";
    ASSERT_TRUE(kube::testing::WaitFor(
        [&] { return Claim(claim)["status"].value("phase", "") == "Bound"; }, seconds(30)))
        << Claim(claim);
    EXPECT_EQ(Claim(claim)["spec"].value("volumeName", ""), pv_on.at(node));
  }
  EXPECT_EQ(used.size(), 2u);
}

TEST_F(VolumeTest, AClaimWithoutAFreeVolumeIsAWaitingReasonNamingIt) {
  const std::vector<std::string> nodes = CreateTopology(1, 1, 2);
  const std::string cls = CreateClass("local", "kubernetes.io/no-provisioner");
  CreateLocalVolume(nodes[0], cls);
  StartScheduler();
  JobSpec spec{2, 1, {}, ""};  // two claims, one PV
  spec.pod_spec_patch = ScratchVolume(cls);
  CreateJob("short", spec);
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        const json c = ScheduledCondition("short");
        return c.value("status", "") == "False" && c.value("reason", "") == "VolumeBinding";
      },
      seconds(30)))
      << ScheduledCondition("short");
  const std::string message = ScheduledCondition("short").value("message", "");
  EXPECT_NE(message.find("claim short-worker-1-scratch (class " + cls +
                         "): no free PV matching it on 2 candidate nodes"),
            std::string::npos)
      << message;
  EXPECT_EQ(BoundCount("short"), 0);
}

TEST_F(VolumeTest, AProvisioningClassGetsTheSelectedNodeOfItsPod) {
  CreateTopology(1, 1, 2);
  // No provisioner runs for this name: what is checked is what Lockstep writes.
  const std::string cls = CreateClass("dynamic", "example.com/nobody");
  StartScheduler();
  JobSpec spec{2, 1, {}, ""};
  spec.pod_spec_patch = ScratchVolume(cls);
  CreateJob("dyn", spec);
  ASSERT_TRUE(WaitAllBound("dyn", 2, seconds(60))) << ScheduledCondition("dyn");
  for (const auto& [pod, node] : Placement("dyn")) {
    const json annotations = Claim(pod + "-scratch")["metadata"].value("annotations", json::object());
    EXPECT_EQ(annotations.value("volume.kubernetes.io/selected-node", ""), node) << annotations;
  }
}

}  // namespace
}  // namespace lockstep::scheduler::testing
