// Hot spares in ComputePlan (spare_plan.h): which pods the plan sees as the gang, which spare
// indexes stand by, what is recorded from node 0's answer, when a restart waits for it, and the
// whole pass: a promoted spare means no gang restart, the lost pod deleted and a replacement spare
// created; without a spare standing by the restart path is today's.
#include "operator/controller/spare_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;
using testing::Job;
using testing::LostNode;
using testing::Pod;
using testing::T0;

std::vector<std::string> Names(const std::vector<kube::Pod>& pods) {
  std::vector<std::string> out;
  for (const kube::Pod& p : pods) out.push_back(p.meta.name);
  return out;
}

std::string RoleOf(const kube::Pod& pod) { return pod.meta.labels.at("lockstep.dev/role"); }
std::string IndexOf(const kube::Pod& pod) {
  return pod.meta.labels.at("lockstep.dev/replica-index");
}

CachedJob SpareJob(int replicas = 3, int spares = 1) {
  CachedJob job = Job(replicas);
  job.job.spec.failure_policy.spare_replicas = spares;
  return job;
}

TEST(SparePlanTest, SplitSparesTable) {
  const api::TrainingJobSpec spec = SpareJob(3, 2).job.spec;
  const std::vector<kube::Pod> pods = {Pod("worker", 0, "Running"), Pod("worker", 1, "Running"),
                                       Pod("worker", 2, "Running", "node-lost"),
                                       Pod("spare", 0, "Running"), Pod("spare", 1, "Running")};
  struct Case {
    const char* name;
    std::vector<api::SpareServing> serving;
    std::vector<std::string> gang, standby, replaced;
  };
  const Case cases[] = {
      {"no promotion: spares stand by",
       {},
       {"job-worker-0", "job-worker-1", "job-worker-2"},
       {"job-spare-0", "job-spare-1"},
       {}},
      {"spare 0 serves node-rank 2",
       {{2, 0, "job-spare-0", 1}},
       {"job-worker-0", "job-worker-1", "job-spare-0"},
       {"job-spare-1"},
       {"job-worker-2"}},
      {"both serve",
       {{2, 1, "job-spare-1", 1}, {1, 0, "job-spare-0", 2}},
       {"job-worker-0", "job-spare-0", "job-spare-1"},
       {},
       {"job-worker-1", "job-worker-2"}},
      {"a serving entry outside the gang is ignored",
       {{7, 0, "job-spare-0", 1}},
       {"job-worker-0", "job-worker-1", "job-worker-2"},
       {"job-spare-0", "job-spare-1"},
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const SpareView view = SplitSpares(spec, pods, c.serving);
    EXPECT_EQ(Names(view.gang), c.gang);
    EXPECT_EQ(Names(view.standby), c.standby);
    EXPECT_EQ(Names(view.replaced), c.replaced);
  }
  // The promoted spare is node-rank 2's pod to every other step: labelled as worker 2.
  const SpareView view = SplitSpares(spec, pods, {{2, 0, "job-spare-0", 1}});
  EXPECT_EQ(RoleOf(view.gang[2]), "worker");
  EXPECT_EQ(IndexOf(view.gang[2]), "2");
  EXPECT_EQ(view.gang[2].meta.uid, "pod-uid-spare0");
}

TEST(SparePlanTest, WantedSpareIndexesSkipThoseServing) {
  EXPECT_EQ(WantedSpareIndexes(0, {}), (std::set<int32_t>{}));
  EXPECT_EQ(WantedSpareIndexes(2, {}), (std::set<int32_t>{0, 1}));
  EXPECT_EQ(WantedSpareIndexes(1, {{2, 0, "job-spare-0", 1}}), (std::set<int32_t>{1}));
  EXPECT_EQ(WantedSpareIndexes(2, {{2, 0, "s0", 1}, {1, 2, "s2", 2}}),
            (std::set<int32_t>{1, 3}));
}

LauncherObservation Answer(uint32_t standby, uint32_t promotions,
                           std::vector<protocol::SpareServing> serving = {}) {
  LauncherObservation obs;
  obs.pod_uid = "pod-uid-worker0";
  obs.answered = true;
  obs.status.round = promotions;
  obs.status.complete = obs.status.running = true;
  obs.status.members = 3;
  obs.status.standby_spares = standby;
  obs.status.promotions = promotions;
  obs.status.serving = std::move(serving);
  return obs;
}

TEST(SparePlanTest, RecordSparesCountsEachPromotionOnce) {
  CachedJob job = SpareJob();
  SpareRecord first = RecordSpares(job.job, Answer(1, 0));
  ASSERT_TRUE(first.status);
  EXPECT_EQ(first.status->desired, 1);
  EXPECT_EQ(first.status->ready, 1);
  EXPECT_EQ(first.new_promotions, 0);
  job.job.status.spares = first.status;

  SpareRecord promoted = RecordSpares(job.job, Answer(0, 1, {{2, 0, 1, "h"}}));
  EXPECT_EQ(promoted.new_promotions, 1);
  ASSERT_EQ(promoted.newly_serving.size(), 1u);
  EXPECT_EQ(promoted.newly_serving[0], (api::SpareServing{2, 0, "job-spare-0", 1}));
  EXPECT_EQ(promoted.status->promotions, 1);
  EXPECT_EQ(promoted.status->ready, 0);
  job.job.status.spares = promoted.status;

  // The same answer again (or none): nothing new.
  SpareRecord again = RecordSpares(job.job, Answer(1, 1, {{2, 0, 1, "h"}}));
  EXPECT_EQ(again.new_promotions, 0);
  EXPECT_TRUE(again.newly_serving.empty());
  EXPECT_EQ(again.status->ready, 1);
  SpareRecord silent = RecordSpares(job.job, std::nullopt);
  EXPECT_EQ(silent.status, job.job.status.spares);

  // A new attempt (a new node-0 server, counting from 0): the job's total stays.
  job.job.status.attempt = 1;
  SpareRecord next = RecordSpares(job.job, Answer(1, 1, {{1, 1, 2, "h"}}));
  EXPECT_EQ(next.status->attempt, 1);
  EXPECT_EQ(next.new_promotions, 1);
  EXPECT_EQ(next.status->promotions, 2);

  EXPECT_FALSE(RecordSpares(Job(3).job, Answer(0, 0)).status);  // no spares, never had
}

// status.spares.promotions (read back from the CRD, at most INT32_MAX) plus promotions node 0
// reports (at most protocol::kMaxCounter, 2^24, an attempt), attempt after attempt: held at
// INT32_MAX instead of wrapping.
TEST(SparePlanTest, RecordSparesPromotionsSaturate) {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr uint32_t kWire = protocol::kMaxCounter;
  CachedJob job = SpareJob();
  job.job.status.spares = api::SpareStatus{};
  job.job.status.spares->desired = 1;
  job.job.status.spares->promotions = kMax - 3;
  for (int32_t attempt = 0; attempt < 200; ++attempt) {
    job.job.status.attempt = attempt;  // a new node-0 server each attempt, counting from 0
    SpareRecord r = RecordSpares(job.job, Answer(0, kWire));
    ASSERT_TRUE(r.status);
    EXPECT_EQ(r.new_promotions, static_cast<int32_t>(kWire));
    ASSERT_EQ(r.status->promotions, kMax) << "attempt " << attempt;
    job.job.status.spares = r.status;
  }
}

TEST(SparePlanTest, NeedsPromotionCheckTable) {
  struct Case {
    const char* name;
    int ready;
    std::vector<kube::Pod> gang;
    bool want;
  };
  const std::map<std::string, NodeVerdict> lost = {
      {"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed")}};
  const Case cases[] = {
      {"a worker on a lost node, a spare ready", 1,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running", "node-lost")}, true},
      {"a failed worker, a spare ready", 1,
       {Pod("worker", 0, "Running"), testing::FailedPod("worker", 1, 137)}, true},
      {"no spare ready", 0,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running", "node-lost")}, false},
      {"node 0 lost: no spare replaces it", 1,
       {Pod("worker", 0, "Running", "node-lost"), Pod("worker", 1, "Running")}, false},
      {"more lost than ready", 1,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running", "node-lost"),
        Pod("worker", 2, "Running", "node-lost")},
       false},
      {"nothing lost", 1, {Pod("worker", 0, "Running"), Pod("worker", 1, "Running")}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CachedJob job = SpareJob();
    job.job.status.spares = api::SpareStatus{1, c.ready, 0, 0, 0, {}};
    EXPECT_EQ(NeedsPromotionCheck(job.job, c.gang, lost), c.want);
  }
}

// --- The whole pass. ---

std::vector<kube::Pod> Gang(const std::string& node_of_2 = "node-1") {
  std::vector<kube::Pod> pods = {Pod("worker", 0, "Running"), Pod("worker", 1, "Running"),
                                 Pod("worker", 2, "Running", node_of_2),
                                 Pod("spare", 0, "Running", "node-3")};
  for (size_t i = 0; i < pods.size(); ++i) pods[i].pod_ip = "10.0.0." + std::to_string(10 + i);
  return pods;
}

Plan RunPass(const CachedJob& job, const std::vector<kube::Pod>& pods, api::Time now,
             std::optional<LauncherObservation> launchers,
             std::map<std::string, NodeVerdict> lost = {}) {
  Observed observed{pods, true, std::move(lost), std::move(launchers)};
  return ComputePlan(job, observed, now, true, PlanOptions{"launcher:test", seconds(300)});
}

std::vector<std::string> CreatedNames(const Plan& plan) {
  std::vector<std::string> out;
  for (const auto& pod : plan.pod_creates) out.push_back(pod["metadata"]["name"]);
  return out;
}

TEST(SparePlanTest, TheGangIsCreatedWithItsSpares) {
  const Plan plan = RunPass(SpareJob(3, 1), {}, T0(), std::nullopt);
  EXPECT_EQ(CreatedNames(plan),
            (std::vector<std::string>{"job-worker-0", "job-worker-1", "job-worker-2",
                                      "job-spare-0"}));
}

// A running 3-worker gang with one spare standing by, as recorded.
CachedJob RunningSpareJob() {
  CachedJob job = SpareJob(3, 1);
  job.job.status.start_time = T0();
  job.job.status = RunPass(job, Gang(), T0(), Answer(1, 0)).status;
  EXPECT_TRUE(job.job.status.spares);
  return job;
}

// The pass's table (plan.h): the wait for node 0's answer claims the pass at step AwaitingSpare.
TEST(SparePlanTest, TheWaitForNodeZerosAnswerClaimsThePassAtStepAwaitingSpare) {
  std::map<std::string, NodeVerdict> lost = {
      {"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed for 21s")}};
  lost["node-lost"].failed_at = T0() + seconds(10);
  const Plan waiting =
      RunPass(RunningSpareJob(), Gang("node-lost"), T0() + seconds(31), Answer(1, 0), lost);
  EXPECT_EQ(waiting.decided_by, "AwaitingSpare");
}

TEST(SparePlanTest, ALostWorkerWaitsForNodeZerosAnswerThenThePromotionMeansNoRestart) {
  const CachedJob job = RunningSpareJob();
  ASSERT_EQ(job.job.status.spares->ready, 1);
  std::map<std::string, NodeVerdict> lost = {
      {"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed for 21s")}};
  lost["node-lost"].failed_at = T0() + seconds(10);
  const std::vector<kube::Pod> pods = Gang("node-lost");

  // Node 0's last answer predates the promotion: the restart waits and asks again.
  const Plan waiting = RunPass(job, pods, T0() + seconds(31), Answer(1, 0), lost);
  EXPECT_FALSE(waiting.restart.has_value());
  ASSERT_TRUE(waiting.launcher_poll.has_value());
  EXPECT_EQ(*waiting.launcher_poll, "job-worker-0");
  ASSERT_TRUE(waiting.requeue_after.has_value());
  EXPECT_EQ(*waiting.requeue_after, seconds(1));

  // The answer names the promotion: no restart, the lost pod force-deleted, a new spare.
  LauncherObservation answer = Answer(0, 1, {{2, 0, 1, "h"}});
  // Round 0 lost node-rank 2 at 10.4 s; round 1 ran from 13.9 s (protocol version 9).
  const auto unix_ms = [](api::Time t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count());
  };
  answer.status.last_failure = protocol::RoundFailure{};
  answer.status.last_failure->reason = protocol::FailureReason::kPeerLost;
  answer.status.last_failure->failed_unix_ms = unix_ms(T0() + std::chrono::milliseconds(10'400));
  answer.status.running_since_unix_ms = unix_ms(T0() + std::chrono::milliseconds(13'900));
  const Plan promoted = RunPass(job, pods, T0() + seconds(32), answer, lost);
  EXPECT_FALSE(promoted.restart.has_value());
  EXPECT_EQ(promoted.spare_promotions, 1);
  ASSERT_TRUE(promoted.status.spares);
  EXPECT_EQ(promoted.status.spares->promotions, 1);
  ASSERT_EQ(promoted.status.spares->serving.size(), 1u);
  EXPECT_EQ(promoted.status.spares->serving[0].pod, "job-spare-0");
  ASSERT_EQ(promoted.pod_deletes.size(), 1u);
  EXPECT_EQ(promoted.pod_deletes[0].name, "job-worker-2");
  EXPECT_EQ(promoted.pod_deletes[0].grace_period_seconds, 0);
  EXPECT_EQ(CreatedNames(promoted), (std::vector<std::string>{"job-spare-1"}));
  EXPECT_EQ(promoted.status.attempt, 0);
  EXPECT_EQ(promoted.status.state, api::JobState::kRunning);
  EXPECT_TRUE(std::any_of(promoted.events.begin(), promoted.events.end(),
                          [](const EventSpec& e) { return e.reason == "SparePromoted"; }));
  // Goodput: the pods stayed Running, yet the loss to the new round's start is recovery.
  ASSERT_TRUE(promoted.status.goodput);
  EXPECT_EQ(promoted.status.goodput->recovery_by_cause,
            (std::vector<api::GoodputCause>{{"SparePromoted", 3}}));
  EXPECT_EQ(promoted.status.goodput->productive_seconds, 29);

  // Later passes (the lost pod gone): still no restart, worker-2 is never recreated.
  CachedJob after = job;
  after.job.status = promoted.status;
  std::vector<kube::Pod> now = Gang();
  now.erase(now.begin() + 2);
  const Plan later = RunPass(after, now, T0() + seconds(40), std::nullopt);
  EXPECT_FALSE(later.restart.has_value());
  EXPECT_EQ(CreatedNames(later), (std::vector<std::string>{"job-spare-1"}));
  EXPECT_EQ(later.status.state, api::JobState::kRunning);
  EXPECT_EQ(later.status.workers_ready, "3/3");
}

TEST(SparePlanTest, WithoutASpareStandingByTheRestartPathApplies) {
  CachedJob job = RunningSpareJob();
  job.job.status.spares->ready = 0;
  std::map<std::string, NodeVerdict> lost = {
      {"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed for 21s")}};
  lost["node-lost"].failed_at = T0() + seconds(10);
  const Plan plan = RunPass(job, Gang("node-lost"), T0() + seconds(31), Answer(0, 0), lost);
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_EQ(plan.restart->reason, "NodeLeaseExpired");
  // Goodput: the gang stopped at the lease's last renewal, not at this decision.
  ASSERT_TRUE(plan.status.goodput);
  EXPECT_EQ(plan.status.goodput->recovery_by_cause,
            (std::vector<api::GoodputCause>{{"NodeLeaseExpired", 21}}));
  EXPECT_EQ(plan.status.goodput->productive_seconds, 10);

  // With a spare, but past kSparePromotionWait: no more waiting either.
  const CachedJob ready = RunningSpareJob();
  const Plan late =
      RunPass(ready, Gang("node-lost"), T0() + seconds(10) + kSparePromotionWait, Answer(1, 0),
              lost);
  EXPECT_TRUE(late.restart.has_value());
}

TEST(SparePlanTest, AFailedStandbySpareIsDeletedAndMadeAgainWithoutARestart) {
  const CachedJob job = RunningSpareJob();
  std::vector<kube::Pod> pods = Gang();
  pods[3].phase = "Failed";
  const Plan plan = RunPass(job, pods, T0() + seconds(5), Answer(0, 0));
  EXPECT_FALSE(plan.restart.has_value());
  ASSERT_EQ(plan.pod_deletes.size(), 1u);
  EXPECT_EQ(plan.pod_deletes[0].name, "job-spare-0");
}

CachedJob RackJob() {
  CachedJob job = RunningSpareJob();
  job.job.spec.placement = api::Placement{{"rack"}, std::string("rack")};
  return job;
}

TEST(SparePlanTest, SpareDomainNodeIsNodeZerosNodeOnlyWithSparesAndARequiredKey) {
  const std::vector<kube::Pod> gang = {Pod("worker", 0, "Running", "node-a"),
                                       Pod("worker", 1, "Running", "node-b")};
  EXPECT_EQ(SpareDomainNode(RackJob().job, gang), "node-a");
  std::vector<kube::Pod> unbound = gang;
  unbound[0].node_name = "";
  EXPECT_EQ(SpareDomainNode(RackJob().job, unbound), "") << "node 0 not bound yet";
  EXPECT_EQ(SpareDomainNode(RackJob().job, {gang[1]}), "") << "no node 0";
  EXPECT_EQ(SpareDomainNode(RunningSpareJob().job, gang), "") << "no required key";
  CachedJob no_spares = RackJob();
  no_spares.job.spec.failure_policy.spare_replicas = 0;
  EXPECT_EQ(SpareDomainNode(no_spares.job, gang), "") << "no spares";
}

// A promoted spare's replacement is placed alone while the gang runs: it carries the gang's
// domain as a nodeSelector, so no scheduler can put it in another rack.
TEST(SparePlanTest, AReplacementSpareStaysInTheGangsRequiredDomain) {
  const CachedJob job = RackJob();
  std::map<std::string, NodeVerdict> lost = {
      {"node-lost", LostNode("NodeLeaseExpired", "node node-lost: lease not renewed for 21s")}};
  lost["node-lost"].failed_at = T0() + seconds(10);
  const auto promote = [&](std::optional<std::string> domain) {
    Observed observed{Gang("node-lost"), true, lost, Answer(0, 1, {{2, 0, 1, "h"}})};
    observed.spare_domain = std::move(domain);
    return ComputePlan(job, observed, T0() + seconds(32), true,
                       PlanOptions{"launcher:test", seconds(300)});
  };
  const Plan plan = promote("rack-7");
  ASSERT_EQ(CreatedNames(plan), (std::vector<std::string>{"job-spare-1"}))
      << plan.status.reason << ": " << plan.status.message;
  EXPECT_EQ(plan.pod_creates[0]["spec"]["nodeSelector"].value("rack", ""), "rack-7")
      << plan.pod_creates[0]["spec"].dump(2);

  // The domain unknown (node 0's node not in the caches): no selector rather than a wrong one.
  const Plan unknown = promote(std::nullopt);
  ASSERT_EQ(CreatedNames(unknown), (std::vector<std::string>{"job-spare-1"}));
  EXPECT_FALSE(unknown.pod_creates[0]["spec"].value("nodeSelector", nlohmann::json::object())
                   .contains("rack"));
}

}  // namespace
}  // namespace lockstep::controller
