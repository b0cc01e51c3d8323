// Peer-corroborated node loss (operator/controller/peer_loss.h): the decision table, and the plan
// step that acts on it (peer_loss_plan.h) through ComputePlan.
#include "operator/controller/peer_loss.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <functional>

#include "common/rfc3339.h"
#include "operator/controller/peer_loss_log.h"
#include "operator/controller/peer_loss_plan.h"
#include "operator/controller/plan.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::Job;
using testing::Pod;
using testing::T0;
using Outcome = LossVerdict::Outcome;
using std::chrono::milliseconds;
using std::chrono::seconds;

uint64_t UnixMs(api::Time t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
}

// Node rank 1 (job-worker-1 on node-b) silent since T0 + 10 s, declared lost one peer timeout
// (the default, 3 s) later.
protocol::LostMember Report(bool disconnected = false) {
  protocol::LostMember m;
  m.round = 0;
  m.node_rank = 1;
  m.pod_name = "job-worker-1";
  m.pod_uid = "pod-uid-worker1";  // builders.h Pod("worker", 1, ...)
  m.node_name = "node-b";
  m.last_heard_unix_ms = UnixMs(T0() + seconds(10));
  m.lost_unix_ms = UnixMs(T0() + seconds(10) +
                         (disconnected ? milliseconds(0) : protocol::contract::kDefaultPeerTimeout));
  m.disconnected = disconnected;
  m.why = disconnected ? "peer closed the connection" : "no heartbeat within the peer timeout";
  return m;
}

kube::Node ReadyNode() {
  kube::Node n;
  n.meta.name = "node-b";
  n.ready = kube::Condition{"Ready", "True", "", "", "", ""};
  return n;
}

// A healthy-looking node-b whose Lease was renewed at `renewed`.
NodeSnapshot Snapshot(api::Time renewed) {
  NodeSnapshot s;
  s.node = ReadyNode();
  kube::Lease l;
  l.meta.name = "node-b";
  l.renew_time = FormatTime(renewed);
  s.lease = l;
  s.leases_fresh_since = T0();
  return s;
}

struct Row {
  std::string name;
  // Changes to the default evidence: P Running on node-b, node-b Ready with its Lease renewed
  // at T0 + 5 s (before the member was last heard), the probe unreachable, now = T0 + 20 s.
  std::function<void(LossEvidence&, kube::Pod&)> change;
  Outcome outcome;
  std::string signal;
};

