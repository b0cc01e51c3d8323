#include "operator/kube/objects.h"

#include <gtest/gtest.h>

#include <limits>

#include "operator/kube/milli_quantity.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

const json kPod = json::parse(R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "w-0", "namespace": "team-a", "uid": "u1", "resourceVersion": "42",
    "labels": {"lockstep.dev/job-name": "resnet"},
    "annotations": {"a": "b", "kubectl.kubernetes.io/last-applied-configuration": "{huge}"},
    "ownerReferences": [{"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrainingJob",
                         "name": "resnet", "uid": "job-uid", "controller": true}],
    "creationTimestamp": "2026-01-02T03:04:05Z", "deletionTimestamp": "2026-01-02T03:05:00Z"},
  "spec": {"nodeName": "gpu-node-1", "schedulerName": "lockstep", "priority": 100,
    "nodeSelector": {"pool": "a100"},
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
                    {"key": "k", "value": "v", "tolerationSeconds": 30}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
      "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "topology.lockstep.dev/block", "operator": "In", "values": ["b0", "b1"]}]}]}}},
    "containers": [
      {"name": "trainer", "resources": {"requests": {"cpu": "1500m", "memory": "2Gi",
                                                     "nvidia.com/gpu": "8"}}},
      {"name": "sidecar", "resources": {"requests": {"cpu": "100m"}}}],
    "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}],
    "overhead": {"cpu": "10m"}},
  "status": {"phase": "Failed", "reason": "Evicted",
    "conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
                   {"type": "Ready", "status": "False"}],
    "containerStatuses": [
      {"name": "trainer", "restartCount": 2, "ready": false,
       "state": {"terminated": {"exitCode": 137, "signal": 9, "reason": "OOMKilled",
                                "message": "rank 3 failed", "finishedAt": "2026-01-02T03:06:00Z"}}},
      {"name": "sidecar", "ready": true, "state": {"running": {}}}]}
})");

TEST(ObjectsTest, DecodesPodFields) {
  auto pod = DecodePod(kPod);
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->meta.Key(), "team-a/w-0");
  EXPECT_EQ(pod->meta.uid, "u1");
  EXPECT_EQ(pod->meta.labels.at("lockstep.dev/job-name"), "resnet");
  EXPECT_EQ(pod->meta.annotations.count("kubectl.kubernetes.io/last-applied-configuration"), 0u);
  EXPECT_EQ(pod->meta.annotations.at("a"), "b");
  ASSERT_NE(pod->meta.ControllerRef(), nullptr);
  EXPECT_EQ(pod->meta.ControllerRef()->uid, "job-uid");
  EXPECT_EQ(pod->meta.deletion_timestamp.value_or(""), "2026-01-02T03:05:00Z");
  EXPECT_EQ(pod->node_name, "gpu-node-1");
  EXPECT_EQ(pod->scheduler_name, "lockstep");
  EXPECT_EQ(pod->priority, 100);
  EXPECT_EQ(pod->node_selector.at("pool"), "a100");
  ASSERT_EQ(pod->tolerations.size(), 2u);
  EXPECT_EQ(pod->tolerations[0].op, "Exists");
  EXPECT_EQ(pod->tolerations[1].op, "Equal");
  EXPECT_EQ(pod->tolerations[1].toleration_seconds.value_or(0), 30);
  ASSERT_EQ(pod->required_node_affinity.size(), 1u);
  EXPECT_EQ(pod->required_node_affinity[0].match_expressions[0].values[1], "b1");
  // cpu: max(1500 + 100, 4000 init) + 10 overhead; memory: max(2Gi, 1Gi).
  EXPECT_EQ(pod->requests.at("cpu"), 4010);
  EXPECT_EQ(pod->requests.at("memory"), int64_t{2} * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(pod->requests.at("nvidia.com/gpu"), 8000);
  EXPECT_TRUE(pod->IsTerminal());
  EXPECT_EQ(pod->reason, "Evicted");
  ASSERT_NE(pod->FindCondition("DisruptionTarget"), nullptr);
  EXPECT_EQ(pod->FindCondition("DisruptionTarget")->status, "True");
  ASSERT_EQ(pod->container_statuses.size(), 2u);
  const ContainerStatus& t = pod->container_statuses[0];
  EXPECT_EQ(t.state, "terminated");
  EXPECT_EQ(t.reason, "OOMKilled");
  EXPECT_EQ(t.exit_code.value_or(0), 137);
  EXPECT_EQ(t.signal.value_or(0), 9);
  EXPECT_EQ(t.message, "rank 3 failed");
  EXPECT_EQ(t.restart_count, 2);
  EXPECT_EQ(pod->container_statuses[1].state, "running");
}

