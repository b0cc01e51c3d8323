// Phase 1 of the cycle: which pending pods form a gang, by attempt; and the nodes a job avoids.

#include "operator/scheduler/cycle/gangs.h"

#include <gtest/gtest.h>

#include "operator/api/time.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;
using testing::Job;
using testing::JobJson;
using testing::PodOf;

api::Time At(const char* text) { return *api::ParseTime(text); }

CollectInputs InputsFor(const JobPtr& job, const char* now = "2026-06-01T12:00:00Z") {
  CollectInputs inputs;
  inputs.find_job = [job](const std::string& key) { return key == "ns/job" ? job : nullptr; };
  inputs.in_flight = [](const std::string&) { return false; };
  inputs.now = At(now);
  return inputs;
}

std::vector<PodPtr> Workers(int count, int attempt, int first_index = 0) {
  std::vector<PodPtr> pods;
  for (int i = first_index; i < first_index + count; ++i) {
    pods.push_back(PodOf("worker", i, attempt, 8));
  }
  return pods;
}

// Copies of `pods` as the apiserver admitted them under PriorityClass `name` of value `value`.
std::vector<PodPtr> Admitted(std::vector<PodPtr> pods, const std::string& name, int32_t value) {
  for (PodPtr& pod : pods) {
    auto admitted = std::make_shared<kube::Pod>(*pod);
    admitted->priority_class_name = name;
    admitted->priority = value;
    pod = admitted;
  }
  return pods;
}

std::vector<PodPtr> Concat(std::vector<PodPtr> a, const std::vector<PodPtr>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(CollectGangsTest, CurrentAttemptIsTheGang) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 2}}));
  const GangCollection got = CollectGangs(Workers(4, 2), InputsFor(job));
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].key, "ns/job/2");
  EXPECT_EQ(got.complete[0].request.PodCount(), 4u);
  EXPECT_EQ(got.incomplete, 0);
  EXPECT_EQ(got.stale, 0);
}

TEST(CollectGangsTest, OlderAttemptPodsAreNeverMembersNorAGang) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 2}}));
  // A whole gang of attempt 1 still pending (its deletion has not been seen yet): not placed.
  GangCollection got = CollectGangs(Workers(4, 1), InputsFor(job));
  EXPECT_TRUE(got.complete.empty());
  EXPECT_EQ(got.incomplete, 0);
  EXPECT_EQ(got.stale, 1);
  // Beside a complete current attempt, leftovers of attempts 0 and 1 change nothing.
  got = CollectGangs(Concat(Concat(Workers(2, 0), Workers(4, 1)), Workers(4, 2)), InputsFor(job));
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].key, "ns/job/2");
  EXPECT_EQ(got.complete[0].request.PodCount(), 4u);
  EXPECT_EQ(got.stale, 2);
  // Beside an incomplete current attempt, an old one does not fill it up.
  got = CollectGangs(Concat(Workers(3, 2), Workers(1, 1, 3)), InputsFor(job));
  EXPECT_TRUE(got.complete.empty());
  EXPECT_EQ(got.incomplete, 1);
  EXPECT_EQ(got.stale, 1);
}

// Found by the chaos tier (SchedulerFailoverChaosTest): a scheduler killed mid-bind leaves a gang
// split between bound and pending members that nothing ever completed. Its bound members are
// reported for undoing, unless a bind of ours is in flight, a member is missing, or the job is
// suspended.
TEST(CollectGangsTest, AGangSplitBetweenBoundAndPendingIsALeftover) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 1}}));
  const std::vector<PodPtr> bound = {PodOf("worker", 0, 1, 8, "n0"),
                                     PodOf("worker", 1, 1, 8, "n1")};
  GangCollection got = CollectGangs(Concat(bound, Workers(2, 1, 2)), InputsFor(job));
  EXPECT_TRUE(got.complete.empty());
  EXPECT_EQ(got.incomplete, 1);
  ASSERT_EQ(got.leftovers.size(), 1u);
  EXPECT_EQ(got.leftovers[0].key, "ns/job/1");
  EXPECT_EQ(got.leftovers[0].bound, bound);

  CollectInputs binding = InputsFor(job);
  binding.in_flight = [](const std::string& key) { return key == "ns/job/1"; };
  EXPECT_TRUE(CollectGangs(Concat(bound, Workers(2, 1, 2)), binding).leftovers.empty());
  // One member not created yet: the controller is still at it.
  EXPECT_TRUE(CollectGangs(Concat(bound, Workers(1, 1, 2)), InputsFor(job)).leftovers.empty());
  // A whole gang bound, or an older attempt's bound pods beside a pending gang: no leftover.
  EXPECT_TRUE(
      CollectGangs(bound, InputsFor(Job(JobJson(2, 0, 8, {{"attempt", 1}})))).leftovers.empty());
  const std::vector<PodPtr> old_bound = {PodOf("worker", 0, 0, 8, "n0")};
  EXPECT_TRUE(CollectGangs(Concat(old_bound, Workers(3, 1, 1)), InputsFor(job)).leftovers.empty());
  json suspended = JobJson(4, 0, 8, {{"attempt", 1}});
  suspended["spec"]["runPolicy"] = {{"suspend", true}};
  EXPECT_TRUE(
      CollectGangs(Concat(bound, Workers(2, 1, 2)), InputsFor(Job(suspended))).leftovers.empty());
}