TEST(PeerLossTest, DecisionTable) {
  const std::vector<Row> rows = {
      {"probe unreachable and the Lease stale: corroborated", [](LossEvidence&, kube::Pod&) {},
       Outcome::kCorroborated, "LauncherUnreachable"},
      {"the Lease renewed after the member was last heard: not corroborated",
       [](LossEvidence& e, kube::Pod&) { e.node = Snapshot(T0() + seconds(12)); },
       Outcome::kNotCorroborated, ""},
      {"renewed within the clock skew of last heard: still stale",
       [](LossEvidence& e, kube::Pod&) { e.node = Snapshot(T0() + milliseconds(10500)); },
       Outcome::kCorroborated, "LauncherUnreachable"},
      {"the operator reaches the pod: not corroborated",
       [](LossEvidence& e, kube::Pod&) { e.probe = ProbeResult::kReachable; },
       Outcome::kNotCorroborated, ""},
      {"no probe answer yet: waiting",
       [](LossEvidence& e, kube::Pod&) { e.probe = ProbeResult::kUnknown; }, Outcome::kWaiting, ""},
      {"no Lease: not corroborated by the probe alone",
       [](LossEvidence& e, kube::Pod&) { e.node->lease.reset(); }, Outcome::kNotCorroborated, ""},
      {"the Lease view is broken: not corroborated",
       [](LossEvidence& e, kube::Pod&) { e.node->leases_fresh_since = T0() + seconds(60); },
       Outcome::kNotCorroborated, ""},
      {"node caches not synced: not corroborated",
       [](LossEvidence& e, kube::Pod&) { e.node.reset(); }, Outcome::kNotCorroborated, ""},
      {"Node deleted: corroborated whatever the probe",
       [](LossEvidence& e, kube::Pod&) {
         e.node->node.reset();
         e.probe = ProbeResult::kReachable;
       },
       Outcome::kCorroborated, "NodeDeleted"},
      {"Node NotReady: corroborated",
       [](LossEvidence& e, kube::Pod&) {
         e.node->node->ready->status = "False";
         e.probe = ProbeResult::kUnknown;
       },
       Outcome::kCorroborated, "NodeNotReady"},
      {"Node Unknown: corroborated",
       [](LossEvidence& e, kube::Pod&) { e.node->node->ready->status = "Unknown"; },
       Outcome::kCorroborated, "NodeUnreachable"},
      {"NoExecute taint: corroborated",
       [](LossEvidence& e, kube::Pod&) {
         e.node->node->taints.push_back({"node.kubernetes.io/unreachable", "", "NoExecute", ""});
         e.probe = ProbeResult::kReachable;
       },
       Outcome::kCorroborated, "NodeTainted"},
      {"a NoSchedule taint alone is no signal",
       [](LossEvidence& e, kube::Pod&) {
         e.node->node->taints.push_back({"example", "", "NoSchedule", ""});
         e.probe = ProbeResult::kReachable;
       },
       Outcome::kNotCorroborated, ""},
      {"the pod is gone: stale", [](LossEvidence& e, kube::Pod&) { e.pod = nullptr; },
       Outcome::kStale, ""},
      {"the pod failed: stale (the failure path acts)",
       [](LossEvidence&, kube::Pod& p) { p.phase = "Failed"; }, Outcome::kStale, ""},
      {"the pod is being deleted: stale",
       [](LossEvidence&, kube::Pod& p) { p.meta.deletion_timestamp = "2027-01-01T00:00:00Z"; },
       Outcome::kStale, ""},
      {"the report is about an earlier pod of that name: stale",
       [](LossEvidence&, kube::Pod& p) { p.meta.uid = "pod-uid-of-a-successor"; },
       Outcome::kStale, ""},
      {"the pod runs on another node than reported: stale",
       [](LossEvidence&, kube::Pod& p) { p.node_name = "node-c"; }, Outcome::kStale, ""},
      {"silent member, corroborated before the fence: waiting",
       [](LossEvidence& e, kube::Pod&) { e.now = T0() + seconds(13); }, Outcome::kWaiting,
       "LauncherUnreachable"},
      {"disconnected member: no fence beyond the skew",
       [](LossEvidence& e, kube::Pod&) {
         e.report = Report(/*disconnected=*/true);
         e.now = T0() + milliseconds(11100);
       },
       Outcome::kCorroborated, "LauncherUnreachable"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    kube::Pod pod = Pod("worker", 1, "Running", "node-b");
    pod.pod_ip = "10.0.0.8";
    LossEvidence e;
    e.report = Report();
    e.pod = &pod;
    e.node = Snapshot(T0() + seconds(5));
    e.probe = ProbeResult::kUnreachable;
    e.probe_detail = "connect to 10.0.0.8:29400 timed out after 1000ms";
    e.now = T0() + seconds(20);
    row.change(e, pod);
    const LossVerdict v = CorroborateLoss(e);
    EXPECT_EQ(v.outcome, row.outcome) << v.evidence;
    EXPECT_EQ(v.signal, row.signal) << v.evidence;
  }
}

TEST(PeerLossTest, TheFenceOfASilentMemberIsAPeerTimeoutAndAnIntervalAfterLastHeard) {
  kube::Pod pod = Pod("worker", 1, "Running", "node-b");
  LossEvidence e;
  e.report = Report();
  e.pod = &pod;
  e.node = Snapshot(T0() + seconds(5));
  e.probe = ProbeResult::kUnreachable;
  e.now = T0() + seconds(13);
  const LossVerdict v = CorroborateLoss(e);
  ASSERT_EQ(v.outcome, Outcome::kWaiting);
  ASSERT_TRUE(v.act_at.has_value());
  // last heard T0+10 s + peer timeout (3 s) + heartbeat interval (0.5 s) + skew 1 s.
  EXPECT_EQ(*v.act_at, T0() + seconds(10) + protocol::contract::kDefaultPeerTimeout +
                           protocol::contract::kDefaultHeartbeatInterval + seconds(1));
  EXPECT_EQ(*v.act_at, T0() + milliseconds(14500));
}

TEST(PeerLossTest, TheEvidenceNamesTheReportTheSignalAndTheLeaseAge) {
  kube::Pod pod = Pod("worker", 1, "Running", "node-b");
  LossEvidence e;
  e.report = Report();
  e.pod = &pod;
  e.node = Snapshot(T0() + seconds(5));
  e.probe = ProbeResult::kUnreachable;
  e.probe_detail = "connect to 10.0.0.8:29400 timed out after 1000ms";
  e.now = T0() + seconds(20);
  const LossVerdict v = CorroborateLoss(e);
  ASSERT_EQ(v.outcome, Outcome::kCorroborated);
  EXPECT_EQ(v.node, "node-b");
  ASSERT_TRUE(v.lease_age_seconds.has_value());
  EXPECT_DOUBLE_EQ(*v.lease_age_seconds, 15.0);
  for (const std::string part :
       {"node rank 1", "pod job-worker-1 on node node-b", "silent", "last heard 10.0s ago",
        "LauncherUnreachable", "timed out", "last renewed 15.0s ago"}) {
    EXPECT_NE(v.evidence.find(part), std::string::npos) << part << " in: " << v.evidence;
  }
}

// Through ComputePlan: a running gang of two whose node 0 reports node rank 1 lost.
struct PlanFixture {
  CachedJob job = Job(2);
  Observed observed;
  PlanFixture() {
    kube::Pod p0 = Pod("worker", 0, "Running", "node-a");
    kube::Pod p1 = Pod("worker", 1, "Running", "node-b");
    p0.pod_ip = "10.0.0.7";
    p1.pod_ip = "10.0.0.8";
    p0.meta.labels[std::string(api::kLabelAttempt)] = "0";
    p1.meta.labels[std::string(api::kLabelAttempt)] = "0";
    observed.pods = {p0, p1};
    observed.service_exists = observed.network_policy_exists = true;
    LauncherObservation obs;
    obs.pod_uid = p0.meta.uid;
    obs.answered = true;
    obs.status.round = 1;
    obs.status.lost = {Report()};
    observed.launchers = obs;
    observed.peer_loss_nodes["node-b"] = Snapshot(T0() + seconds(5));
    SetCondition(job.job.status.conditions, "Running", "True", T0());
  }
  static void SetCondition(std::vector<api::Condition>& conds, const std::string& type,
                           const std::string& status, api::Time at) {
    api::Condition c;
    c.type = type;
    c.status = status == "True" ? api::ConditionStatus::kTrue : api::ConditionStatus::kFalse;
    c.last_transition_time = at;
    conds.push_back(c);
  }
  void Probe(ProbeResult r) {
    observed.launchers->probes["job-worker-1"] = {Report().lost_unix_ms, {r, "probed"}};
  }
  Plan Run(api::Time now) {
    PlanOptions options;
    options.launcher_image = "lockstep/launcher:dev";
    return ComputePlan(job, observed, now, true, options);
  }
};

TEST(PeerLossPlanTest, AsksForAProbeAndPollsEverySecondUntilItIsAnswered) {
  PlanFixture f;
  const Plan plan = f.Run(T0() + seconds(20));
  EXPECT_FALSE(plan.restart.has_value());
  ASSERT_EQ(plan.launcher_probes.size(), 1u);
  EXPECT_EQ(plan.launcher_probes[0],
            (Plan::LauncherProbe{"job-worker-1", "10.0.0.8", Report().lost_unix_ms}));
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_EQ(*plan.requeue_after, kPeerLossPollInterval);
  ASSERT_EQ(plan.peer_loss.size(), 1u);
  EXPECT_EQ(plan.peer_loss[0].outcome, "waiting");
}

// The pass's table (plan.h): a corroborated report claims the pass at step PeerLoss.
TEST(PeerLossPlanTest, ACorroboratedReportClaimsThePassAtStepPeerLoss) {
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  EXPECT_EQ(f.Run(T0() + seconds(20)).decided_by, "PeerLoss");
}

TEST(PeerLossPlanTest, ACorroboratedReportRestartsAtOnceExcludingTheNodeWithForceDeletes) {
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  const Plan plan = f.Run(T0() + seconds(20));
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_EQ(plan.restart->reason, kReasonPeerReportedLost);
  EXPECT_EQ(plan.status.attempt, 1);
  EXPECT_EQ(plan.status.restarts.disruptions, 1);
  EXPECT_EQ(plan.status.restarts.failures, 0);
  ASSERT_TRUE(plan.status.last_restart.has_value());
  EXPECT_EQ(plan.status.last_restart->reason, kReasonPeerReportedLost);
  EXPECT_EQ(plan.status.last_restart->nodes, std::vector<std::string>{"node-b"});
  EXPECT_NE(plan.status.last_restart->message.find("LauncherUnreachable"), std::string::npos);
  EXPECT_EQ(plan.status.last_restart->backoff_seconds, 0);
  ASSERT_EQ(plan.status.excluded_nodes.size(), 1u);
  EXPECT_EQ(plan.status.excluded_nodes[0].name, "node-b");
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, kReasonPeerReportedLost);
  EXPECT_NE(plan.events[0].message.find("last renewed 15.0s ago"), std::string::npos);
  // The pod on the lost node goes with grace 0 (no kubelet will confirm); the other with its own.
  ASSERT_EQ(plan.pod_deletes.size(), 2u);
  for (const PodDeletion& d : plan.pod_deletes) {
    if (d.name == "job-worker-1") {
      EXPECT_EQ(d.grace_period_seconds, std::optional<int64_t>(0));
    } else {
      EXPECT_FALSE(d.grace_period_seconds.has_value());
    }
  }
}

