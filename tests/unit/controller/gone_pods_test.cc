// GonePods: what it keeps of a deleted pod, for how long, and its bounds.
#include "operator/controller/gone_pods.h"

#include <gtest/gtest.h>

#include "tests/testing/fake_clock.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using ::lockstep::testing::FakeClock;
using testing::FailedPod;
using testing::Pod;

TEST(GonePodsTest, KeepsBoundUnfinishedPodsForTheMemory) {
  FakeClock clock;
  GonePods gone(clock, std::chrono::minutes(2));
  gone.Record("ns/job", Pod("worker", 0, "Running", "node-1"));
  gone.Record("ns/job", Pod("worker", 1, "Pending", ""));      // never bound: nothing lost
  gone.Record("ns/job", Pod("worker", 2, "Succeeded", "n2"));  // done: nothing lost
  gone.Record("ns/job", FailedPod("worker", 3, 1));            // finished: nothing lost
  gone.Record("ns/job", Pod("worker", 5, "Unknown", "node-5"));
  std::vector<kube::Pod> got = gone.For("ns/job");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].meta.name, "job-worker-0");
  EXPECT_EQ(got[1].meta.name, "job-worker-5");
  EXPECT_TRUE(gone.For("ns/other").empty());
  clock.Advance(std::chrono::seconds(90));
  gone.Record("ns/job", Pod("worker", 4, "Running", "node-4"));
  clock.Advance(std::chrono::seconds(60));
  got = gone.For("ns/job");  // the first two are past the memory
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].meta.name, "job-worker-4");
  gone.Forget("ns/job");
  EXPECT_TRUE(gone.For("ns/job").empty());
  EXPECT_EQ(gone.size(), 0u);
}

TEST(GonePodsTest, IsBoundedPerJob) {
  FakeClock clock;
  GonePods gone(clock);
  for (size_t i = 0; i < kGonePerJob + 10; ++i) {
    gone.Record("ns/job", Pod("worker", static_cast<int>(i), "Running"));
    clock.Advance(std::chrono::milliseconds(1));
  }
  const std::vector<kube::Pod> got = gone.For("ns/job");
  ASSERT_EQ(got.size(), kGonePerJob);
  EXPECT_EQ(got.front().meta.name, "job-worker-10");  // the newest kept
  EXPECT_EQ(gone.size(), kGonePerJob);
}

TEST(GonePodsTest, KeepsOnlyWhatTheFailurePolicyReads) {
  kube::Pod pod = Pod("worker", 0, "Running", "node-1");
  pod.meta.labels[std::string(api::kLabelAttempt)] = "2";
  pod.meta.annotations["big"] = std::string(4096, 'x');
  pod.requests["cpu"] = 1000;
  pod.node_selector["pool"] = "a";
  pod.conditions.push_back({"DisruptionTarget", "True", "DeletionByTaintManager", "", "", ""});
  const kube::Pod kept = FailureFacts(pod);
  EXPECT_EQ(kept.meta.name, pod.meta.name);
  EXPECT_EQ(kept.meta.uid, pod.meta.uid);
  ASSERT_NE(kept.meta.ControllerRef(), nullptr);
  EXPECT_EQ(kept.meta.ControllerRef()->uid, "uid-1");
  EXPECT_EQ(kept.meta.labels.at(std::string(api::kLabelAttempt)), "2");
  EXPECT_EQ(kept.meta.labels.count(std::string(api::kLabelRole)), 0u);
  EXPECT_TRUE(kept.meta.annotations.empty());
  EXPECT_TRUE(kept.requests.empty());
  EXPECT_TRUE(kept.node_selector.empty());
  EXPECT_EQ(kept.node_name, "node-1");
  EXPECT_EQ(kept.phase, "Running");
  ASSERT_NE(kept.FindCondition("DisruptionTarget"), nullptr);
}

}  // namespace
}  // namespace lockstep::controller
