// ComputePlan for a job Kueue manages: held (state Queued, pods stopped, nothing created) until
// its Workload is admitted, then planned as any job with the admitted flavors on its pods.
#include <gtest/gtest.h>

#include "operator/api/conditions.h"
#include "operator/api/enums.h"
#include "operator/controller/plan.h"
#include "operator/kueue/workload.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using nlohmann::json;
using testing::Job;
using testing::Pod;
using testing::T0;

CachedJob KueueJob() {
  CachedJob c = Job();
  c.job.metadata.labels[std::string(kueue::kQueueNameLabel)] = "team-a";
  return c;
}

// The Workload of `job` with these conditions and, when admitted, flavor "gpu" everywhere.
kueue::WorkloadView Workload(const api::TrainingJob& job, bool admitted, bool evicted = false) {
  json w = kueue::BuildWorkload(job, 0);
  w["metadata"]["uid"] = "wl-uid";
  w["metadata"]["resourceVersion"] = "3";
  w["metadata"]["ownerReferences"][0]["uid"] = job.metadata.uid;
  json conditions = json::array();
  auto add = [&](const char* type, bool value, const char* reason, const char* message) {
    conditions.push_back({{"type", type}, {"status", value ? "True" : "False"},
                          {"reason", reason}, {"message", message}, {"observedGeneration", 0},
                          {"lastTransitionTime", "2026-12-01T00:00:00Z"}});
  };
  add("QuotaReserved", admitted, admitted ? "QuotaReserved" : "Pending",
      admitted ? "Quota reserved in ClusterQueue cq" : "insufficient quota for nvidia.com/gpu");
  add("Admitted", admitted, admitted ? "Admitted" : "NoReservation", "x");
  if (evicted) add("Evicted", true, "Preempted", "Preempted to accommodate a higher priority");
  w["status"]["conditions"] = conditions;
  if (admitted) {
    w["status"]["admission"] = {
        {"clusterQueue", "cq"},
        {"podSetAssignments",
         json::array({{{"name", "worker"}, {"flavors", {{"nvidia.com/gpu", "gpu"}}}}})}};
  }
  return kueue::DecodeWorkload(w).value();
}

Observed WithKueue(std::vector<kueue::WorkloadView> workloads, std::vector<kube::Pod> pods = {}) {
  Observed o;
  o.service_exists = o.network_policy_exists = true;
  o.pods = std::move(pods);
  kueue::KueueObservation k;
  k.synced = true;
  k.workloads = std::move(workloads);
  k.flavors["gpu"] = kueue::Flavor{{{"pool", "a100"}}, json::array()};
  o.kueue = std::move(k);
  return o;
}

TEST(KueuePlanTest, AJobWithoutAWorkloadIsQueuedAndGetsOne) {
  const CachedJob job = KueueJob();
  const Plan plan = ComputePlan(job, WithKueue({}), T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_EQ(plan.status.state, api::JobState::kQueued);
  ASSERT_EQ(plan.workload_writes.size(), 1u);
  EXPECT_EQ(plan.workload_writes[0].kind, kueue::WorkloadWrite::Kind::kCreate);
  const api::Condition* admitted =
      api::FindCondition(plan.status.conditions, api::kConditionAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->status, api::ConditionStatus::kFalse);
  EXPECT_FALSE(plan.status.start_time.has_value());
}

TEST(KueuePlanTest, APendingWorkloadSaysKueuesReasonInTheStatus) {
  const CachedJob job = KueueJob();
  const Plan plan = ComputePlan(job, WithKueue({Workload(job.job, false)}), T0(), true,
                                PlanOptions{"l"});
  EXPECT_EQ(plan.status.state, api::JobState::kQueued);
  EXPECT_EQ(plan.status.reason, "Pending");
  EXPECT_EQ(plan.status.message, "LocalQueue team-a: insufficient quota for nvidia.com/gpu");
  EXPECT_TRUE(plan.pod_creates.empty());
}

TEST(KueuePlanTest, AdmittedPodsCarryTheFlavorsNodeLabels) {
  const CachedJob job = KueueJob();
  const Plan plan =
      ComputePlan(job, WithKueue({Workload(job.job, true)}), T0(), true, PlanOptions{"l"});
  ASSERT_EQ(plan.pod_creates.size(), 2u);
  for (const json& pod : plan.pod_creates) {
    EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "a100");
    EXPECT_EQ(pod["metadata"]["labels"]["kueue.x-k8s.io/podset"], "worker");
  }
  ASSERT_FALSE(plan.events.empty());
  EXPECT_EQ(plan.events[0].reason, "Admitted");
  EXPECT_TRUE(api::IsConditionTrue(plan.status.conditions, api::kConditionAdmitted));
}