// A running pod's Initialized, ContainersReady, PodScheduled and PodReadyToStartContainers are
// read by nobody: only the kept types stay in the caches, in the order sent.
TEST(ObjectsTest, KeepsOnlyThePodConditionsTheOperatorReads) {
  StatusOr<Pod> pod = DecodePod(json::parse(R"({"metadata": {"name": "p"},
    "status": {"phase": "Running", "conditions": [
      {"type": "PodReadyToStartContainers", "status": "True"},
      {"type": "Initialized", "status": "True"},
      {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-02T03:04:05Z"},
      {"type": "ContainersReady", "status": "True"},
      {"type": "PodScheduled", "status": "True"},
      {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"},
      "not an object", {"status": "True"}]}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  ASSERT_EQ(pod->conditions.size(), 2u);
  EXPECT_EQ(pod->conditions[0].type, "Ready");
  EXPECT_EQ(pod->conditions[0].last_transition_time, "2026-01-02T03:04:05Z");
  EXPECT_EQ(pod->conditions[1].type, "DisruptionTarget");
  EXPECT_EQ(pod->conditions[1].reason, "PreemptionByScheduler");
  EXPECT_EQ(pod->FindCondition("Initialized"), nullptr);
  // Not an array: none, no error.
  StatusOr<Pod> odd = DecodePod(json::parse(R"({"metadata": {"name": "p"},
    "status": {"conditions": {"type": "Ready"}}})"));
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_TRUE(odd->conditions.empty());
}

TEST(ObjectsTest, DecodesNode) {
  auto node = DecodeNode(json::parse(R"({
    "metadata": {"name": "gpu-node-0", "labels": {"topology.lockstep.dev/rack": "r0"}},
    "spec": {"unschedulable": true, "taints": [{"key": "k", "effect": "NoExecute"}]},
    "status": {"allocatable": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "1Ti"},
      "conditions": [{"type": "MemoryPressure", "status": "False"},
        {"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-01-02T03:04:05Z"}]}})"));
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ(node->meta.Key(), "gpu-node-0");
  EXPECT_TRUE(node->unschedulable);
  EXPECT_TRUE(node->IsReady());
  EXPECT_EQ(node->ready->last_heartbeat_time, "2026-01-02T03:04:05Z");
  EXPECT_EQ(node->taints.at(0).effect, "NoExecute");
  EXPECT_EQ(node->allocatable.at("nvidia.com/gpu"), 8000);
  EXPECT_EQ(node->allocatable.at("cpu"), 96000);
}

TEST(ObjectsTest, DecodesLeaseAndGeneric) {
  auto lease = DecodeLease(json::parse(R"({"metadata": {"name": "l", "namespace": "n"},
    "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15,
             "renewTime": "2026-01-02T03:04:05.123456Z", "leaseTransitions": 3}})"));
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->holder_identity, "a");
  EXPECT_EQ(lease->lease_duration_seconds.value_or(0), 15);
  EXPECT_EQ(lease->lease_transitions, 3);
  auto generic = DecodeGenericObject(json::parse(R"({"apiVersion": "lockstep.dev/v1alpha1",
    "kind": "TrainingJob", "metadata": {"name": "j", "namespace": "n", "generation": 4},
    "spec": {"replicas": 4}})"));
  ASSERT_TRUE(generic.ok());
  EXPECT_EQ(generic->meta.generation, 4);
  EXPECT_EQ(generic->spec["replicas"], 4);
  EXPECT_TRUE(generic->status.is_null());
}

TEST(ObjectsTest, RejectsObjectsWithoutName) {
  EXPECT_FALSE(DecodePod(json::parse(R"({"metadata": {}})")).ok());
  EXPECT_FALSE(DecodeNode(json::array()).ok());
  EXPECT_FALSE(DecodePod(json::parse(R"({"metadata": {"name": "p"},
    "spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}})")).ok());
}

// Issue 18: two containers each requesting more than int64 milli-units hold (saturated at
// INT64_MAX) must sum to INT64_MAX, not wrap to a negative request that fits anywhere.
TEST(ObjectsTest, SaturatedRequestsSumWithoutWrapping) {
  StatusOr<Pod> pod = DecodePod(json::parse(R"({"metadata": {"name": "p"},
    "spec": {"containers": [{"resources": {"requests": {"cpu": "1e30", "memory": "1"}}},
                            {"resources": {"requests": {"cpu": "1e30", "memory": "-1e30"}}},
                            {"resources": {"requests": {"memory": "-1e30"}}}],
             "overhead": {"cpu": "1"}}})"));
  ASSERT_TRUE(pod.ok()) << pod.status();
  EXPECT_EQ(pod->requests.at("cpu"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(pod->requests.at("memory"), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(SaturatingAdd(std::numeric_limits<int64_t>::max(), 1),
            std::numeric_limits<int64_t>::max());
  EXPECT_EQ(SaturatingAdd(std::numeric_limits<int64_t>::min(), -1),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(SaturatingAdd(5, -7), -2);
}

}  // namespace
}  // namespace lockstep::kube