TEST(PeerLossPlanTest, ARestartWaitsForTheFenceOfASilentMember) {
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  const Plan plan = f.Run(T0() + seconds(13) + milliseconds(200));
  EXPECT_FALSE(plan.restart.has_value());
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_LE(*plan.requeue_after, seconds(2));
}

TEST(PeerLossPlanTest, AReportNotCorroboratedChangesNothing) {
  PlanFixture f;
  f.Probe(ProbeResult::kReachable);
  const Plan plan = f.Run(T0() + seconds(20));
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_EQ(plan.status.attempt, 0);
  EXPECT_TRUE(plan.pod_deletes.empty());
  for (const EventSpec& e : plan.events) ADD_FAILURE() << "event " << e.reason << ": " << e.message;
  ASSERT_EQ(plan.peer_loss.size(), 1u);
  EXPECT_EQ(plan.peer_loss[0].outcome, "not_corroborated");
  EXPECT_NE(plan.peer_loss[0].evidence.find("the operator reached pod job-worker-1"),
            std::string::npos);
}

TEST(PeerLossPlanTest, AReportOfAnOlderAttemptsServerIsIgnored) {
  // Attempt 1's worker-0 answered with the lost list of attempt 0's server (its rounds start at
  // 0): an old server still up at a reused address.
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  f.job.job.status.attempt = 1;
  for (kube::Pod& pod : f.observed.pods) pod.meta.labels[std::string(api::kLabelAttempt)] = "1";
  const Plan plan = f.Run(T0() + seconds(20));
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_TRUE(plan.peer_loss.empty());
  EXPECT_TRUE(plan.launcher_probes.empty());
}

