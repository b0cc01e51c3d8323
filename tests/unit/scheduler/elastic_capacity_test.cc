// Elastic capacity on the cycle's side: which jobs ask, and the answer from their pods.

#include "operator/scheduler/cycle/elastic_capacity.h"

#include <gtest/gtest.h>

#include "operator/api/time.h"
#include "tests/unit/scheduler/builders.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;
using testing::GpuNode;
using testing::Job;
using testing::JobJson;
using testing::PodOf;

const api::Time kNow = *api::ParseTime("2026-06-01T12:00:00Z");

// 8-GPU nodes n0..n<total-1>; the first `used` are full (bound pods, ours or not).
Snapshot Nodes(int total, int used) {
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < total; ++i) {
    nodes.push_back(GpuNode("n" + std::to_string(i), 8, "", "", i < used ? 8 : 0));
  }
  return Snapshot::Build(std::move(nodes));
}

TEST(NeedsCapacityTest, OnlyElasticJobsThatWaitOrRunSmall) {
  EXPECT_EQ(NeedsCapacity(*Job(JobJson(8, 0, 8)), true), CapacityNeed::kNone);
  EXPECT_EQ(NeedsCapacity(*Job(JobJson(8, 4, 8)), true), CapacityNeed::kGangDoesNotFit);
  EXPECT_EQ(NeedsCapacity(*Job(JobJson(8, 4, 8, {{"state", "Running"}, {"replicas", 6}})), false),
            CapacityNeed::kGrowBack);
  EXPECT_EQ(NeedsCapacity(*Job(JobJson(8, 4, 8, {{"state", "Running"}, {"replicas", 8}})), false),
            CapacityNeed::kNone);
  EXPECT_EQ(
      NeedsCapacity(*Job(JobJson(8, 4, 8, {{"state", "Restarting"}, {"replicas", 6}})), false),
      CapacityNeed::kNone);
  EXPECT_EQ(NeedsCapacity(*Job(JobJson(8, 4, 8)), false), CapacityNeed::kNone);
  json suspended = JobJson(8, 4, 8);
  suspended["spec"]["runPolicy"] = {{"suspend", true}};
  EXPECT_EQ(NeedsCapacity(*Job(suspended), true), CapacityNeed::kNone);
}

TEST(ComputeCapacityTest, PendingGangOfEightOnRoomForSix) {
  const JobPtr job = Job(JobJson(8, 4, 8, {{"replicas", 8}}));
  std::vector<PodPtr> pods;
  for (int i = 0; i < 8; ++i) pods.push_back(PodOf("worker", i, 0, 8));
  EXPECT_EQ(ComputeCapacity(Nodes(8, 2), *job, pods, kNow), 6);   // two nodes held by others
  EXPECT_EQ(ComputeCapacity(Nodes(8, 5), *job, pods, kNow), 0);   // 3 < minReplicas
  EXPECT_EQ(ComputeCapacity(Nodes(10, 0), *job, pods, kNow), 8);  // never above spec.replicas
}

TEST(ComputeCapacityTest, TheJobsOwnBoundPodsCountAsFree) {
  // Running at 6 on n0..n5; n6, n7 free: with its own pods given back, 8 fit.
  const JobPtr job = Job(JobJson(8, 4, 8, {{"state", "Running"}, {"replicas", 6}, {"attempt", 1}}));
  std::vector<PodPtr> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(PodOf("worker", i, 1, 8, "n" + std::to_string(i)));
  EXPECT_EQ(ComputeCapacity(Nodes(8, 6), *job, pods, kNow), 8);
  // Without them (someone else's pods on n0..n5) only 2 are free: below the minimum.
  EXPECT_EQ(ComputeCapacity(Nodes(8, 6), *job, {PodOf("worker", 0, 1, 8)}, kNow), 0);
}

TEST(ComputeCapacityTest, ExcludedNodesAreNotCapacity) {
  const JobPtr job =
      Job(JobJson(8, 4, 8,
                  {{"state", "Running"},
                   {"replicas", 6},
                   {"excludedNodes", {{{"name", "n7"}, {"until", "2026-06-01T12:10:00Z"}}}}}));
  std::vector<PodPtr> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(PodOf("worker", i, 0, 8, "n" + std::to_string(i)));
  EXPECT_EQ(ComputeCapacity(Nodes(8, 6), *job, pods, kNow), 7);
}

TEST(ComputeCapacityTest, RequestsComeFromTheCurrentAttempt) {
  // A leftover 1-GPU pod of attempt 0 beside attempt 1's pending 8-GPU workers: 8 GPUs count.
  const JobPtr job = Job(JobJson(8, 1, 8, {{"attempt", 1}}));
  const std::vector<PodPtr> pods = {PodOf("worker", 0, 0, 1), PodOf("worker", 0, 1, 8)};
  EXPECT_EQ(ComputeCapacity(Nodes(4, 1), *job, pods, kNow), 3);
  // Only old pods left (e.g. mid-restart): they still say what a worker needs.
  EXPECT_EQ(ComputeCapacity(Nodes(4, 1), *job, {PodOf("worker", 0, 0, 8)}, kNow), 3);
}

TEST(ComputeCapacityTest, OtherRolesKeepTheirFullCount) {
  json with_chief = JobJson(8, 2, 8, {{"replicas", 8}});
  with_chief["spec"]["roles"] = {
      {{"name", "chief"}, {"replicas", 1}, {"template", with_chief["spec"]["template"]}}};
  const JobPtr job = Job(with_chief);
  std::vector<PodPtr> pods = {PodOf("worker", 0, 0, 8)};
  EXPECT_EQ(ComputeCapacity(Nodes(6, 0), *job, pods, kNow), std::nullopt);  // no chief pod yet
  pods.push_back(PodOf("chief", 0, 0, 8));
  EXPECT_EQ(ComputeCapacity(Nodes(6, 0), *job, pods, kNow), 5);
}

TEST(ComputeCapacityTest, NoAnswerWithoutPodsOrForFixedSizeJobs) {
  EXPECT_EQ(ComputeCapacity(Nodes(8, 0), *Job(JobJson(8, 4, 8)), {}, kNow), std::nullopt);
  EXPECT_EQ(ComputeCapacity(Nodes(8, 0), *Job(JobJson(8, 0, 8)), {PodOf("worker", 0, 0, 8)}, kNow),
            std::nullopt);
}

}  // namespace
}  // namespace lockstep::scheduler
