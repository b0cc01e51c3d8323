// Issue 6, node loss: a node of a running 8-pod job stops renewing its Lease / is deleted / turns
// NotReady / gets a NoExecute taint. Each time the gang must run again as a new attempt on other
// nodes within 30 s, with no pod left Terminating, the node excluded, and status, event and
// metrics naming the node and the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>

#include "operator/api/time.h"
#include "tests/integration/failures/failures_env.h"

namespace lockstep::failures::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

constexpr int kWorkers = 8;
constexpr double kRecoveryBoundSeconds = 30;

struct Loss {
  std::string reason;       // NodeLeaseExpired, NodeDeleted, ...
  bool from_lease = false;  // measure from the Lease's last renewal (else from the fault)
};

class NodeLossTest : public FailuresTest {
 protected:
  // Runs the job on 9 nodes (one spare), applies `fault` to the node of worker-0, and checks
  // everything the acceptance names. Returns the victim.
  std::string RunAndLoseANode(const std::string& job, const Loss& loss,
                              const std::function<void(const std::string&)>& fault) {
    CreateNodes(kWorkers + 1);
    CreateJob(MakeJob(job, kWorkers));
    EXPECT_TRUE(WaitRunningAttempt(job, 0, kWorkers, seconds(60)))
        << "attempt 0 never ran; pods: " << json(Pods(job)).dump().substr(0, 2000);
    if (HasFailure()) return "";
    std::string victim;
    for (const json& pod : Pods(job)) {
      if (pod["metadata"]["name"] == job + "-worker-0") victim = pod["spec"]["nodeName"];
    }
    EXPECT_FALSE(victim.empty());

    const std::vector<std::pair<std::string, std::string>> restart_labels = {
        {"namespace", ns()}, {"reason", loss.reason}};
    const double restarts_before = Metric("lockstep_restarts_total", restart_labels);
    const double detected_before =
        Metric("lockstep_node_failures_detected_total", {{"reason", loss.reason}});
    const double recovered_before =
        Metric("lockstep_recovery_duration_seconds_count", {{"namespace", ns()}});

    const Clock::time_point fault_at = Clock::now();
    fault(victim);
    if (HasFailure()) return victim;

    // Poll the job and its pods together so a "Restarting" state in between is seen.
    bool saw_restarting = false;
    std::optional<Clock::time_point> running_at;
    kube::testing::WaitFor(
        [&] {
          StatusOr<json> j = GetJob(job);
          if (j.ok() && State(*j) == "Restarting") saw_restarting = true;
          if (RunningAttempt(job, 1, kWorkers).empty()) return false;
          running_at = Clock::now();
          return true;
        },
        seconds(90), std::chrono::milliseconds(50));
    EXPECT_TRUE(running_at.has_value())
        << "attempt 1 never ran with " << kWorkers
        << " pods; pods: " << json(Pods(job)).dump().substr(0, 3000);
    if (!running_at) return victim;

    // 1. Within the bound, from the last heartbeat (Lease) or from the fault.
    Clock::time_point from = fault_at;
    if (loss.from_lease) {
      std::optional<Clock::time_point> renewed = LeaseRenewTime(victim);
      EXPECT_TRUE(renewed.has_value()) << "no Lease for " << victim;
      if (renewed) from = *renewed;
    }
    const double took = SecondsBetween(from, *running_at);
    std::cout << "[recovery] " << loss.reason << ": " << took << " s from "
              << (loss.from_lease ? "the last Lease renewal" : "the fault") << " to " << kWorkers
              << " pods of attempt 1 Running (fault -> running "
              << SecondsBetween(fault_at, *running_at) << " s)\n";
    EXPECT_LE(took, kRecoveryBoundSeconds);
    EXPECT_TRUE(saw_restarting) << "status.state never read Restarting during the recovery";

    // 2. On other nodes, nothing left Terminating, no pod of attempt 0.
    const std::vector<json> pods = Pods(job);
    EXPECT_EQ(pods.size(), static_cast<size_t>(kWorkers));
    for (const json& pod : pods) {
      EXPECT_NE(pod["spec"].value("nodeName", ""), victim) << pod["metadata"]["name"];
      EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp")) << pod["metadata"]["name"];
      EXPECT_EQ(pod["metadata"]["labels"].value("lockstep.dev/attempt", ""), "1");
    }

    // 3. Status: Running again, attempt 1, lastRestart and the exclusion name the node.
    StatusOr<json> got = WaitForJob(
        job, [](const json& j) { return Attempt(j) == 1 && State(j) == "Running"; }, seconds(15));
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return victim;
    const json& status = (*got)["status"];
    const json last = status.value("lastRestart", json::object());
    EXPECT_EQ(last.value("reason", ""), loss.reason) << last.dump();
    EXPECT_NE(last.value("message", "").find(victim), std::string::npos) << last.dump();
    EXPECT_EQ(last.value("attempt", -1), 1) << last.dump();
    EXPECT_EQ(last.value("mode", ""), "Recreate") << last.dump();
    EXPECT_EQ(last.value("nodes", json::array()), json::array({victim})) << last.dump();
    EXPECT_EQ(status.value("/restarts/disruptions"_json_pointer, -1), 1) << status.dump();
    EXPECT_EQ(status.value("/restarts/failures"_json_pointer, -1), 0) << status.dump();
    const json excluded = Excluded(*got, victim);
    EXPECT_FALSE(excluded.is_null()) << "not in status.excludedNodes: " << status.dump();
    if (!excluded.is_null()) {
      EXPECT_EQ(excluded.value("reason", ""), loss.reason);
      StatusOr<Clock::time_point> until = api::ParseTime(excluded.value("until", ""));
      EXPECT_TRUE(until.ok() && *until > Clock::now()) << excluded.dump();
    }

    // 4. A Warning event with the reason whose message names the node.
    json event;
    kube::testing::WaitFor(
        [&] {
          event = FindEvent(job, loss.reason);
          return !event.is_null();
        },
        seconds(10));
    EXPECT_FALSE(event.is_null()) << "no " << loss.reason << " event; events: "
                                  << json(JobEvents(job)).dump().substr(0, 2000);
    if (!event.is_null()) {
      EXPECT_EQ(event.value("type", ""), "Warning");
      EXPECT_NE(event.value("message", "").find(victim), std::string::npos) << event.dump();
    }

    // 5. Metrics: the restart by reason, the detection by reason, one more recovery observed.
    EXPECT_GE(Metric("lockstep_restarts_total", restart_labels), restarts_before + 1);
    EXPECT_GE(Metric("lockstep_restarts_total",
                     {{"namespace", ns()}, {"reason", loss.reason}, {"mode", "Recreate"}}),
              1);
    EXPECT_GE(Metric("lockstep_node_failures_detected_total", {{"reason", loss.reason}}),
              detected_before + 1);
    EXPECT_TRUE(kube::testing::WaitFor(
        [&] {
          return Metric("lockstep_recovery_duration_seconds_count", {{"namespace", ns()}}) >=
                 recovered_before + 1;
        },
        seconds(10)))
        << "lockstep_recovery_duration_seconds did not count the recovery";
    return victim;
  }
};

