#pragma once
// Fixture for the failure tests (issue 6): one lockstep-operator child process per test binary
// (gang scheduler on, short node-lease grace) watching one namespace, and per test a pool of kwok
// nodes of its own that the test's jobs select (label lockstep.dev/test-pool), so a test that
// kills a node disturbs nobody else. The test plays the failures: it stops a node's heartbeat
// (kwok's Lease renewals refused by an admission policy), deletes it, flips its Ready condition,
// taints it, or writes a pod's exit code; kwok runs the pods the operator's scheduler binds.

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::failures::testing {

using Clock = std::chrono::system_clock;

inline constexpr char kPoolLabel[] = "lockstep.dev/test-pool";
inline constexpr char kKwokAnnotation[] = "kwok.x-k8s.io/node";
// kwok v0.7 keeps renewing a node's Lease after its annotation is removed; a node (and its Lease)
// labeled lockstep.dev/heartbeat=stopped instead has kwok's writes refused by the admission
// policy in stop-heartbeat-policy.yaml, which the suite installs.
inline constexpr char kHeartbeatLabel[] = "lockstep.dev/heartbeat";
// kwok renews node Leases every 10 s (a quarter of the 40 s lease, like a kubelet), so the grace
// must exceed that by a margin for a loaded machine, and stay small enough that detection plus
// re-placement fit in the 30 s the acceptance allows.
inline constexpr int kLeaseGraceSeconds = 15;

class FailuresTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;
  void TearDown() override;

  kube::RestClient& client() { return *cluster_->client; }
  static const std::string& ns() { return ns_->name(); }
  // This test's pool label value (also the node name prefix).
  const std::string& pool() const { return pool_; }

  // --- nodes (kwok, in this test's pool; deleted after the test) ---
  std::vector<std::string> CreateNodes(int count, int gpus = 8);
  // Heartbeats stop: kwok's Lease renewals and status writes for the node are refused.
  void StopHeartbeat(const std::string& node);
  // kwok's writes are accepted again: Lease renewals resume.
  void RestoreHeartbeat(const std::string& node);
  void SetReady(const std::string& node, const std::string& status);  // "False" / "Unknown"
  void TaintNoExecute(const std::string& node);
  void DeleteNode(const std::string& node);
  bool WaitNodeReady(const std::string& node, std::chrono::seconds timeout);
  // spec.renewTime of the node's Lease in kube-node-lease.
  std::optional<Clock::time_point> LeaseRenewTime(const std::string& node);

  // --- jobs ---
  // A Generic job of `replicas` 8-GPU workers pinned to this test's pool, restartMode Recreate
  // (kwok pods have no launcher to restart in place), backoff 0 unless `mutate` says.
  nlohmann::json MakeJob(const std::string& name, int replicas,
                         const std::function<void(nlohmann::json&)>& mutate = nullptr);
  void CreateJob(const nlohmann::json& job);
  StatusOr<nlohmann::json> GetJob(const std::string& name);
  StatusOr<nlohmann::json> WaitForJob(const std::string& name,
                                      const std::function<bool(const nlohmann::json&)>& pred,
                                      std::chrono::milliseconds timeout);
  std::vector<nlohmann::json> Pods(const std::string& job);
  // The job's pods of `attempt` when there are exactly `count`, all bound, Running and none
  // terminating, and no pod of another attempt is left; empty otherwise.
  std::vector<nlohmann::json> RunningAttempt(const std::string& job, int attempt, int count);
  // Waits for RunningAttempt(...) to be non-empty; the time it was first seen, or nullopt.
  std::optional<Clock::time_point> WaitRunningAttempt(const std::string& job, int attempt,
                                                      int count, std::chrono::seconds timeout);
  // Writes phase Failed with the trainer's exit code.
  void FailPod(const std::string& pod, int exit_code);
  // Sets the pod condition DisruptionTarget=True (as the eviction API / preemption does) and
  // phase Failed.
  void DisruptPod(const std::string& pod);

  // --- evidence ---
  // Events of the job (involvedObject.name), as stored.
  std::vector<nlohmann::json> JobEvents(const std::string& job);
  // The first event with `reason`, or null.
  nlohmann::json FindEvent(const std::string& job, const std::string& reason);
  // FindEvent until the event is stored or `timeout` passes (then null). Events go through the
  // operator's asynchronous recorder, so one can land after the status write a test waited for:
  // every check that an event exists waits for it; a check that one does not exist uses FindEvent.
  nlohmann::json WaitEvent(const std::string& job, const std::string& reason,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
  // Sum of the operator's /metrics samples of `name` whose labels include every `labels` pair;
  // 0 when none, -1 when /metrics cannot be read.
  double Metric(const std::string& name,
                const std::vector<std::pair<std::string, std::string>>& labels = {});

  static int Attempt(const nlohmann::json& job);
  static std::string State(const nlohmann::json& job);
  // status.excludedNodes entry for `node`, or null.
  static nlohmann::json Excluded(const nlohmann::json& job, const std::string& node);

  static std::unique_ptr<kube::testing::Cluster> cluster_;
  static std::unique_ptr<kube::testing::TestNamespace> ns_;
  static std::unique_ptr<controller::testing::OperatorProcess> op_;
  // The operator's --node-lease-grace; a suite may set another before SetUpTestSuite (the
  // peer-loss tests use a long one, to show the peer evidence acted, not the Lease).
  static inline int lease_grace_seconds_ = kLeaseGraceSeconds;

 private:
  static Status StartOperator();
  void SetHeartbeatLabel(const std::string& node, const nlohmann::json& value);

  std::string pool_;
  std::vector<std::string> nodes_;
  std::vector<std::string> jobs_;
};

// Seconds from `a` to `b` (negative when b is earlier).
double SecondsBetween(Clock::time_point a, Clock::time_point b);

}  // namespace lockstep::failures::testing