// Hot spares (docs/failures.md "Hot spares"): the first gang includes the spare pods, all or
// none; a replacement spare pending beside the running gang is placed alone, never undone as
// a leftover, and never preempts.
TEST(CollectGangsTest, SparesArePlacedWithTheGangAndRefilledAlone) {
  json spared = JobJson(3, 0, 8, {{"attempt", 1}});
  spared["spec"]["failurePolicy"] = {{"spareReplicas", 1}};
  const JobPtr job = Job(spared);
  // The gang without its spare is incomplete; with it, one gang of 4: workers first.
  EXPECT_TRUE(CollectGangs(Workers(3, 1), InputsFor(job)).complete.empty());
  GangCollection got =
      CollectGangs(Concat(Workers(3, 1), {PodOf("spare", 0, 1, 8)}), InputsFor(job));
  ASSERT_EQ(got.complete.size(), 1u);
  ASSERT_EQ(got.complete[0].request.roles.size(), 2u);
  EXPECT_EQ(got.complete[0].request.roles[0].name, "worker");
  EXPECT_EQ(got.complete[0].request.roles[1].name, "spare");
  EXPECT_EQ(got.complete[0].request.PodCount(), 4u);

  // Spare 0 took node-rank 2 (worker 2 deleted); spare 1 pending beside the bound gang.
  const std::vector<PodPtr> bound = {PodOf("worker", 0, 1, 8, "n0"), PodOf("worker", 1, 1, 8, "n1"),
                                     PodOf("spare", 0, 1, 8, "n3")};
  got = CollectGangs(Concat(bound, {PodOf("spare", 1, 1, 8)}), InputsFor(job));
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_TRUE(got.leftovers.empty());
  EXPECT_EQ(got.complete[0].request.PodCount(), 1u);
  EXPECT_EQ(got.complete[0].request.roles[0].name, "spare");
  EXPECT_EQ(got.complete[0].request.preemption_policy, PreemptionPolicy::kNever);

  // Without spares in the spec the same pods are a split gang's leftover, as before.
  const JobPtr plain = Job(JobJson(4, 0, 8, {{"attempt", 1}}));
  got = CollectGangs(Concat(bound, {PodOf("spare", 1, 1, 8)}), InputsFor(plain));
  EXPECT_TRUE(got.complete.empty());
}

TEST(CollectGangsTest, NewerAttemptThanTheCachedStatusWaits) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 1}}));
  const GangCollection got = CollectGangs(Workers(4, 2), InputsFor(job));
  EXPECT_TRUE(got.complete.empty());
  EXPECT_EQ(got.incomplete, 1);
  EXPECT_EQ(got.stale, 0);
}

TEST(CollectGangsTest, PodsWithoutAUsableAttemptLabelAreIgnored) {
  const JobPtr job = Job(JobJson(1, 0, 8));
  for (const char* label : {"", "one", "-1"}) {
    auto pod = std::make_shared<kube::Pod>(*PodOf("worker", 0, 0, 8));
    pod->meta.labels["lockstep.dev/attempt"] = label;
    const GangCollection got = CollectGangs({pod}, InputsFor(job));
    EXPECT_TRUE(got.complete.empty()) << label;
    EXPECT_EQ(got.stale, 1) << label;
  }
}

TEST(CollectGangsTest, ElasticGangIsStatusReplicasWide) {
  const JobPtr job = Job(JobJson(8, 4, 8, {{"replicas", 6}, {"attempt", 1}}));
  EXPECT_TRUE(CollectGangs(Workers(8, 1), InputsFor(job)).complete.empty());
  EXPECT_EQ(CollectGangs(Workers(6, 1), InputsFor(job)).complete.size(), 1u);
}