TEST_F(NodeLossTest, LeaseStopsRenewingJobRunsAgainElsewhereWithin30sOfTheLastRenewal) {
  const std::string victim =
      RunAndLoseANode("lease", {"NodeLeaseExpired", /*from_lease=*/true},
                      [this](const std::string& node) { StopHeartbeat(node); });
  // The detection delay is measurable here (the last renewal is known).
  EXPECT_GE(Metric("lockstep_detection_delay_seconds_count", {{"reason", "NodeLeaseExpired"}}), 1);
  // The node is still Ready as far as its (frozen) status says: only the exclusion keeps the
  // scheduler off it. It must not be used by a later attempt either.
  EXPECT_TRUE(WaitNodeReady(victim, seconds(1)));
}

TEST_F(NodeLossTest, DeletedNodeJobRunsAgainElsewhere) {
  RunAndLoseANode("deleted", {"NodeDeleted"},
                  [this](const std::string& node) { DeleteNode(node); });
}

TEST_F(NodeLossTest, NotReadyNodeJobRunsAgainElsewhere) {
  RunAndLoseANode("notready", {"NodeNotReady"},
                  [this](const std::string& node) { SetReady(node, "False"); });
}

TEST_F(NodeLossTest, NoExecuteTaintJobRunsAgainElsewhere) {
  RunAndLoseANode("tainted", {"NodeTainted"},
                  [this](const std::string& node) { TaintNoExecute(node); });
}

