// kueue::Decide, table-driven: one row per state Kueue and the job can be in.
#include "operator/kueue/gate.h"

#include <gtest/gtest.h>

#include <functional>

#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "tests/unit/kueue/kueue_test_util.h"

namespace lockstep::kueue {
namespace {

using testing::Cond;
using testing::Job;
using testing::StoredWorkload;
using Kind = WorkloadWrite::Kind;
using nlohmann::json;

constexpr char kNow[] = "2026-12-02T00:00:00Z";

struct Case {
  std::string name;
  std::function<void(api::TrainingJob&)> edit_job;
  // The stored Workloads, built from the unedited job (a job edited after its Workload was made).
  std::function<std::vector<json>(const api::TrainingJob&)> workloads;
  JobFacts facts;
  std::function<void(KueueObservation&)> edit_observed;
  // Expectations.
  bool run = false;
  std::string reason;
  std::vector<Kind> writes;
  std::function<void(const Decision&)> check;
};

std::vector<json> None(const api::TrainingJob&) { return {}; }

std::function<std::vector<json>(const api::TrainingJob&)> One(std::vector<Cond> c,
                                                              std::string cq = "") {
  return [c, cq](const api::TrainingJob& j) { return std::vector<json>{StoredWorkload(j, c, cq)}; };
}

const std::vector<Cond> kAdmitted = {{"QuotaReserved", "True", "QuotaReserved", "q"},
                                     {"Admitted", "True", "Admitted", "a"},
                                     {"PodsReady", "False", "WaitForStart",
                                      "Not all pods are ready or succeeded"}};

// The status patch among the writes (there is at most one).
json StatusPatch(const Decision& d) {
  for (const WorkloadWrite& w : d.writes) {
    if (w.kind == Kind::kPatchStatus) return w.body;
  }
  return nullptr;
}

json ConditionOf(const json& patch, const std::string& type) {
  for (const json& c : patch["status"]["conditions"]) {
    if (c["type"] == type) return c;
  }
  return nullptr;
}

std::vector<Case> Cases() {
  auto nothing = [](api::TrainingJob&) {};
  auto same = [](KueueObservation&) {};
  JobFacts no_pods;
  JobFacts running;
  running.pods_existing = 2;
  JobFacts ready = running;
  ready.pods_ready = true;
  JobFacts succeeded;
  succeeded.finished = JobFacts::Finished{true, "all done"};
  JobFacts suspended;
  suspended.suspended = true;
  return {
      {"nothing before the Workload cache synced", nothing, None, no_pods,
       [](KueueObservation& o) { o.synced = false; }, false, "WaitingForKueueCache", {}},
      {"a job without a Workload gets one", nothing, None, no_pods, same, false,
       "WorkloadCreated", {Kind::kCreate},
       [](const Decision& d) {
         const json& w = d.writes[0].body;
         EXPECT_EQ(w["metadata"]["name"], "trainingjob-train-0a1b2");
         EXPECT_EQ(w["spec"]["queueName"], "team-a");
         EXPECT_EQ(w["spec"]["podSets"][0]["count"], 2);
         EXPECT_EQ(w["spec"]["active"], true);
         EXPECT_EQ(w["metadata"]["ownerReferences"][0]["controller"], true);
       }},
      {"pods left from before are stopped before the Workload is made", nothing, None, running,
       same, false, "StoppingPods", {}},
      {"a priority class that does not exist holds the job", nothing, None, no_pods,
       [](KueueObservation& o) {
         o.priority.reset();
         o.priority_error = "PriorityClass high not found";
       },
       false, "PriorityClassNotFound", {},
       [](const Decision& d) { EXPECT_EQ(d.message, "PriorityClass high not found"); }},
      {"pending: Kueue's words, and PodsReady=False WaitForStart", nothing,
       One({{"QuotaReserved", "False", "Pending",
             "couldn't assign flavors to pod set worker: insufficient unused quota for "
             "nvidia.com/gpu in flavor gpu, 4 more needed"}}),
       no_pods, same, false, "Pending", {Kind::kPatchStatus},
       [](const Decision& d) {
         EXPECT_EQ(d.message,
                   "LocalQueue team-a: couldn't assign flavors to pod set worker: insufficient "
                   "unused quota for nvidia.com/gpu in flavor gpu, 4 more needed");
         const json c = ConditionOf(StatusPatch(d), "PodsReady");
         EXPECT_EQ(c["status"], "False");
         EXPECT_EQ(c["reason"], "WaitForStart");
         EXPECT_EQ(StatusPatch(d)["metadata"]["resourceVersion"], "7");
         // Kueue's own condition is kept as it was.
         EXPECT_EQ(ConditionOf(StatusPatch(d), "QuotaReserved")["reason"], "Pending");
       }},
      {"pending with PodsReady already written: no write", nothing,
       One({{"QuotaReserved", "False", "Pending", "no quota"},
            {"PodsReady", "False", "WaitForStart", "Not all pods are ready or succeeded"}}),
       no_pods, same, false, "Pending", {}},
      {"admitted: the flavor's node labels and tolerations for every role", nothing,
       One(kAdmitted, "team-a-cq"), no_pods, same, true, "Admitted", {},
       [](const Decision& d) {
         ASSERT_EQ(d.placements.count("worker"), 1u);
         const api::RolePlacement& p = d.placements.at("worker");
         EXPECT_EQ(p.node_selector, (std::map<std::string, std::string>{{"pool", "a100"}}));
         EXPECT_EQ(p.tolerations.size(), 1u);
         EXPECT_EQ(p.labels.at("kueue.x-k8s.io/podset"), "worker");
         EXPECT_TRUE(d.admitted);
         EXPECT_NE(d.message.find("team-a-cq"), std::string::npos) << d.message;
       }},
      {"admitted to a flavor the cache does not hold: held, says which", nothing,
       One(kAdmitted, "team-a-cq"), no_pods, [](KueueObservation& o) { o.flavors.clear(); },
       false, "AdmissionUnusable", {},
       [](const Decision& d) { EXPECT_NE(d.message.find("gpu"), std::string::npos); }},
      {"every pod ready: PodsReady=True Started", nothing, One(kAdmitted, "cq"), ready, same,
       true, "Admitted", {Kind::kPatchStatus},
       [](const Decision& d) {
         EXPECT_EQ(ConditionOf(StatusPatch(d), "PodsReady")["reason"], "Started");
         EXPECT_EQ(ConditionOf(StatusPatch(d), "PodsReady")["status"], "True");
       }},
      {"a pod lost after it ran: WaitForRecovery", nothing,
       One({{"QuotaReserved", "True"}, {"Admitted", "True"}, {"PodsReady", "True", "Started"}},
           "cq"),
       running, same, true, "Admitted", {Kind::kPatchStatus},
       [](const Decision& d) {
         EXPECT_EQ(ConditionOf(StatusPatch(d), "PodsReady")["reason"], "WaitForRecovery");
       }},
      {"ready again after recovery: Recovered", nothing,
       One({{"QuotaReserved", "True"},
            {"Admitted", "True"},
            {"PodsReady", "False", "WaitForRecovery"}},
           "cq"),
       ready, same, true, "Admitted", {Kind::kPatchStatus},
       [](const Decision& d) {
         EXPECT_EQ(ConditionOf(StatusPatch(d), "PodsReady")["reason"], "Recovered");
       }},
      {"evicted with pods left: stop them, keep the quota", nothing,
       One({{"QuotaReserved", "True"},
            {"Admitted", "True"},
            {"Evicted", "True", "Preempted", "Preempted to accommodate a higher priority"}},
           "cq"),
       running, same, false, "Evicted", {},
       [](const Decision& d) {
         EXPECT_NE(d.message.find("Preempted to accommodate"), std::string::npos) << d.message;
       }},
      {"evicted, pods gone: the admission is cleared and the Workload requeued", nothing,
       One({{"QuotaReserved", "True"},
            {"Admitted", "True"},
            {"Evicted", "True", "Preempted", "Preempted to accommodate a higher priority"}},
           "cq"),
       no_pods, same, false, "Evicted", {Kind::kPatchStatus},
       [](const Decision& d) {
         const json patch = StatusPatch(d);
         EXPECT_TRUE(patch["status"].contains("admission"));
         EXPECT_TRUE(patch["status"]["admission"].is_null());
         EXPECT_EQ(ConditionOf(patch, "QuotaReserved")["status"], "False");
         EXPECT_EQ(ConditionOf(patch, "QuotaReserved")["reason"], "Pending");
         EXPECT_EQ(ConditionOf(patch, "Admitted")["status"], "False");
         EXPECT_EQ(ConditionOf(patch, "Requeued")["status"], "True");
         EXPECT_EQ(ConditionOf(patch, "Requeued")["reason"], "Preempted");
         EXPECT_EQ(ConditionOf(patch, "QuotaReserved")["lastTransitionTime"], kNow);
       }},
      {"evicted by the PodsReady timeout: requeued by Kueue's backoff, not at once", nothing,
       One({{"QuotaReserved", "True"},
            {"Admitted", "True"},
            {"Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout"}},
           "cq"),
       no_pods, same, false, "Evicted", {Kind::kPatchStatus},
       [](const Decision& d) {
         EXPECT_EQ(ConditionOf(StatusPatch(d), "Requeued")["status"], "False");
       }},
      {"a finished job finishes its Workload", nothing, One(kAdmitted, "cq"), succeeded, same,
       true, "", {Kind::kPatchStatus},
       [](const Decision& d) {
         const json c = ConditionOf(StatusPatch(d), "Finished");
         EXPECT_EQ(c["status"], "True");
         EXPECT_EQ(c["reason"], "Succeeded");
         EXPECT_EQ(c["message"], "all done");
       }},
      {"a finished Workload is not written again", nothing,
       One({{"QuotaReserved", "True"}, {"Admitted", "True"}, {"Finished", "True", "Succeeded"}},
           "cq"),
       succeeded, same, true, "", {}},
      {"a suspended job deactivates its Workload", nothing, One(kAdmitted, "cq"), suspended,
       same, true, "Admitted", {Kind::kPatchSpec},
       [](const Decision& d) { EXPECT_EQ(d.writes[0].body["spec"]["active"], false); }},
      {"a job that grew: the old Workload goes first, then a new one is made",
       [](api::TrainingJob& j) { j.spec.replicas = 3; }, One({{"QuotaReserved", "False"}}),
       no_pods, same, false, "WorkloadOutdated", {Kind::kDelete}},
      {"a job that grew while admitted: its pods stop before the Workload goes",
       [](api::TrainingJob& j) { j.spec.replicas = 3; }, One(kAdmitted, "cq"), running, same,
       false, "WorkloadOutdated", {}},
      {"a job that grew, admitted, pods gone: the old Workload is deleted",
       [](api::TrainingJob& j) { j.spec.replicas = 3; }, One(kAdmitted, "cq"), no_pods, same,
       false, "WorkloadOutdated", {Kind::kDelete}},
      {"a request changed: the Workload is outdated too",
       [](api::TrainingJob& j) {
         j.spec.pod_template["spec"]["containers"][0] = testing::Container("8");
       },
       One({{"QuotaReserved", "False"}}), no_pods, same, false, "WorkloadOutdated",
       {Kind::kDelete}},
      {"two Workloads: the one with quota is kept, the other deleted", nothing,
       [](const api::TrainingJob& j) {
         json other = StoredWorkload(j, {{"QuotaReserved", "False"}});
         other["metadata"]["name"] = "trainingjob-train-other";
         other["metadata"]["uid"] = "other-uid";
         return std::vector<json>{other, StoredWorkload(j, kAdmitted, "cq")};
       },
       no_pods, same, true, "Admitted", {Kind::kDelete},
       [](const Decision& d) { EXPECT_EQ(d.writes[0].uid, "other-uid"); }},
  };
}

class DecideTest : public ::testing::TestWithParam<Case> {};

TEST_P(DecideTest, Row) {
  const Case& c = GetParam();
  api::TrainingJob original = Job();
  api::TrainingJob job = original;
  c.edit_job(job);
  KueueObservation observed;
  observed.synced = true;
  for (const json& w : c.workloads(original)) observed.workloads.push_back(testing::View(w));
  observed.flavors["gpu"] = Flavor{{{"pool", "a100"}},
                                   json::array({{{"key", "nvidia.com/gpu"},
                                                 {"operator", "Exists"},
                                                 {"effect", "NoSchedule"}}})};
  c.edit_observed(observed);
  const Decision d = Decide(job, observed, c.facts, kNow);
  EXPECT_EQ(d.run, c.run);
  EXPECT_EQ(d.reason, c.reason) << d.message;
  std::vector<Kind> kinds;
  for (const WorkloadWrite& w : d.writes) kinds.push_back(w.kind);
  EXPECT_EQ(kinds, c.writes);
  if (c.check) c.check(d);
}

INSTANTIATE_TEST_SUITE_P(Rows, DecideTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& row) {
                           std::string name;
                           for (char ch : row.param.name) {
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           }
                           return name;
                         });

WorkloadView Waiting(const std::string& name, int32_t priority, const std::string& created,
                     const std::string& queue = "team-a") {
  WorkloadView w;
  w.name = name;
  w.uid = name + "-uid";
  w.priority = priority;
  w.creation_timestamp = created;
  w.queue_name = queue;
  w.conditions.push_back({"QuotaReserved", "False", "Pending", "no quota", ""});
  return w;
}

TEST(QueuePositionTest, HigherPriorityThenOlderGoFirstAndOnlyWaitingOnesOfTheQueueCount) {
  const WorkloadView mine = Waiting("mine", 10, "2026-12-02T00:00:10Z");
  WorkloadView admitted = Waiting("admitted", 100, "2026-12-02T00:00:00Z");
  admitted.conditions[0].status = "True";
  WorkloadView inactive = Waiting("inactive", 100, "2026-12-02T00:00:00Z");
  inactive.active = false;
  const std::vector<WorkloadView> others = {
      Waiting("urgent", 100, "2026-12-02T00:00:20Z"),  // ahead: higher priority
      Waiting("older", 10, "2026-12-02T00:00:05Z"),    // ahead: same priority, older
      Waiting("younger", 10, "2026-12-02T00:00:30Z"),  // behind
      Waiting("low", 1, "2026-12-02T00:00:00Z"),       // behind: lower priority
      Waiting("elsewhere", 100, "2026-12-02T00:00:00Z", "team-b"),  // another queue
      admitted,
      inactive,
  };
  EXPECT_EQ(QueuePosition(mine, others), std::make_optional(std::make_pair(3, 5)));
  EXPECT_EQ(QueuePosition(mine, {}), std::make_optional(std::make_pair(1, 1)));
  EXPECT_FALSE(QueuePosition(admitted, others).has_value());
}

TEST(QueuePositionTest, APendingJobsMessageSaysItsPlace) {
  api::TrainingJob job = Job();
  KueueObservation observed;
  observed.synced = true;
  observed.workloads.push_back(testing::View(StoredWorkload(job, {{"QuotaReserved", "False", "Pending", "no quota"}})));
  observed.neighbours.push_back(Waiting("first", 1000, "2026-01-01T00:00:00Z"));
  const Decision d = Decide(job, observed, JobFacts{}, kNow);
  EXPECT_EQ(d.message, "LocalQueue team-a: no quota (2nd of 2 TrainingJobs waiting in LocalQueue team-a)");
}

}  // namespace
}  // namespace lockstep::kueue
