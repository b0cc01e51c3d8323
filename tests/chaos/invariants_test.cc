// The chaos tier's invariants (invariants.h) on hand-made histories: each finds the violation it
// names and nothing in a history that keeps it, so a chaos run that reports none has checked
// something.
#include "tests/chaos/invariants.h"

#include <gtest/gtest.h>

namespace lockstep::chaos {
namespace {

using kube::WatchEventType;

Version JobVersion(int64_t rv, int attempt, const std::string& state = "Running",
                   WatchEventType type = WatchEventType::kModified) {
  json job = {{"metadata", {{"uid", "job-uid"}, {"name", "job"}}},
              {"status",
               {{"attempt", attempt},
                {"state", state},
                {"observedGeneration", 1},
                {"restarts", {{"failures", attempt}, {"disruptions", 0}, {"inPlace", 0}}}}}};
  return Version{rv, type, false, std::move(job)};
}

Version PodVersion(int64_t rv, const std::string& uid, int attempt, const std::string& node = "",
                   WatchEventType type = WatchEventType::kAdded, bool listed = false) {
  json pod = {{"metadata",
               {{"uid", uid},
                {"name", "job-worker-" + uid},
                {"labels", {{"lockstep.dev/attempt", std::to_string(attempt)}}},
                {"ownerReferences", json::array({{{"uid", "job-uid"}, {"controller", true}}})}}},
              {"spec", {{"nodeName", node}}}};
  return Version{rv, type, listed, std::move(pod)};
}

TEST(ChaosInvariantsTest, CountersThatWentBackNamesTheCounterAndTheRevision) {
  EXPECT_TRUE(CountersThatWentBack({JobVersion(10, 0), JobVersion(20, 1), JobVersion(30, 1)})
                  .empty());
  const std::vector<std::string> back =
      CountersThatWentBack({JobVersion(10, 0), JobVersion(20, 2), JobVersion(30, 1)});
  ASSERT_EQ(back.size(), 2u);  // status.attempt and restarts.failures
  EXPECT_EQ(back[0], "job job: /status/attempt went from 2 to 1 at rv 30");
  // Out of order as received: judged in revision order.
  EXPECT_TRUE(CountersThatWentBack({JobVersion(20, 1), JobVersion(10, 0)}).empty());
}

TEST(ChaosInvariantsTest, PodCreationsAreJudgedByTheJobAsItWasAtThatRevision) {
  const std::vector<Version> jobs = {JobVersion(10, 0), JobVersion(20, 1),
                                     JobVersion(30, 1, "Succeeded"),
                                     JobVersion(40, 1, "Succeeded", WatchEventType::kDeleted)};
  const PodCreations got = JudgePodCreations(
      jobs, {PodVersion(11, "a", 0), PodVersion(21, "b", 1), PodVersion(22, "c", 0),
             PodVersion(31, "d", 1), PodVersion(41, "e", 1),
             PodVersion(23, "f", 0, "", WatchEventType::kAdded, /*listed=*/true)});
  EXPECT_EQ(got.seen, 5) << "a listed pod's creation was not seen";
  EXPECT_EQ(got.orphans, 1) << "e, created after its job was deleted";
  ASSERT_EQ(got.out_of_turn.size(), 2u);
  EXPECT_EQ(got.out_of_turn[0],
            "pod job-worker-c (rv 22) of attempt 0 created while the job's status.attempt was 1");
  EXPECT_EQ(got.out_of_turn[1], "pod job-worker-d (rv 31) created after its job ended Succeeded");
  // A creation inside a gap of the jobs' history is not judged.
  EXPECT_TRUE(JudgePodCreations(jobs, {PodVersion(22, "c", 0)}, {{20, 25}}).out_of_turn.empty());
}

// A pod of `gpus` GPUs in a given phase (PodVersion's pods request none).
Version GpuPod(int64_t rv, const std::string& uid, const std::string& node, int gpus,
               const std::string& phase = "Running",
               WatchEventType type = WatchEventType::kModified) {
  Version v = PodVersion(rv, uid, 0, node, type);
  v.object["spec"]["containers"] = json::array(
      {{{"name", "trainer"},
        {"resources", {{"requests", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}});
  v.object["status"] = {{"phase", phase}};
  return v;
}

TEST(ChaosInvariantsTest, GpusHeldTwiceFindsTwoGangsOnOneNodesGpus) {
  // a holds 8 of n1's 8; b, bound to n1 while a still runs, makes 12.
  const std::vector<std::string> twice =
      GpusHeldTwice({GpuPod(1, "a", "n1", 8), GpuPod(2, "b", "", 4, "Pending"),
                     GpuPod(3, "b", "n1", 4), GpuPod(4, "b", "n1", 4)},
                    8);
  ASSERT_EQ(twice.size(), 1u) << "one line per episode, not per version";
  EXPECT_EQ(twice[0], "node n1: 12 GPUs held at rv 3 (of 8), the last by pod job-worker-b");
}

TEST(ChaosInvariantsTest, GpusAreFreedByTheEndNotByTheDeletionRequest) {
  // a terminating (deletionTimestamp set, still Running) holds its GPUs: b on them is a breach.
  Version terminating = GpuPod(2, "a", "n1", 8);
  terminating.object["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z";
  EXPECT_EQ(GpusHeldTwice({GpuPod(1, "a", "n1", 8), terminating, GpuPod(3, "b", "n1", 8)}, 8)
                .size(),
            1u);
  // Deleted, Succeeded or Failed first: the GPUs are free again.
  EXPECT_TRUE(GpusHeldTwice({GpuPod(1, "a", "n1", 8),
                             GpuPod(2, "a", "n1", 8, "Running", WatchEventType::kDeleted),
                             GpuPod(3, "b", "n1", 8)},
                            8)
                  .empty());
  EXPECT_TRUE(GpusHeldTwice({GpuPod(1, "a", "n1", 8), GpuPod(2, "a", "n1", 8, "Succeeded"),
                             GpuPod(3, "b", "n1", 4), GpuPod(4, "c", "n1", 4)},
                            8)
                  .empty());
  EXPECT_TRUE(GpusHeldTwice({GpuPod(1, "a", "n1", 8), GpuPod(2, "a", "n1", 8, "Failed"),
                             GpuPod(3, "b", "n1", 8), GpuPod(4, "c", "n2", 8)},
                            8)
                  .empty());
}

TEST(ChaosInvariantsTest, GpusHeldTwiceStopsAtTheFirstGapOfThePodsHistory) {
  // a's deletion fell into the gap (10, 20]: b after it is not judged.
  EXPECT_TRUE(GpusHeldTwice({GpuPod(5, "a", "n1", 8), GpuPod(25, "b", "n1", 8)}, 8, {{10, 20}})
                  .empty());
  EXPECT_EQ(GpusHeldTwice({GpuPod(5, "a", "n1", 8), GpuPod(25, "b", "n1", 8)}, 8).size(), 1u);
}

}  // namespace
}  // namespace lockstep::chaos