// A member of a running gang that someone else deletes and that is gone at once (grace period 0:
// no update with a deletionTimestamp comes first, as a kwok node or a launcher that stops in
// milliseconds can make it) is no refill of the same attempt: the gang restarts as attempt 1
// with reason PodDeleted. Before gone_pods.h the operator recreated worker-0 under attempt 0,
// its scheduler then found a half-bound gang and deleted the 3 running members (CI, 2026-12-03:
// NoExecuteTaintJobRunsAgainElsewhere never reached attempt 1 that way).
TEST_F(NodeLossTest, AMemberForceDeletedRestartsTheGangAsTheNextAttempt) {
  CreateNodes(5);  // one spare, as above
  CreateJob(MakeJob("forced", 4));
  ASSERT_TRUE(WaitRunningAttempt("forced", 0, 4, seconds(60)));
  kube::DeleteOptions force;
  force.grace_period_seconds = 0;
  ASSERT_TRUE(client().Delete(kube::resources::Pods(), ns(), "forced-worker-0", force).ok());
  EXPECT_TRUE(WaitRunningAttempt("forced", 1, 4, seconds(60)))
      << "attempt 1 never ran; pods: " << json(Pods("forced")).dump().substr(0, 2000);
  StatusOr<json> got = WaitForJob(
      "forced", [](const json& j) { return Attempt(j) == 1 && State(j) == "Running"; },
      seconds(15));
  ASSERT_TRUE(got.ok()) << got.status();
  const json last = (*got)["status"].value("lastRestart", json::object());
  EXPECT_EQ(last.value("reason", ""), "PodDeleted") << last.dump();
  EXPECT_NE(last.value("message", "").find("forced-worker-0"), std::string::npos) << last.dump();
  EXPECT_EQ((*got)["status"].value("/restarts/disruptions"_json_pointer, -1), 1);
  // Never refilled: no pod of attempt 0 was created again, so none was undone.
  EXPECT_TRUE(FindEvent("forced", "BindFailed").is_null())
      << FindEvent("forced", "BindFailed").dump();
}

}  // namespace
}  // namespace lockstep::failures::testing

namespace lockstep::failures::testing {
namespace {

// Found by bench/recovery: a node the detector already holds lost is excluded only for the job
// that lost it; until the node controller marks it (50 s) it still reads Ready, and the gang
// scheduler places other jobs' new attempts on it, which are then lost in turn. Here job "a"
// loses n0 and moves to n1; job "b", created afterwards, has only the dead n0 free and must wait
// rather than be placed there.
TEST_F(NodeLossTest, NoNewGangIsPlacedOnANodeAlreadyKnownLost) {
  const std::vector<std::string> nodes = CreateNodes(1);
  CreateJob(MakeJob("a", 1));
  ASSERT_TRUE(WaitRunningAttempt("a", 0, 1, seconds(60)));
  CreateNodes(1);  // n1: the room "a" moves to
  StopHeartbeat(nodes[0]);
  ASSERT_TRUE(WaitRunningAttempt("a", 1, 1, seconds(kLeaseGraceSeconds + 30)));
  CreateJob(MakeJob("b", 1));
  // The scheduler places a feasible gang within a second; give it a few.
  std::string placed_on;
  kube::testing::WaitFor(
      [&] {
        for (const json& pod : Pods("b")) placed_on = pod["spec"].value("nodeName", "");
        return !placed_on.empty();
      },
      seconds(5));
  EXPECT_NE(placed_on, nodes[0]) << "job b was placed on " << nodes[0]
                                 << ", whose Lease the detector already found expired";
  StatusOr<json> b = GetJob("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(Attempt(*b), 0) << (*b)["status"].dump();
}

}  // namespace
}  // namespace lockstep::failures::testing