// A started Kueue job whose stored Admitted condition is `status` with `reason`.
CachedJob StartedKueueJob(api::ConditionStatus status, const std::string& reason = "") {
  CachedJob job = KueueJob();
  job.job.status.start_time = T0();
  api::Condition admitted;
  admitted.type = std::string(api::kConditionAdmitted);
  admitted.status = status;
  admitted.reason = reason;
  job.job.status.conditions.push_back(admitted);
  return job;
}

// Its Workload admitted and then evicted, its two pods running.
Observed EvictedWithTwoPods(const CachedJob& job) {
  return WithKueue({Workload(job.job, true, true)},
                   {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")});
}

TEST(KueuePlanTest, AnEvictedJobsPodsAreDeletedWithTheirGraceAndNothingCounts) {
  const CachedJob job = StartedKueueJob(api::ConditionStatus::kTrue);
  const Plan plan = ComputePlan(job, EvictedWithTwoPods(job), T0(), true, PlanOptions{"l"});
  ASSERT_EQ(plan.pod_deletes.size(), 2u);
  EXPECT_FALSE(plan.pod_deletes[0].grace_period_seconds.has_value());  // their own grace
  EXPECT_EQ(plan.status.state, api::JobState::kQueued);
  EXPECT_EQ(plan.status.reason, "Evicted");
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_EQ(plan.status.restarts.failures + plan.status.restarts.disruptions, 0);
  ASSERT_FALSE(plan.events.empty());
  EXPECT_EQ(plan.events[0].reason, "Evicted");
  EXPECT_TRUE(plan.workload_writes.empty());  // the quota is kept until the pods are gone
}

// The pass that created the pods writes Admitted=True after its creates; when that write lost
// to the scheduler's and Kueue evicted the job before the next pass, the stored condition still
// says what it said before admission. The eviction is an event all the same, and once the
// stored condition says Evicted, the passes that wait for the pods to go record nothing more.
TEST(KueuePlanTest, AnEvictionIsAnEventOnceEvenIfAdmittedWasNeverStored) {
  CachedJob job = StartedKueueJob(api::ConditionStatus::kFalse, "Pending");
  const Observed evicted = EvictedWithTwoPods(job);
  const Plan first = ComputePlan(job, evicted, T0(), true, PlanOptions{"l"});
  ASSERT_EQ(first.events.size(), 1u);
  EXPECT_EQ(first.events[0].reason, "Evicted");
  EXPECT_EQ(first.pod_deletes.size(), 2u);

  job.job.status.conditions[0].reason = "Evicted";
  const Plan later = ComputePlan(job, evicted, T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(later.events.empty()) << later.events[0].reason;
}

TEST(KueuePlanTest, WithoutTheKueueObservationTheLabelChangesNothing) {
  const CachedJob job = KueueJob();
  Observed o;
  o.service_exists = o.network_policy_exists = true;
  const Plan plan = ComputePlan(job, o, T0(), true, PlanOptions{"l"});
  EXPECT_EQ(plan.pod_creates.size(), 2u);
  EXPECT_EQ(api::FindCondition(plan.status.conditions, api::kConditionAdmitted), nullptr);
}

}  // namespace
}  // namespace lockstep::controller
