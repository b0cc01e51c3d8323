// DecideFailure, table-driven: detection order (lost node > disruption > pod failure), the
// culprit among failed pods, the classification, rules and the two budgets.
#include "operator/controller/failure_policy.h"

#include <gtest/gtest.h>

#include <functional>

// Table rows leave their trailing expectation fields at the defaults on purpose.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

#include "operator/api/conditions.h"
#include "operator/api/time.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::FailedPod;
using testing::LostNode;
using testing::Pod;

using Verdicts = std::map<std::string, NodeVerdict>;

api::FailureRule Rule(std::string name, api::RuleAction action, std::vector<int32_t> codes,
                      std::optional<std::string> container = std::nullopt) {
  api::FailureRule r;
  r.name = std::move(name);
  r.action = action;
  r.on_exit_codes.values = std::move(codes);
  r.on_exit_codes.container_name = std::move(container);
  return r;
}

kube::Pod WithCondition(kube::Pod p, std::string type, std::string status, std::string reason,
                        std::string message = "") {
  p.conditions.push_back({std::move(type), std::move(status), std::move(reason),
                          std::move(message), "", ""});
  return p;
}

kube::Pod WithPodReason(kube::Pod p, std::string reason, std::string message = "") {
  p.reason = std::move(reason);
  p.message = std::move(message);
  return p;
}

// The trainer container's termination: reason (e.g. OOMKilled) and termination message.
kube::Pod Terminated(kube::Pod p, std::string reason, std::string message = "") {
  p.container_statuses.at(0).reason = std::move(reason);
  p.container_statuses.at(0).message = std::move(message);
  return p;
}

// `p` with its deletion requested.
kube::Pod Deleted(kube::Pod p) {
  p.meta.deletion_timestamp = "2026-11-29T12:00:00Z";
  return p;
}

// A pod whose trainer runs and whose sidecar exited with `code`.
kube::Pod SidecarFailed(int index, int code) {
  kube::Pod p = Pod("worker", index, "Failed");
  kube::ContainerStatus trainer;
  trainer.name = "trainer";
  trainer.state = "running";
  kube::ContainerStatus sidecar;
  sidecar.name = "sidecar";
  sidecar.state = "terminated";
  sidecar.exit_code = code;
  p.container_statuses = {trainer, sidecar};
  return p;
}

struct Case {
  std::string name;
  std::function<void(api::TrainingJob&)> job;  // edits the 2-worker job
  std::vector<kube::Pod> pods;
  Verdicts lost;
  // Expectations.
  FailureAction action = FailureAction::kNone;
  FailureKind kind = FailureKind::kFailure;
  std::string reason;
  std::vector<std::string> message_has;  // substrings of the message
  bool counts = true;
  std::vector<std::string> lost_nodes;
  int32_t in_place = 0;
};