TEST(CollectGangsTest, ExcludedNodesFromStatusUntilTheirCoolDownEnds) {
  json job_json = JobJson(
      1, 0, 8,
      {{"excludedNodes",
        {{{"name", "lost-a"}, {"reason", "NodeLost"}, {"until", "2026-06-01T12:05:00Z"}},
         {{"name", "lost-b"}, {"reason", "NodeLost"}, {"until", "2026-06-01T11:59:00Z"}},
         {{"name", "lost-c"}, {"reason", "NodeLost"}, {"until", "2026-06-01T12:05:00Z"}}}}});
  // The annotation also names lost-a: listed once; it has no expiry of its own.
  job_json["metadata"]["annotations"] = {{"lockstep.dev/excluded-nodes", "by-hand, lost-a"}};
  const JobPtr job = Job(job_json);
  GangCollection got = CollectGangs(Workers(1, 0), InputsFor(job, "2026-06-01T12:00:00Z"));
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].request.excluded_nodes,
            (std::vector<std::string>{"by-hand", "lost-a", "lost-c"}));
  got = CollectGangs(Workers(1, 0), InputsFor(job, "2026-06-01T12:05:00Z"));  // until == now
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].request.excluded_nodes,
            (std::vector<std::string>{"by-hand", "lost-a"}));
}

TEST(ClusterObjectsTest, DecodesWhatTheSchedulerReadsFromStatus) {
  const JobPtr job = Job(
      JobJson(8, 4, 8,
              {{"state", "Running"},
               {"replicas", 6},
               {"attempt", 3},
               {"capacity", {{"feasibleReplicas", 6}, {"observedTime", "2026-06-01T12:00:00Z"}}},
               {"excludedNodes", {{{"name", "n1"}, {"until", "2026-06-01T12:00:00Z"}}}}}));
  EXPECT_EQ(job->state, api::JobState::kRunning);
  EXPECT_EQ(job->status_replicas, 6);
  EXPECT_EQ(job->status_attempt, 3);
  ASSERT_TRUE(job->capacity.has_value());
  EXPECT_EQ(job->capacity->feasible_replicas, 6);
  ASSERT_EQ(job->excluded_nodes.size(), 1u);
  EXPECT_EQ(ExcludedNodes(*job, At("2026-06-01T11:00:00Z")), std::vector<std::string>{"n1"});
  EXPECT_TRUE(ExcludedNodes(*job, At("2026-06-01T13:00:00Z")).empty());
}

std::vector<PodPtr> BoundWorkers(int count, int attempt) {
  std::vector<PodPtr> pods;
  for (int i = 0; i < count; ++i)
    pods.push_back(PodOf("worker", i, attempt, 8, "n" + std::to_string(i)));
  return pods;
}

TEST(CollectRunningGangsTest, AWholeBoundGangOfTheCurrentAttemptIsACandidate) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 2}}));
  const RunningGangs got =
      CollectRunningGangs(Admitted(BoundWorkers(4, 2), "batch", 7), InputsFor(job));
  ASSERT_EQ(got.gangs.size(), 1u);
  EXPECT_EQ(got.gangs[0].job_key, "ns/job");
  EXPECT_EQ(got.gangs[0].priority, 7);
  ASSERT_EQ(got.gangs[0].pods.size(), 4u);
  EXPECT_EQ(got.gangs[0].pods[3].node, "n3");
  EXPECT_EQ(got.gangs[0].pods[3].requests.Get("nvidia.com/gpu"), 8);
  EXPECT_EQ(got.keys[0], "ns/job/2");
  EXPECT_EQ(got.pods[0].size(), 4u);
}

TEST(CollectRunningGangsTest, NeverAPartialGang) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 2}}));
  // A member still pending.
  EXPECT_TRUE(CollectRunningGangs(Concat(BoundWorkers(3, 2), Workers(1, 2, 3)), InputsFor(job))
                  .gangs.empty());
  // A member missing.
  EXPECT_TRUE(CollectRunningGangs(BoundWorkers(3, 2), InputsFor(job)).gangs.empty());
  // A member terminating: the gang is leaving already.
  std::vector<PodPtr> pods = BoundWorkers(4, 2);
  auto leaving = std::make_shared<kube::Pod>(*pods[1]);
  leaving->meta.deletion_timestamp = "2026-06-01T12:00:00Z";
  pods[1] = leaving;
  EXPECT_TRUE(CollectRunningGangs(pods, InputsFor(job)).gangs.empty());
  // An older attempt, a gang in flight, a suspended job.
  EXPECT_TRUE(CollectRunningGangs(BoundWorkers(4, 1), InputsFor(job)).gangs.empty());
  CollectInputs binding = InputsFor(job);
  binding.in_flight = [](const std::string& key) { return key == "ns/job/2"; };
  EXPECT_TRUE(CollectRunningGangs(BoundWorkers(4, 2), binding).gangs.empty());
  nlohmann::json suspended = JobJson(4, 0, 8, {{"attempt", 2}});
  suspended["spec"]["runPolicy"] = {{"suspend", true}};
  EXPECT_TRUE(CollectRunningGangs(BoundWorkers(4, 2), InputsFor(Job(suspended))).gangs.empty());
}

