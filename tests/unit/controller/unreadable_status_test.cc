// Issue 18, hole 3: a job whose status the operator cannot fully read. Before, the status was
// reset (attempt 0, counters 0): the running pods of attempt 2 looked stale and were deleted,
// and the restart budget was refilled. Now what can be read is kept, nothing is acted on, and
// only the conditions are written, Stalled=True/InvalidStatus among them.
#include <gtest/gtest.h>

#include "operator/api/codec.h"
#include "operator/api/conditions.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/plan.h"
#include "operator/controller/reconciler.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using nlohmann::json;
using testing::InAttempt;
using testing::Pod;
using testing::T0;

// The builder's job as the apiserver would send it, with `status`.
json JobObject(const json& status) {
  CachedJob base = testing::Job(2);
  json object = api::EncodeTrainingJob(base.job);
  object["metadata"]["resourceVersion"] = "77";
  object["status"] = status;
  return object;
}

const json kRunningCondition = {{"type", "Running"},         {"status", "True"},
                                {"reason", "AllPodsRunning"}, {"message", "2 pods running"},
                                {"lastTransitionTime", "2027-01-15T08:00:00Z"}};

json AttemptTwoStatus() {
  return {{"attempt", 2},
          {"state", "Running"},
          {"replicas", 2},
          {"restarts", {{"failures", 1}, {"disruptions", 1}, {"consecutive", 0}}},
          {"startTime", "2027-01-15T07:00:00Z"},
          {"conditions", json::array({kRunningCondition})}};
}

TEST(UnreadableStatusTest, ReadableStatusActsAsBefore) {
  StatusOr<CachedJob> job = DecodeCachedJob(JobObject(AttemptTwoStatus()));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_TRUE(job->status_error.empty());
  EXPECT_EQ(job->job.status.attempt, 2);
}

TEST(UnreadableStatusTest, NothingIsDeletedOrCreatedAndOnlyConditionsAreWritten) {
  json status = AttemptTwoStatus();
  const json unreadable = {{"type", ""}, {"status", "True"}, {"reason", "X"}, {"message", "m"},
                           {"lastTransitionTime", "2027-01-15T08:00:00Z"}};
  status["conditions"].push_back(unreadable);
  StatusOr<CachedJob> job = DecodeCachedJob(JobObject(status));
  ASSERT_TRUE(job.ok()) << job.status();
  // What could be read is kept.
  EXPECT_EQ(job->job.status.attempt, 2);
  EXPECT_EQ(job->job.status.restarts.failures, 1);
  EXPECT_NE(job->status_error.find("status.conditions[1].type"), std::string::npos)
      << job->status_error;
  ASSERT_EQ(job->unread_conditions.size(), 1u);

  // Both pods of attempt 2 run; one of attempt 1 is left over.
  Observed observed;
  observed.pods = {InAttempt(Pod("worker", 0, "Running"), 2),
                   InAttempt(Pod("worker", 1, "Running"), 2)};
  kube::Pod old = InAttempt(Pod("worker", 1, "Running"), 1);
  old.meta.uid = "old";
  observed.pods.push_back(old);
  observed.service_exists = true;
  const Plan plan = ComputePlan(*job, observed, T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(plan.pod_deletes.empty());
  EXPECT_TRUE(plan.pod_creates.empty());
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_FALSE(plan.create_service || plan.create_secret || plan.create_network_policy);
  EXPECT_TRUE(plan.conditions_only);
  const api::Condition* stalled =
      api::FindCondition(plan.status.conditions, api::kConditionStalled);
  ASSERT_NE(stalled, nullptr);
  EXPECT_EQ(stalled->status, api::ConditionStatus::kTrue);
  EXPECT_EQ(stalled->reason, api::kReasonInvalidStatus);
  EXPECT_NE(stalled->message.find("status.conditions[1].type"), std::string::npos);
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, api::kReasonInvalidStatus);

  // The write: conditions only (the unread one as stored), under the resourceVersion read.
  const json patch = ConditionsPatch(*job, plan.status);
  ASSERT_FALSE(patch.is_null());
  EXPECT_EQ(patch["metadata"]["resourceVersion"], "77");
  ASSERT_EQ(patch["status"].size(), 1u) << patch.dump();
  const json& written = patch["status"]["conditions"];
  EXPECT_EQ(written[0], kRunningCondition);
  EXPECT_EQ(written.back(), unreadable);
  bool has_stalled = false;
  for (const json& c : written) has_stalled |= c.value("type", "") == "Stalled";
  EXPECT_TRUE(has_stalled);

  // The next pass (the write seen) changes nothing and says nothing new.
  CachedJob again = *job;
  again.job.status = plan.status;
  const Plan second = ComputePlan(again, observed, T0(), true, PlanOptions{"l"});
  EXPECT_TRUE(second.events.empty());
  EXPECT_TRUE(ConditionsPatch(again, second.status).is_null());
}

}  // namespace
}  // namespace lockstep::controller
