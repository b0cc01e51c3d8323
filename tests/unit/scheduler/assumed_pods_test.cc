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

// Placed at create: the pod does not exist yet, so its absence from the pod list must not drop
// the entry (a bind's entry would be dropped as "gone"); it counts until the list shows the
// created uid, or the TTL after the create.
TEST(AssumedPodsTest, APodPlacedAtCreateCountsUntilThePodListShowsIt) {
  AssumedPods assumed(std::chrono::seconds(30));
  const Resources gpus{{std::string(kGpu), 8}};
  const PodPtr created = PodOf("worker", 0, 0, 8, "n0");  // as stored: bound, uid pod-worker0-0
  const std::string key = created->meta.Key();
  assumed.AssumeCreate(key, "n0", gpus);
  const auto now = std::chrono::steady_clock::now();
  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({}, nodes, now);  // not created yet
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 8);
  EXPECT_EQ(assumed.size(), 1u);

  assumed.Created(key, created->meta.uid, now);
  nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({}, nodes, now + std::chrono::seconds(1));  // created, not yet watched
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 8);

  // An older pod of the same name (a restart's leftover) is not the created one.
  auto older = std::make_shared<kube::Pod>(*created);
  older->meta.uid = "pod-worker0-old";
  nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{key, older}}, nodes, now + std::chrono::seconds(1));
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 8);
  EXPECT_EQ(assumed.size(), 1u);

  nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{key, created}}, nodes, now + std::chrono::seconds(2));
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);  // the pod list counts it now
  EXPECT_EQ(assumed.size(), 0u);
}

// Created placed, delivered by the informer and deleted before any cycle listed it: the entry is
// gone with the deletion's watch event, not after the TTL (found by the failure tests: a restart
// waited 30 s for capacity its deleted pods still held).
TEST(AssumedPodsTest, APodPlacedAtCreateIsDoneOnceTheInformerDeliversItsDeletion) {
  AssumedPods assumed(std::chrono::seconds(30));
  const auto now = std::chrono::steady_clock::now();
  assumed.AssumeCreate("ns/p", "n0", Resources{{std::string(kGpu), 8}});
  assumed.Deleted("ns/p", "");  // no uid yet: not this create's pod
  assumed.Deleted("ns/p", "uid-other");
  EXPECT_EQ(assumed.size(), 1u);
  assumed.Created("ns/p", "uid-p", now);
  assumed.Deleted("ns/p", "uid-old");  // a predecessor of the same name
  EXPECT_EQ(assumed.size(), 1u);
  assumed.Deleted("ns/p", "uid-p");
  EXPECT_EQ(assumed.size(), 0u);
  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({}, nodes, now);  // deleted before any cycle: nothing counted
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);
}

// The cycle lists pods, then builds its snapshot. A pod created placed whose first watch event
// lands in between is in neither that list nor, had the event ended its entry, the assumed
// pods: the snapshot would give its GPUs out again. The scheduler once ended the entry on the
// add event (the chaos tier, under load: a node held 9 of 8 GPUs); now only a list showing the
// pod, its deletion or the TTL end it, and this is the contract the cycle relies on.
TEST(AssumedPodsTest, APodPlacedAtCreateCountsInACycleWhoseListPredatesItsWatchEvent) {
  AssumedPods assumed(std::chrono::seconds(30));
  const PodPtr created = PodOf("worker", 0, 0, 8, "n0");
  const std::string key = created->meta.Key();
  const auto now = std::chrono::steady_clock::now();
  assumed.AssumeCreate(key, "n0", Resources{{std::string(kGpu), 8}});
  assumed.Created(key, created->meta.uid, now);
  const std::unordered_map<std::string, PodPtr> listed_before_the_event;  // the cycle's list
  // ... the informer delivers the pod's add here, between the list and the snapshot ...
  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo(listed_before_the_event, nodes, now);
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 8);
  EXPECT_TRUE(assumed.Contains(key, created->meta.uid));
  // The next cycle's list shows it: counted by the list, the entry done.
  nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({{key, created}}, nodes, now);
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);
  EXPECT_EQ(assumed.size(), 0u);
}

TEST(AssumedPodsTest, APodPlacedAtCreateAndNeverSeenExpires) {
  AssumedPods assumed(std::chrono::seconds(30));
  assumed.AssumeCreate("ns/p", "n0", Resources{{std::string(kGpu), 8}});
  const auto now = std::chrono::steady_clock::now();
  assumed.Created("ns/p", "uid-p", now);
  std::map<std::string, NodeInfo> nodes = {{"n0", GpuNode("n0", 8)}};
  assumed.ApplyTo({}, nodes, now + std::chrono::seconds(31));
  EXPECT_EQ(nodes.at("n0").requested.Get(kGpu), 0);
  EXPECT_EQ(assumed.size(), 0u);
  // Forget (a create that failed) drops an entry not yet created.
  assumed.AssumeCreate("ns/q", "n0", Resources{{std::string(kGpu), 8}});
  assumed.Forget("ns/q");
  EXPECT_EQ(assumed.size(), 0u);
}

}  // namespace
}  // namespace lockstep::scheduler