// Hot spares: the server promoted a standby spare into the lost node-rank in the same step that
// recorded the loss; the spare covers it, so the report restarts nothing and probes nothing
// (spare_plan.h deletes the lost pod). A spare serving another node-rank covers nothing.
TEST(PeerLossPlanTest, ALossASpareTookOverRestartsNothing) {
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  const protocol::LostMember lost = Report();
  f.observed.launchers->status.serving = {
      protocol::SpareServing{lost.node_rank, 0, lost.round + 1, "job-spare-0.job.ns.svc"}};
  Plan plan = f.Run(T0() + seconds(20));
  EXPECT_FALSE(plan.restart.has_value());
  EXPECT_TRUE(plan.peer_loss.empty());
  EXPECT_TRUE(plan.launcher_probes.empty());

  f.observed.launchers->status.serving[0].node_rank = lost.node_rank + 1;
  plan = f.Run(T0() + seconds(20));
  ASSERT_TRUE(plan.restart.has_value());
  EXPECT_EQ(plan.restart->reason, kReasonPeerReportedLost);
}

// The fence waits for the launchers' own timings: a template that lengthens the peer timeout
// (the operator does not set it) lengthens the wait; a shorter one, or garbage, never shortens it.
TEST(PeerLossPlanTest, TheFenceFollowsALongerPeerTimeoutTheTemplateSets) {
  const auto with_env = [](std::vector<std::pair<std::string, std::string>> vars) {
    api::TrainingJobSpec spec;
    nlohmann::json env = nlohmann::json::array();
    for (const auto& [k, v] : vars) env.push_back({{"name", k}, {"value", v}});
    spec.pod_template = {{"spec", {{"containers", {{{"name", "trainer"}, {"env", env}}}}}}};
    return spec;
  };
  EXPECT_EQ(LauncherTimings(with_env({})).peer_timeout, protocol::contract::kDefaultPeerTimeout);
  EXPECT_EQ(LauncherTimings(with_env({{"LOCKSTEP_PEER_TIMEOUT", "20"}})).peer_timeout,
            std::chrono::milliseconds(20000));
  EXPECT_EQ(LauncherTimings(with_env({{"LOCKSTEP_PEER_TIMEOUT", "2.5"}})).peer_timeout,
            protocol::contract::kDefaultPeerTimeout);
  EXPECT_EQ(LauncherTimings(with_env({{"LOCKSTEP_PEER_TIMEOUT", "soon"}})).peer_timeout,
            protocol::contract::kDefaultPeerTimeout);
  EXPECT_EQ(LauncherTimings(with_env({{"LOCKSTEP_HEARTBEAT_INTERVAL", "3"}})).heartbeat_interval,
            std::chrono::milliseconds(3000));
  api::TrainingJobSpec roles = with_env({});
  roles.roles.push_back(api::Role{"ps", 1, std::nullopt,
                                  with_env({{"LOCKSTEP_PEER_TIMEOUT", "30"}}).pod_template});
  EXPECT_EQ(LauncherTimings(roles).peer_timeout, std::chrono::milliseconds(30000));

  // Through the plan: a silent member last heard at T0+10 s is fenced at T0+10+20+1+1 s.
  PlanFixture f;
  f.Probe(ProbeResult::kUnreachable);
  f.job.job.spec.pod_template["spec"]["containers"][0]["env"] =
      nlohmann::json::array({{{"name", "LOCKSTEP_PEER_TIMEOUT"}, {"value", "20"}}});
  EXPECT_FALSE(f.Run(T0() + seconds(25)).restart.has_value());
  EXPECT_TRUE(f.Run(T0() + seconds(33)).restart.has_value());
}

