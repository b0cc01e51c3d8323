// AssessNode, one row per verdict and per precedence edge, with a fake `now`.
#include "operator/controller/node_health.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lockstep::controller {
namespace {

using std::chrono::seconds;

api::Time T(const std::string& rfc3339) {
  auto t = kube::ParseTime(rfc3339);
  EXPECT_TRUE(t.ok()) << rfc3339;
  return *t;
}

const api::Time kNow = T("2026-11-29T12:00:00Z");

kube::Node HealthyNode() {
  kube::Node n;
  n.meta.name = "gpu-node-1";
  n.ready = kube::Condition{"Ready",
                            "True",
                            "KubeletReady",
                            "kubelet is posting ready status",
                            "2026-11-29T10:00:00Z",
                            "2026-11-29T11:59:55Z"};
  return n;
}

kube::Lease LeaseRenewedAt(const std::string& renew_time) {
  kube::Lease l;
  l.meta.name = "gpu-node-1";
  l.meta.namespace_ = "kube-node-lease";
  l.lease_duration_seconds = 40;
  l.renew_time = renew_time;
  return l;
}

kube::Node WithReady(const std::string& status, const std::string& since) {
  kube::Node n = HealthyNode();
  n.ready->status = status;
  n.ready->reason = status == "False" ? "KubeletNotReady" : "NodeStatusUnknown";
  n.ready->message = status == "False" ? "container runtime is down" : "";
  n.ready->last_transition_time = since;
  return n;
}

kube::Node WithTaint(kube::Node n, const std::string& key, const std::string& effect,
                     const std::string& time_added = "") {
  n.taints.push_back(kube::Taint{key, "", effect, time_added});
  return n;
}

kube::Node Cordoned(const std::string& since = "") {
  kube::Node n = WithTaint(HealthyNode(), "node.kubernetes.io/unschedulable", "NoSchedule", since);
  n.unschedulable = true;
  return n;
}

struct Row {
  std::string name;
  std::optional<kube::Node> node;
  std::optional<kube::Lease> lease;
  bool restart_on_cordon = false;
  bool lost = false;
  std::string reason;
  std::string message;  // exact
  std::optional<api::Time> failed_at;
};

Row Healthy(std::string name, std::optional<kube::Node> node, std::optional<kube::Lease> lease,
            bool restart_on_cordon = false) {
  return Row{std::move(name), std::move(node), std::move(lease), restart_on_cordon, false, "", "",
             std::nullopt};
}

Row Lost(std::string name, std::optional<kube::Node> node, std::optional<kube::Lease> lease,
         bool restart_on_cordon, std::string reason, std::string message,
         std::optional<api::Time> failed_at = std::nullopt) {
  return Row{std::move(name),   std::move(node),    std::move(lease), restart_on_cordon, true,
             std::move(reason), std::move(message), failed_at};
}

class AssessNodeTest : public ::testing::TestWithParam<Row> {};

TEST_P(AssessNodeTest, Verdict) {
  const Row& row = GetParam();
  NodeHealthOptions options;
  options.lease_grace = seconds(20);
  options.restart_on_cordon = row.restart_on_cordon;
  const NodeVerdict v = AssessNode("gpu-node-1", row.node ? &*row.node : nullptr,
                                   row.lease ? &*row.lease : nullptr, kNow, options);
  EXPECT_EQ(v.lost, row.lost);
  EXPECT_EQ(v.reason, row.reason);
  EXPECT_EQ(v.message, row.message);
  EXPECT_EQ(v.failed_at, row.failed_at);
}

const kube::Lease kFresh = LeaseRenewedAt("2026-11-29T11:59:55.123456Z");
const kube::Lease kStale = LeaseRenewedAt("2026-11-29T11:59:37.500000Z");  // 22.5 s old

INSTANTIATE_TEST_SUITE_P(
    Rows, AssessNodeTest,
    ::testing::Values(
        Healthy("Healthy", HealthyNode(), kFresh),
        Healthy("HealthyWithoutLease", HealthyNode(), std::nullopt),
        Healthy(
            "NoReadyConditionYet",
            [] {
              kube::Node n = HealthyNode();
              n.ready.reset();
              return n;
            }(),
            kFresh),
        Healthy("LeaseExactlyAtGraceIsNotLost", HealthyNode(),
                LeaseRenewedAt("2026-11-29T11:59:40Z")),
        Healthy("UnparseableRenewTimeIsIgnored", HealthyNode(), LeaseRenewedAt("yesterday")),
        Healthy("LeaseRenewedInTheFuture", HealthyNode(), LeaseRenewedAt("2026-11-29T12:00:30Z")),
        Lost("Deleted", std::nullopt, kFresh, false, "NodeDeleted", "node gpu-node-1: deleted"),
        Lost("NeverSeen", std::nullopt, std::nullopt, false, "NodeDeleted",
             "node gpu-node-1: deleted"),
        Lost("DeletedBeatsStaleLease", std::nullopt, kStale, false, "NodeDeleted",
             "node gpu-node-1: deleted"),
        Lost("NotReady", WithReady("False", "2026-11-29T11:59:58Z"), kFresh, false, "NodeNotReady",
             "node gpu-node-1: Ready=False (KubeletNotReady: container runtime is down)",
             T("2026-11-29T11:59:58Z")),
        Lost("Unknown", WithReady("Unknown", "2026-11-29T11:59:58Z"), std::nullopt, false,
             "NodeUnreachable", "node gpu-node-1: Ready=Unknown (NodeStatusUnknown)",
             T("2026-11-29T11:59:58Z")),
        // The node controller flips Ready to Unknown ~40 s after the last heartbeat: the lease
        // says when the node really went.
        Lost("UnknownDatedByOlderLease", WithReady("Unknown", "2026-11-29T11:59:58Z"), kStale,
             false, "NodeUnreachable", "node gpu-node-1: Ready=Unknown (NodeStatusUnknown)",
             T("2026-11-29T11:59:37.5Z")),
        // A live kubelet reporting NotReady still renews: its lease dates nothing.
        Lost("NotReadyWithLiveLeaseDatedByTransition", WithReady("False", "2026-11-29T11:59:58Z"),
             LeaseRenewedAt("2026-11-29T11:59:50Z"), false, "NodeNotReady",
             "node gpu-node-1: Ready=False (KubeletNotReady: container runtime is down)",
             T("2026-11-29T11:59:58Z")),
        Lost("NotReadyKeepsTransitionWhenLeaseIsNewer", WithReady("False", "2026-11-29T11:50:00Z"),
             kFresh, false, "NodeNotReady",
             "node gpu-node-1: Ready=False (KubeletNotReady: container runtime is down)",
             T("2026-11-29T11:50:00Z")),
        Lost("NotReadyBeatsNoExecuteAndStaleLease",
             WithTaint(WithReady("False", "2026-11-29T11:59:58Z"), "node.kubernetes.io/not-ready",
                       "NoExecute", "2026-11-29T11:59:59Z"),
             kStale, false, "NodeNotReady",
             "node gpu-node-1: Ready=False (KubeletNotReady: container runtime is down)",
             T("2026-11-29T11:59:37.5Z")),
        Lost("NoExecuteTaint",
             WithTaint(HealthyNode(), "maintenance", "NoExecute", "2026-11-29T11:59:50Z"), kFresh,
             false, "NodeTainted", "node gpu-node-1: tainted maintenance:NoExecute",
             T("2026-11-29T11:59:50Z")),
        Lost(
            "NoExecuteTaintWithValueNoTimeAdded",
            [] {
              kube::Node n = HealthyNode();
              n.taints.push_back(kube::Taint{"gpu", "xid-79", "NoExecute", ""});
              return n;
            }(),
            kFresh, false, "NodeTainted", "node gpu-node-1: tainted gpu=xid-79:NoExecute"),
        Lost("NoExecuteBeatsStaleLease", WithTaint(HealthyNode(), "maintenance", "NoExecute"),
             kStale, false, "NodeTainted", "node gpu-node-1: tainted maintenance:NoExecute"),
        Healthy("NoScheduleTaintIgnored", WithTaint(HealthyNode(), "nvidia.com/gpu", "NoSchedule"),
                kFresh),
        Healthy("PreferNoScheduleTaintIgnored",
                WithTaint(HealthyNode(), "spot", "PreferNoSchedule"), kFresh),
        Lost("LeaseExpired", HealthyNode(), kStale, false, "NodeLeaseExpired",
             "node gpu-node-1: lease not renewed for 22s", T("2026-11-29T11:59:37.5Z")),
        Lost("LeaseExpiredBeatsCordon", Cordoned("2026-11-29T11:00:00Z"), kStale, true,
             "NodeLeaseExpired", "node gpu-node-1: lease not renewed for 22s",
             T("2026-11-29T11:59:37.5Z")),
        Healthy("CordonIgnoredByDefault", Cordoned("2026-11-29T11:00:00Z"), kFresh),
        Lost("CordonRestarts", Cordoned("2026-11-29T11:00:00Z"), kFresh, true, "NodeCordoned",
             "node gpu-node-1: cordoned", T("2026-11-29T11:00:00Z")),
        Lost("CordonWithoutTaintTime", Cordoned(), kFresh, true, "NodeCordoned",
             "node gpu-node-1: cordoned")),
    [](const ::testing::TestParamInfo<Row>& row) { return row.param.name; });

// Found by the chaos tier (ControlPlaneChaosTest): while the apiserver restarted, no Lease was
// renewed, and the Leases then looked 20+ s old to a monitor whose own view had broken off: every
// node with a job was lost and its jobs restarted. A Lease's silence counts only from when the
// monitor's view of Leases is continuous again, and not at all while it is broken.
TEST(AssessNodeLeaseViewTest, SilenceCountsFromWhenTheViewOfLeasesResumed) {
  NodeHealthOptions options;
  options.lease_grace = seconds(20);
  const kube::Node node = HealthyNode();
  const auto verdict = [&](api::Time fresh_since) {
    return AssessNode("gpu-node-1", &node, &kStale, kNow, options, fresh_since);
  };
  EXPECT_TRUE(verdict(api::Time{}).lost) << "a continuous view: 22.5 s of silence is lost";
  EXPECT_FALSE(verdict(api::Time::max()).lost) << "a broken view judges no Lease";
  EXPECT_FALSE(verdict(T("2026-11-29T11:59:45Z")).lost) << "resumed 15 s ago";
  const NodeVerdict late = verdict(T("2026-11-29T11:59:39Z"));  // resumed 21 s ago
  EXPECT_TRUE(late.lost);
  EXPECT_EQ(late.message, "node gpu-node-1: lease not renewed for 21s");
}

// A lost node's verdict carries its NoExecute taints, whatever the reason (the restart leaves the
// pods the taint-eviction controller deletes to it); a healthy node's carries none.
TEST(AssessNodeTaintsTest, ALostNodesVerdictCarriesItsNoExecuteTaints) {
  const NodeHealthOptions options;
  const kube::Node tainted = WithTaint(WithTaint(WithReady("False", "2026-11-29T11:59:58Z"),
                                                 "node.kubernetes.io/not-ready", "NoExecute"),
                                       "spot", "NoSchedule");
  const NodeVerdict lost = AssessNode("gpu-node-1", &tainted, &kFresh, kNow, options);
  ASSERT_EQ(lost.reason, "NodeNotReady");
  ASSERT_EQ(lost.no_execute_taints.size(), 1u);
  EXPECT_EQ(lost.no_execute_taints[0].key, "node.kubernetes.io/not-ready");
  const kube::Node healthy = WithTaint(HealthyNode(), "spot", "NoSchedule");
  EXPECT_TRUE(AssessNode("gpu-node-1", &healthy, &kFresh, kNow, options).no_execute_taints.empty());
}

// A pod the taint-eviction controller marked names its node tainted before the Node cache shows
// the taint; any other pod, or a mark with another reason, says nothing about its node.
TEST(TaintEvictionVerdictTest, OnlyTheTaintManagersMarkNamesTheNode) {
  kube::Pod pod;
  pod.meta.name = "job-worker-0";
  pod.node_name = "gpu-node-1";
  EXPECT_FALSE(TaintEvictionVerdict(pod).lost);
  pod.conditions.push_back({"DisruptionTarget", "True", "DeletionByTaintManager",
                            "Taint manager: deleting due to NoExecute taint", "", ""});
  const NodeVerdict v = TaintEvictionVerdict(pod);
  EXPECT_TRUE(v.lost);
  EXPECT_EQ(v.reason, "NodeTainted");
  EXPECT_NE(v.message.find("node gpu-node-1"), std::string::npos) << v.message;
  EXPECT_NE(v.message.find("job-worker-0"), std::string::npos) << v.message;
  pod.conditions[0].reason = "EvictionByEvictionAPI";
  EXPECT_FALSE(TaintEvictionVerdict(pod).lost);
  pod.conditions[0].reason = "DeletionByTaintManager";
  pod.conditions[0].status = "False";
  EXPECT_FALSE(TaintEvictionVerdict(pod).lost);
  pod.conditions[0].status = "True";
  pod.node_name.clear();
  EXPECT_FALSE(TaintEvictionVerdict(pod).lost);
}

TEST(LeaseDeadlineTest, RenewTimePlusGrace) {
  NodeHealthOptions options;
  options.lease_grace = seconds(3);
  EXPECT_EQ(LeaseDeadline(kFresh, options), T("2026-11-29T11:59:58.123456Z"));
  EXPECT_EQ(LeaseDeadline(LeaseRenewedAt(""), options), std::nullopt);
  // Silence counted from a later start (a Lease view restored, a silence hold released).
  EXPECT_EQ(LeaseDeadline(kFresh, options, T("2026-11-29T12:00:10Z")), T("2026-11-29T12:00:13Z"));
  EXPECT_EQ(LeaseDeadline(kFresh, options, T("2026-11-29T11:00:00Z")),
            T("2026-11-29T11:59:58.123456Z"));
}

TEST(NextTickDelayTest, SleepsATickOrUntilAWindowPastTheFirstGraceToEnd) {
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  const api::Time now = T("2026-11-29T12:00:00Z");
  const nanoseconds tick = seconds(1);
  const nanoseconds coalesce = milliseconds(250);
  struct Case {
    std::string name;
    std::vector<api::Time> deadlines;
    nanoseconds want;
  };
  const std::vector<Case> cases = {
      {"no Leases", {}, tick},
      {"every grace ends after the tick", {now + seconds(5), now + seconds(20)}, tick},
      {"one ends within the tick", {now + seconds(5), now + milliseconds(300)}, milliseconds(550)},
      {"the earliest of several",
       {now + milliseconds(700), now + milliseconds(200)},
       milliseconds(450)},
      {"the window would end past the tick", {now + milliseconds(800)}, tick},
      {"ended already: judged this pass, ignored", {now - milliseconds(10)}, tick},
      {"ends right now", {now}, coalesce},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(NextTickDelay(now, c.deadlines, tick, coalesce), c.want) << c.name;
  }
}

}  // namespace
}  // namespace lockstep::controller