std::vector<Case> Cases() {
  using A = FailureAction;
  using K = FailureKind;
  auto none = [](api::TrainingJob&) {};
  auto fail_on_2 = [](api::TrainingJob& j) {
    j.spec.failure_policy.rules = {Rule("bad-args", api::RuleAction::kFailJob, {2})};
  };
  auto used_up = [](api::TrainingJob& j) {
    j.spec.failure_policy.max_restarts = 3;
    j.status.restarts.failures = 3;
  };
  const Verdicts lease_lost = {
      {"node-1", LostNode("NodeLeaseExpired", "node node-1: lease not renewed for 23s")}};
  return {
      // Nothing to do.
      {"running pods are no failure", none,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Pending", "")}, {}},
      {"succeeded pods are no failure", none,
       {Pod("worker", 0, "Succeeded"), Pod("worker", 1, "Succeeded")}, {}},
      {"a healthy verdict is no failure", none, {Pod("worker", 0, "Running")},
       {{"node-1", NodeVerdict{}}}},
      {"a lost node under a succeeded pod only is no failure", none,
       {Pod("worker", 0, "Succeeded")}, lease_lost},
      {"a lost node under no pod of the attempt is no failure", none,
       {Pod("worker", 0, "Running", "node-2")}, lease_lost},
      {"DisruptionTarget=False is no disruption", none,
       {WithCondition(Pod("worker", 0, "Running"), "DisruptionTarget", "False", "R")}, {}},

      // 1. Lost nodes.
      {"a lost node under a running pod restarts as a disruption", none,
       {Pod("worker", 0, "Running"), Pod("worker", 1, "Running", "node-2")}, lease_lost,
       A::kRestart, K::kDisruption, "NodeLeaseExpired",
       {"node node-1: lease not renewed for 23s (pods job-worker-0)"}, true, {"node-1"}},
      {"a lost node under a pending bound pod counts too", none,
       {Pod("worker", 0, "Pending")}, lease_lost, A::kRestart, K::kDisruption,
       "NodeLeaseExpired", {"job-worker-0"}, true, {"node-1"}},
      {"two lost nodes: sorted, the first one's reason, every pod named", none,
       {Pod("worker", 0, "Running", "node-b"), Pod("worker", 1, "Running", "node-a"),
        Pod("worker", 2, "Running", "node-b")},
       {{"node-b", LostNode("NodeNotReady", "node node-b: Ready=False")},
        {"node-a", LostNode("NodeDeleted", "node node-a: deleted")}},
       A::kRestart, K::kDisruption, "NodeDeleted",
       {"node node-a: deleted (pods job-worker-1); node node-b: Ready=False (pods job-worker-0, "
        "job-worker-2)"},
       true, {"node-a", "node-b"}},
      {"a lost node wins over a pod failure elsewhere", none,
       {FailedPod("worker", 0, 1), Pod("worker", 1, "Running", "node-9")},
       {{"node-9", LostNode("NodeTainted", "node node-9: NoExecute taint")}}, A::kRestart,
       K::kDisruption, "NodeTainted", {"node-9"}, true, {"node-9"}},
      {"a pod failed on a lost node is a disruption, not its exit code's rule", fail_on_2,
       {FailedPod("worker", 0, 2)}, lease_lost, A::kRestart, K::kDisruption,
       "NodeLeaseExpired", {"job-worker-0"}, true, {"node-1"}},
      {"a lost node wins over an eviction", none,
       {WithPodReason(Pod("worker", 0, "Failed", "node-2"), "Evicted"),
        Pod("worker", 1, "Running")},
       lease_lost, A::kRestart, K::kDisruption, "NodeLeaseExpired", {}, true, {"node-1"}},

      // 2. Disrupted pods.
      {"DisruptionTarget=True on a running pod is a disruption", none,
       {Pod("worker", 0, "Running"),
        WithCondition(Pod("worker", 1, "Running", "node-2"), "DisruptionTarget", "True",
                      "PreemptionByScheduler", "preempted by ns/big")},
       {}, A::kRestart, K::kDisruption, "PodDisrupted",
       {"pod job-worker-1 was disrupted on node node-2: PreemptionByScheduler: preempted by "
        "ns/big"}},
      {"an Evicted pod is a disruption", none,
       {WithPodReason(Pod("worker", 0, "Failed"), "Evicted", "node low on memory")}, {},
       A::kRestart, K::kDisruption, "PodDisrupted", {"job-worker-0", "Evicted"}},
      {"a Preempting pod is a disruption", none,
       {WithPodReason(Pod("worker", 0, "Failed"), "Preempting")}, {}, A::kRestart,
       K::kDisruption, "PodDisrupted", {"Preempting"}},
      {"a pod deleted while its launcher ran (stopped by SIGTERM) is a disruption", none,
       {Deleted(Terminated(FailedPod("worker", 0, 143), "Error",
                           R"({"reason":"terminated","exitCode":143,"signal":15,"stderrTail":[]})"))},
       {}, A::kRestart, K::kDisruption, "PodDisrupted",
       {"job-worker-0", "deleted while its launcher ran"}},
      {"a launcher stopped by a signal on a pod nobody deleted is a failure", none,
       {Terminated(FailedPod("worker", 0, 143), "Error",
                   R"({"reason":"terminated","exitCode":143,"signal":15,"stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed"},
      {"a pod deleted after its ranks failed is the job's failure", none,
       {Deleted(Terminated(FailedPod("worker", 0, 3), "Error",
                           R"({"reason":"exit","exitCode":3,"rank":1,"stderrTail":[]})"))},
       {}, A::kRestart, K::kFailure, "PodFailed"},
      {"a pod of a node shut down is a disruption", none,
       {WithPodReason(Pod("worker", 0, "Failed"), "Shutdown")}, {}, A::kRestart,
       K::kDisruption, "PodDisrupted", {"Shutdown"}},
      {"a disruption wins over a pod failure and its FailJob rule", fail_on_2,
       {FailedPod("worker", 0, 2), WithPodReason(Pod("worker", 1, "Failed"), "Evicted")}, {},
       A::kRestart, K::kDisruption, "PodDisrupted", {"job-worker-1"}},
      {"Evicted is a disruption only when the pod failed", none,
       {WithPodReason(Pod("worker", 0, "Running"), "Evicted")}, {}},

      // 3. Pod failures: default RestartJob for every exit code.
      {"exit 1 restarts by default, naming pod, node, container and code", none,
       {FailedPod("worker", 1, 1), Pod("worker", 0, "Running")}, {}, A::kRestart,
       K::kFailure, "PodFailed",
       {"pod job-worker-1 failed on node node-1: container trainer exited with code 1"}},
      {"exit 255 restarts by default", none, {FailedPod("worker", 0, 255)}, {}, A::kRestart,
       K::kFailure, "PodFailed", {"exited with code 255"}},
      {"OOMKilled", none, {Terminated(FailedPod("worker", 0, 137), "OOMKilled")}, {},
       A::kRestart, K::kFailure, "OOMKilled", {"exited with code 137", "OOMKilled"}},
      {"launcher 76 is a hang", none, {FailedPod("worker", 0, 76)}, {}, A::kRestart,
       K::kFailure, "Hang"},
      {"launcher 77 is a refused rendezvous", none, {FailedPod("worker", 0, 77)}, {},
       A::kRestart, K::kFailure, "RendezvousRefused"},
      {"launcher 78 is a join timeout", none, {FailedPod("worker", 0, 78)}, {}, A::kRestart,
       K::kFailure, "RendezvousTimeout"},
      {"launcher 79 is a launcher error", none, {FailedPod("worker", 0, 79)}, {}, A::kRestart,
       K::kFailure, "LauncherError"},
      {"exit 75 (peer lost) is never the culprit when another pod failed otherwise", none,
       {FailedPod("worker", 0, 75), FailedPod("worker", 1, 3)}, {}, A::kRestart, K::kFailure,
       "PodFailed", {"pod job-worker-1 failed", "exited with code 3"}},
      {"only exit 75s: the first failed pod", none,
       {Pod("worker", 0, "Running"), FailedPod("worker", 1, 75), FailedPod("worker", 2, 75)},
       {}, A::kRestart, K::kFailure, "PodFailed", {"pod job-worker-1 failed", "code 75"}},
      {"a failed pod without container statuses names the pod's reason", none,
       {WithPodReason(Pod("worker", 0, "Failed"), "UnexpectedAdmissionError", "no GPU")}, {},
       A::kRestart, K::kFailure, "PodFailed",
       {"pod job-worker-0 failed on node node-1: UnexpectedAdmissionError: no GPU"}},
      {"the termination message is in the failure message", none,
       {Terminated(FailedPod("worker", 0, 1), "Error", "CUDA error: device-side assert")}, {},
       A::kRestart, K::kFailure, "PodFailed", {"(Error): CUDA error: device-side assert"}},

      {"the launcher's termination JSON reads as rank, code, reason and last stderr lines", none,
       {Terminated(FailedPod("worker", 1, 3), "Error",
                   R"({"reason":"ChildFailed","attempt":0,"restartCount":1,"nodeRank":1,"rank":2,)"
                   R"("exitCode":3,"signal":0,"message":"rank 2 exited with code 3",)"
                   R"("stderrTail":["Traceback (most recent call last):","ValueError: bad shard"]})")},
       {}, A::kRestart, K::kFailure, "PodFailed",
       {"container trainer exited with code 3 (Error): rank 2 exited with code 3, after 1 "
        "in-place restart",
        "last stderr lines:\n  Traceback (most recent call last):\n"
        "  ValueError: bad shard"}, true, {}, 1},
      {"a launcher JSON without a message names the rank and its signal", none,
       {Terminated(FailedPod("worker", 0, 137), "Error",
                   R"({"rank":5,"exitCode":137,"signal":9,"stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed", {"(Error): rank 5 killed by signal 9"}},
      // Rules.
      {"a FailJob rule fails the job with the code and the rule in the message", fail_on_2,
       {FailedPod("worker", 1, 2), Pod("worker", 0, "Running")}, {}, A::kFailJob, K::kFailure,
       "FailJobRule",
       {"pod job-worker-1", "exited with code 2", "failure rule bad-args says FailJob"}},
      {"a FailJob rule on other codes restarts", fail_on_2, {FailedPod("worker", 0, 1)}, {},
       A::kRestart, K::kFailure, "PodFailed"},
      {"the first matching rule wins",
       [](api::TrainingJob& j) {
         j.spec.failure_policy.rules = {Rule("retry", api::RuleAction::kRestartJob, {2}),
                                        Rule("fatal", api::RuleAction::kFailJob, {2})};
       },
       {FailedPod("worker", 0, 2)}, {}, A::kRestart, K::kFailure, "PodFailed"},
      {"a NotIn rule", [](api::TrainingJob& j) {
         api::FailureRule r = Rule("not-retryable", api::RuleAction::kFailJob, {1, 2});
         r.on_exit_codes.op = api::ExitCodeOperator::kNotIn;
         j.spec.failure_policy.rules = {r};
       },
       {FailedPod("worker", 0, 9)}, {}, A::kFailJob, K::kFailure, "FailJobRule",
       {"not-retryable"}},
      {"an unnamed rule is named #", [](api::TrainingJob& j) {
         j.spec.failure_policy.rules = {Rule("", api::RuleAction::kFailJob, {2})};
       },
       {FailedPod("worker", 0, 2)}, {}, A::kFailJob, K::kFailure, "FailJobRule",
       {"failure rule # says FailJob"}},
      {"a rule naming a container matches that container", [](api::TrainingJob& j) {
         j.spec.failure_policy.rules = {Rule("side", api::RuleAction::kFailJob, {7}, "sidecar")};
       },
       {SidecarFailed(0, 7)}, {}, A::kFailJob, K::kFailure, "FailJobRule",
       {"container sidecar exited with code 7", "side"}},
      {"a rule without a container matches the trainer only", fail_on_2, {SidecarFailed(0, 2)},
       {}, A::kRestart, K::kFailure, "PodFailed", {"container sidecar"}},
      {"RestartJobAndIgnoreMaxRestarts restarts without counting, even past maxRestarts",
       [used_up](api::TrainingJob& j) {
         used_up(j);
         j.spec.failure_policy.rules = {
             Rule("nccl", api::RuleAction::kRestartJobAndIgnoreMaxRestarts, {134})};
       },
       {FailedPod("worker", 0, 134)}, {}, A::kRestart, K::kFailure, "PodFailed",
       {"failure rule nccl restarts without counting"}, false},

      // Budgets.
      {"maxRestarts not reached: restart",
       [](api::TrainingJob& j) { j.status.restarts.failures = 2; }, {FailedPod("worker", 0, 1)},
       {}, A::kRestart, K::kFailure, "PodFailed"},
      {"maxRestarts used up: Failed with the reason and the code", used_up,
       {FailedPod("worker", 0, 1)}, {}, A::kFailJob, K::kFailure, "MaxRestartsExceeded",
       {"exited with code 1", "failurePolicy.maxRestarts (3) used up"}},
      {"maxRestarts 0 fails at the first failure",
       [](api::TrainingJob& j) { j.spec.failure_policy.max_restarts = 0; },
       {FailedPod("worker", 0, 1)}, {}, A::kFailJob, K::kFailure, "MaxRestartsExceeded"},
      {"in-place restarts from the termination message count against maxRestarts",
       [](api::TrainingJob& j) { j.status.restarts.failures = 1; },
       {Terminated(FailedPod("worker", 0, 1), "Error",
                   R"({"restartCount":2,"rank":3,"exitCode":1,"stderrTail":[]})")},
       {}, A::kFailJob, K::kFailure, "MaxRestartsExceeded",
       {"maxRestarts (3) used up (2 of them in place)"}, true, {}, 2},
      {"in-place restarts below the budget restart and are reported",
       none,
       {Terminated(FailedPod("worker", 0, 1), "Error", R"({"restartCount":2,"stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed", {}, true, {}, 2},
      {"another container's JSON message (no stderrTail) counts no in-place restart", used_up,
       {Terminated(FailedPod("worker", 0, 1), "Error", R"({"restartCount":9})")}, {},
       A::kFailJob, K::kFailure, "MaxRestartsExceeded", {"{\"restartCount\":9}"}, true, {}, 0},
      {"a termination message that is not JSON counts no in-place restart", used_up,
       {Terminated(FailedPod("worker", 0, 1), "Error", "{restartCount: 9")}, {}, A::kFailJob,
       K::kFailure, "MaxRestartsExceeded", {}, true, {}, 0},
      {"a restartCount that is no integer counts none",
       [](api::TrainingJob& j) { j.status.restarts.failures = 2; },
       {Terminated(FailedPod("worker", 0, 1), "Error",
                   R"({"restartCount":"5","stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed", {}, true, {}, 0},
      {"a negative restartCount counts none",
       [](api::TrainingJob& j) { j.status.restarts.failures = 2; },
       {Terminated(FailedPod("worker", 0, 1), "Error",
                   R"({"restartCount":-4,"stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed", {}, true, {}, 0},
      {"the culprit's restartCount counts, not a peer-lost launcher's", none,
       {Terminated(FailedPod("worker", 0, 75), "Error", R"({"restartCount":1,"stderrTail":[]})"),
        Terminated(FailedPod("worker", 1, 1), "Error", R"({"restartCount":2,"stderrTail":[]})")},
       {}, A::kRestart, K::kFailure, "PodFailed", {"job-worker-1"}, true, {}, 2},
      {"disruptions do not consume maxRestarts", used_up,
       {WithPodReason(Pod("worker", 0, "Failed"), "Evicted")}, {}, A::kRestart,
       K::kDisruption, "PodDisrupted"},
      {"a lost node does not consume maxRestarts", used_up, {Pod("worker", 0, "Running")},
       lease_lost, A::kRestart, K::kDisruption, "NodeLeaseExpired", {}, true, {"node-1"}},
      {"maxDisruptions used up: Failed",
       [](api::TrainingJob& j) {
         j.spec.failure_policy.max_disruptions = 2;
         j.status.restarts.disruptions = 2;
       },
       {Pod("worker", 0, "Running")}, lease_lost, A::kFailJob, K::kDisruption,
       "MaxDisruptionsExceeded", {"lease not renewed", "failurePolicy.maxDisruptions (2) used up"},
       true, {"node-1"}},
      {"failures do not consume maxDisruptions",
       [](api::TrainingJob& j) {
         j.spec.failure_policy.max_disruptions = 2;
         j.status.restarts.disruptions = 2;
       },
       {FailedPod("worker", 0, 1)}, {}, A::kRestart, K::kFailure, "PodFailed"},
  };
}

class FailurePolicyTableTest : public ::testing::TestWithParam<Case> {};

TEST_P(FailurePolicyTableTest, Decides) {
  const Case& tc = GetParam();
  api::TrainingJob job = testing::Job(2).job;
  tc.job(job);
  const FailureDecision d = DecideFailure(job, tc.pods, tc.lost);
  EXPECT_EQ(d.action, tc.action);
  if (tc.action == FailureAction::kNone) return;
  EXPECT_EQ(d.kind, tc.kind);
  EXPECT_EQ(d.reason, tc.reason);
  for (const std::string& want : tc.message_has) {
    EXPECT_NE(d.message.find(want), std::string::npos) << "want \"" << want << "\" in \""
                                                       << d.message << "\"";
  }
  EXPECT_EQ(d.counts, tc.counts);
  EXPECT_EQ(d.lost_nodes, tc.lost_nodes);
  EXPECT_EQ(d.in_place_restarts, tc.in_place);
}

INSTANTIATE_TEST_SUITE_P(Table, FailurePolicyTableTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string n;
                           for (char ch : param_info.param.name) n += std::isalnum(ch) ? ch : '_';
                           return n;
                         });

TEST(FailurePolicyTest, FailedAtIsTheEarliestKnownFailureTime) {
  api::TrainingJob job = testing::Job(2).job;
  // A pod failure: the culprit container's finishedAt.
  kube::Pod failed = FailedPod("worker", 0, 1);
  failed.container_statuses[0].finished_at = "2027-01-15T08:00:03Z";
  FailureDecision d = DecideFailure(job, {failed}, {});
  ASSERT_TRUE(d.failed_at.has_value());
  EXPECT_EQ(api::FormatTime(*d.failed_at), "2027-01-15T08:00:03Z");
  // An unparseable finishedAt is no time.
  failed.container_statuses[0].finished_at = "soon";
  EXPECT_FALSE(DecideFailure(job, {failed}, {}).failed_at.has_value());
  // Lost nodes: the earliest verdict's.
  NodeVerdict a = LostNode("NodeLeaseExpired", "a");
  a.failed_at = *api::ParseTime("2027-01-15T08:00:10Z");
  NodeVerdict b = LostNode("NodeNotReady", "b");
  b.failed_at = *api::ParseTime("2027-01-15T08:00:05Z");
  d = DecideFailure(job, {Pod("worker", 0, "Running", "a"), Pod("worker", 1, "Running", "b")},
                    {{"a", a}, {"b", b}});
  ASSERT_TRUE(d.failed_at.has_value());
  EXPECT_EQ(api::FormatTime(*d.failed_at), "2027-01-15T08:00:05Z");
}

// A member of a running gang that someone else deleted and that is gone before a pass saw why
// (the taint-eviction controller racing the Node watch, `kubectl delete pod --force`): its last
// state still explains the restart, and a gang that never ran whole is refilled as before.
TEST(FailurePolicyTest, GoneMembersAreThoseOfAGangThatRanWhole) {
  api::TrainingJob job = testing::Job(3).job;
  const kube::Pod gone0 = Pod("worker", 0, "Running", "node-1");
  const std::vector<kube::Pod> running = {Pod("worker", 1, "Running", "node-2"),
                                          Pod("worker", 2, "Running", "node-3")};
  // Two present and one gone, all Running: the gang ran whole.
  std::vector<kube::Pod> got = GoneMembers(job, 3, running, {gone0});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].meta.name, "job-worker-0");
  // A member gone twice (a re-list's tombstone; or a pod refilled and gone again) counts once,
  // in its newest last state.
  kube::Pod again = gone0;
  again.meta.uid = "pod-uid-worker0-b";
  got = GoneMembers(job, 3, running, {gone0, gone0, again});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].meta.uid, "pod-uid-worker0-b");
  // A member still Pending: the gang never ran whole (a bind the scheduler undid), nothing gone.
  const std::vector<kube::Pod> starting = {Pod("worker", 1, "Running", "node-2"),
                                           Pod("worker", 2, "Pending", "node-3")};
  EXPECT_TRUE(GoneMembers(job, 3, starting, {gone0}).empty());
  // Undone and retried binds: a Running pod of each member gone in turn, never all at once.
  const std::vector<kube::Pod> retried = {Pod("worker", 2, "Pending", "")};
  EXPECT_TRUE(
      GoneMembers(job, 3, retried, {gone0, Pod("worker", 1, "Running", "node-2"), gone0}).empty());
  // A member gone that had not started (Pending when it went): not a gang that ran.
  EXPECT_TRUE(GoneMembers(job, 3, running, {Pod("worker", 0, "Pending", "node-1")}).empty());
  // A member whose name a present pod holds again is not missing.
  EXPECT_TRUE(
      GoneMembers(job, 3, {Pod("worker", 0, "Pending", ""), running[0], running[1]}, {gone0})
          .empty());
  // The status says the gang ran: that is enough.
  api::Condition ran;
  ran.type = std::string(api::kConditionRunning);
  ran.status = api::ConditionStatus::kTrue;
  job.status.conditions.push_back(ran);
  EXPECT_EQ(GoneMembers(job, 3, starting, {gone0}).size(), 1u);
  // Never bound, or finished when it went: no member lost.
  EXPECT_TRUE(GoneMembers(job, 3, running, {Pod("worker", 0, "Pending", "")}).empty());
  EXPECT_TRUE(GoneMembers(job, 3, running, {FailedPod("worker", 0, 1)}).empty());
  EXPECT_TRUE(GoneMembers(job, 3, running, {}).empty());
}

TEST(FailurePolicyTest, AGoneMemberExplainsTheRestart) {
  const api::TrainingJob job = testing::Job(2).job;
  const kube::Pod gone = Pod("worker", 0, "Running", "node-1");
  const std::vector<kube::Pod> left = {Pod("worker", 1, "Running", "node-2")};
  // Its node is lost (the Node cache shows the taint): the node's reason, the node excluded.
  FailureDecision d = DecideFailure(
      job, left, {{"node-1", LostNode("NodeTainted", "node node-1: tainted")}}, {gone});
  EXPECT_EQ(d.action, FailureAction::kRestart);
  EXPECT_EQ(d.kind, FailureKind::kDisruption);
  EXPECT_EQ(d.reason, "NodeTainted");
  EXPECT_EQ(d.lost_nodes, std::vector<std::string>{"node-1"});
  EXPECT_NE(d.message.find("job-worker-0"), std::string::npos) << d.message;
  // Marked before it went (its last state): a disruption with the mark's words.
  d = DecideFailure(job, left, {},
                    {WithCondition(gone, "DisruptionTarget", "True", "PreemptionByScheduler",
                                   "preempted by a/b")});
  EXPECT_EQ(d.reason, "PodDisrupted");
  EXPECT_NE(d.message.find("preempted by a/b"), std::string::npos) << d.message;
  // Nothing says why: deleted by someone else, named with its node.
  d = DecideFailure(job, left, {}, {gone});
  EXPECT_EQ(d.action, FailureAction::kRestart);
  EXPECT_EQ(d.kind, FailureKind::kDisruption);
  EXPECT_EQ(d.reason, "PodDeleted");
  EXPECT_NE(d.message.find("job-worker-0 (on node node-1)"), std::string::npos) << d.message;
  EXPECT_TRUE(d.lost_nodes.empty());
  // The others' launchers then exit 75 (a peer lost): the gone member is the cause, no wait.
  d = DecideFailure(job, {FailedPod("worker", 1, 75)}, {}, {gone});
  EXPECT_EQ(d.reason, "PodDeleted");
  EXPECT_FALSE(d.awaiting_culprit);
  // A real failure of another rank outranks nothing here either: disruptions come first.
  d = DecideFailure(job, {FailedPod("worker", 1, 1)}, {}, {gone});
  EXPECT_EQ(d.reason, "PodDeleted");
  // Budget: a disruption like any other.
  api::TrainingJob spent = job;
  spent.spec.failure_policy.max_disruptions = 1;
  spent.status.restarts.disruptions = 1;
  d = DecideFailure(spent, left, {}, {gone});
  EXPECT_EQ(d.action, FailureAction::kFailJob);
  EXPECT_EQ(d.reason, "MaxDisruptionsExceeded");
}

TEST(FailurePolicyTest, IsDisrupted) {
  EXPECT_FALSE(IsDisrupted(Pod("worker", 0, "Running")));
  EXPECT_FALSE(IsDisrupted(FailedPod("worker", 0, 1)));
  EXPECT_TRUE(IsDisrupted(WithCondition(Pod("worker", 0, "Running"), "DisruptionTarget", "True",
                                        "EvictionByEvictionAPI")));
  EXPECT_FALSE(IsDisrupted(
      WithCondition(Pod("worker", 0, "Running"), "DisruptionTarget", "False", "x")));
  for (const char* reason :
       {"Evicted", "Preempting", "Shutdown", "NodeShutdown", "Terminated", "NodeLost"}) {
    EXPECT_TRUE(IsDisrupted(WithPodReason(Pod("worker", 0, "Failed"), reason))) << reason;
  }
  EXPECT_FALSE(IsDisrupted(WithPodReason(Pod("worker", 0, "Failed"), "DeadlineExceeded")));
}

}  // namespace
}  // namespace lockstep::controller