TEST(PeerLossPlanTest, AStalePodOnAnExcludedPeerLostNodeIsForceDeleted) {
  // The pass after the restart: attempt 1, the old pod Terminating on the node the peer
  // evidence excluded (the node monitor does not know it lost yet).
  PlanFixture f;
  f.job.job.status.attempt = 1;
  f.job.job.status.excluded_nodes = {
      api::ExcludedNode{"node-b", kReasonPeerReportedLost, T0() + seconds(300)}};
  f.observed.pods[1].meta.deletion_timestamp = "2027-01-01T00:00:00Z";
  f.observed.launchers.reset();
  const Plan plan = f.Run(T0() + seconds(21));
  bool forced = false;
  for (const PodDeletion& d : plan.pod_deletes) {
    if (d.name == "job-worker-1") forced = d.grace_period_seconds == std::optional<int64_t>(0);
  }
  EXPECT_TRUE(forced);
}

// The nodes whose Node and Lease the peer evidence needs (the reconciler reads them from its
// caches): of the pods the reports name, each node once.
TEST(ReportedNodesTest, Table) {
  const std::vector<kube::Pod> pods = {
      Pod("worker", 0, "Running", "node-a"), Pod("worker", 1, "Running", "node-a"),
      Pod("worker", 2, "Running", "node-b"), Pod("worker", 3, "Pending", "")};
  struct NodesRow {
    std::string name;
    std::vector<std::string> lost;  // the lost members' pod names, node-ranks 0, 1, ...
    std::vector<std::string> nodes;
  };
  const std::vector<NodesRow> rows = {
      {"nothing lost", {}, {}},
      {"one pod", {"job-worker-2"}, {"node-b"}},
      {"two pods of one node: the node once", {"job-worker-0", "job-worker-1"}, {"node-a"}},
      {"in the pods' order", {"job-worker-2", "job-worker-0"}, {"node-a", "node-b"}},
      {"names of no pod", {"job-worker-9", "x"}, {}},
      {"a pod not bound", {"job-worker-3"}, {}},
      {"no name (the plan finds the pod by its slot; no node read)", {""}, {}},
  };
  for (const NodesRow& row : rows) {
    std::vector<protocol::LostMember> lost;
    for (const std::string& name : row.lost) {
      protocol::LostMember m;
      m.node_rank = static_cast<uint32_t>(lost.size());
      m.pod_name = name;
      lost.push_back(m);
    }
    EXPECT_EQ(ReportedNodes(lost, pods), row.nodes) << row.name;
  }
}