TEST(CollectGangsTest, PreemptionPolicyNeverComesFromThePriorityClass) {
  const JobPtr job = Job(JobJson(2, 0, 8, {{"attempt", 1}}));
  CollectInputs inputs = InputsFor(job);
  EXPECT_EQ(CollectGangs(Workers(2, 1), inputs).complete.at(0).request.preemption_policy,
            PreemptionPolicy::kPreemptLowerPriority);
  inputs.never_preempts = [](const std::string&) { return true; };
  EXPECT_EQ(CollectGangs(Workers(2, 1), inputs).complete.at(0).request.preemption_policy,
            PreemptionPolicy::kNever);
}

TEST(ClusterObjectsTest, DecodesPreemptionPolicyAndThePreemptedCondition) {
  StatusOr<PriorityClassInfo> never = DecodePriorityClass(
      {{"metadata", {{"name", "batch"}}}, {"value", 10}, {"preemptionPolicy", "Never"}});
  ASSERT_TRUE(never.ok());
  EXPECT_TRUE(never->never_preempts);
  StatusOr<PriorityClassInfo> preempting =
      DecodePriorityClass({{"metadata", {{"name", "urgent"}}},
                           {"value", 10},
                           {"preemptionPolicy", "PreemptLowerPriority"}});
  ASSERT_TRUE(preempting.ok());
  EXPECT_FALSE(preempting->never_preempts);
  const JobPtr job = Job(JobJson(2, 0, 8,
                                 {{"conditions",
                                   {{{"type", "Preempted"},
                                     {"status", "True"},
                                     {"reason", "PreemptedByHigherPriority"},
                                     {"message", "preempted by ns/high"},
                                     {"lastTransitionTime", "2026-06-01T12:00:00Z"}}}}}));
  ASSERT_TRUE(job->preempted.has_value());
  EXPECT_EQ(job->preempted->message, "preempted by ns/high");
}

// Issue 44: the job's spec.priorityClassName is not what ranks the gang; its pods' admitted
// priority is. A job claiming "high" whose pods were admitted at 10 asks as 10, and so preempts
// nobody above 10; a victim counts as its strongest pod.
TEST(GangPriorityTest, APendingGangAsksWithItsWeakestPodsAdmittedPriority) {
  nlohmann::json claims_high = JobJson(4, 0, 8, {{"attempt", 1}});
  claims_high["spec"]["priorityClassName"] = "high";
  const JobPtr job = Job(claims_high);
  std::vector<PodPtr> pods = Admitted(Workers(4, 1), "low", 10);
  pods[2] = Admitted({pods[2]}, "lower", 3)[0];
  const GangCollection got = CollectGangs(pods, InputsFor(job));
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].request.priority, 3);
}

TEST(GangPriorityTest, ARunningGangDefendsWithItsStrongestPod) {
  const JobPtr job = Job(JobJson(4, 0, 8, {{"attempt", 2}}));
  std::vector<PodPtr> pods = Admitted(BoundWorkers(4, 2), "low", 10);
  pods[1] = Admitted({pods[1]}, "high", 1000)[0];
  const RunningGangs got = CollectRunningGangs(pods, InputsFor(job));
  ASSERT_EQ(got.gangs.size(), 1u);
  EXPECT_EQ(got.gangs[0].priority, 1000);
}

TEST(GangPriorityTest, APodWhoseClassNeverPreemptsKeepsTheGangFromPreempting) {
  nlohmann::json spec = JobJson(2, 0, 8, {{"attempt", 1}});
  spec["spec"]["priorityClassName"] = "preempting";
  const JobPtr job = Job(spec);
  CollectInputs inputs = InputsFor(job);
  inputs.never_preempts = [](const std::string& name) { return name == "polite"; };
  GangCollection got = CollectGangs(Admitted(Workers(2, 1), "preempting", 100), inputs);
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].request.preemption_policy, PreemptionPolicy::kPreemptLowerPriority);
  std::vector<PodPtr> pods = Admitted(Workers(2, 1), "preempting", 100);
  pods[0] = Admitted({pods[0]}, "polite", 100)[0];
  got = CollectGangs(pods, inputs);
  ASSERT_EQ(got.complete.size(), 1u);
  EXPECT_EQ(got.complete[0].request.preemption_policy, PreemptionPolicy::kNever);
}

}  // namespace
}  // namespace lockstep::scheduler