// A launcher that did not know its pod's name reports the node-rank alone: the pass finds the pod
// by the node-rank's slot; a node-rank past the job names no pod (stale).
TEST(PeerLossPlanTest, AReportWithoutAPodNameIsFoundByItsNodeRank) {
  PlanFixture f;
  f.observed.launchers->status.lost[0].pod_name = "";
  Plan plan = f.Run(T0() + seconds(20));
  ASSERT_EQ(plan.launcher_probes.size(), 1u);
  EXPECT_EQ(plan.launcher_probes[0].pod, "job-worker-1");

  f.observed.launchers->status.lost[0].node_rank = 7;
  plan = f.Run(T0() + seconds(20));
  EXPECT_TRUE(plan.launcher_probes.empty());
  ASSERT_EQ(plan.peer_loss.size(), 1u);
  EXPECT_EQ(plan.peer_loss[0].outcome, "stale");
}

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

// The peer-loss step alone (PlanPeerLoss on a pass built here) for a running job of `ranks`
// node-ranks whose worker-0 reports every other node-rank lost: the least thread CPU time of 3
// runs (so a loaded host moves every figure alike).
double PeerLossStepSeconds(int ranks) {
  CachedJob job = Job(ranks);
  Observed observed;
  for (int i = 0; i < ranks; ++i) {
    kube::Pod p = Pod("worker", i, "Running", "node-" + std::to_string(i));
    p.pod_ip = "10.0." + std::to_string(i / 250) + "." + std::to_string(i % 250);
    observed.pods.push_back(std::move(p));
  }
  LauncherObservation obs;
  obs.answered = true;
  obs.status.round = 1;
  for (int i = 1; i < ranks; ++i) {
    protocol::LostMember m = Report();
    m.node_rank = static_cast<uint32_t>(i);
    m.pod_name = "job-worker-" + std::to_string(i);
    m.pod_uid = "pod-uid-worker" + std::to_string(i);
    m.node_name = "node-" + std::to_string(i);
    obs.status.lost.push_back(std::move(m));
  }
  observed.launchers = std::move(obs);
  const PlanOptions options;
  const std::vector<kube::Pod> stale;
  double least = 1e9;
  for (int run = 0; run < 3; ++run) {
    Plan plan;
    Pass p{job.job, observed, T0() + seconds(20), true, options, &plan, observed.pods, stale,
           job.job.spec};
    const double start = ThreadCpuSeconds();
    EXPECT_FALSE(PlanPeerLoss(p));
    least = std::min(least, ThreadCpuSeconds() - start);
    EXPECT_EQ(plan.launcher_probes.size(), static_cast<size_t>(ranks - 1));  // one per report
  }
  return least;
}

// Issue 44 item 1: what worker-0 (the tenant's code) reports costs a pass O(job size). Its lost
// members are bounded by the job's node-ranks (protocol CheckControlBounds), so a job of the most
// node-ranks spec.replicas allows, 10,000, may report 9,999 on every poll: ten times the reports
// of a job of 2,500 may cost about four times the step's CPU, at most 8 times. With each report's
// pod found by a scan of the pods (before), they cost about 16 times as much: this test failed
// (see the commit).
TEST(PeerLossPlanTest, TheStepCostsLinearTimeInTheReportsOfTheLargestJob) {
  const double small = PeerLossStepSeconds(2500), large = PeerLossStepSeconds(10000);
  std::printf("peer-loss step: 2,499 reports %.4f s CPU, 9,999 reports %.4f s (%.1fx)\n", small,
              large, large / small);
  EXPECT_LT(large, 8 * small);
}

// PeerLossLogLimit (peer_loss_log.h): which verdicts the reconciler logs, per job and verdict,
// and how many it says it held back. Each row: seconds since the start, job, verdict, and the
// answer expected (-1: held back).
TEST(PeerLossLogLimitTest, Table) {
  struct LogRow {
    int at_s;
    std::string job, verdict;
    int64_t want;
  };
  const std::vector<LogRow> rows = {
      // A hostile worker-0 names a new loss time every poll (2 s): three lines, then counted.
      {0, "ns/a", "stale", 0},
      {2, "ns/a", "stale", 0},
      {4, "ns/a", "stale", 0},
      {6, "ns/a", "stale", -1},
      {8, "ns/a", "stale", -1},
      // Another verdict of the same job, and another job, have their own budget.
      {8, "ns/a", "corroborated", 0},
      {8, "ns/b", "stale", 0},
      {58, "ns/a", "stale", -1},
      // A minute after the first line there is room for one again; it says how many were not
      // logged; the next held back count starts from zero.
      {60, "ns/a", "stale", 3},
      {61, "ns/a", "stale", -1},
      {62, "ns/a", "stale", 1},
      {64, "ns/a", "stale", 0},
      {65, "ns/a", "stale", -1},
      // An honest loss of three nodes at once logs each report.
      {70, "ns/c", "waiting", 0},
      {70, "ns/c", "waiting", 0},
      {70, "ns/c", "waiting", 0},
  };
  PeerLossLogLimit limit;
  const Clock::Steady t0 = Clock::Steady(std::chrono::hours(1));
  for (size_t i = 0; i < rows.size(); ++i) {
    const LogRow& r = rows[i];
    const std::optional<uint64_t> got = limit.Allow(r.job, r.verdict, t0 + seconds(r.at_s));
    const int64_t got_i = got ? static_cast<int64_t>(*got) : -1;
    EXPECT_EQ(got_i, r.want) << "row " << i << ": " << r.job << " " << r.verdict << " at "
                             << r.at_s << " s";
  }
}

// Jobs come and go: the limiter forgets the quiet ones past its bound.
TEST(PeerLossLogLimitTest, HoldsAtMostItsBound) {
  PeerLossLogLimit limit;
  const Clock::Steady t0 = Clock::Steady(std::chrono::hours(1));
  for (size_t i = 0; i < kMaxPeerLossLogKeys + 10; ++i) {
    ASSERT_TRUE(limit.Allow("ns/job-" + std::to_string(i), "stale", t0).has_value());
  }
  EXPECT_LE(limit.keys(), kMaxPeerLossLogKeys);
  // A window later every one of them is quiet.
  ASSERT_TRUE(limit.Allow("ns/late", "stale", t0 + kPeerLossLogWindow).has_value());
  EXPECT_LE(limit.keys(), kMaxPeerLossLogKeys);
}

}  // namespace
}  // namespace lockstep::controller
