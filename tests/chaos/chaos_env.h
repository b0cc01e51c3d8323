#pragma once
// Harness of the chaos tier (tests/chaos/, docs/reliability.md): the built lockstep-operator run
// as child processes against the local control plane, kwok nodes of each test's own, a recorder of
// every version of the test namespace's TrainingJobs and Pods (the evidence the invariants in
// invariants.h are checked on), and the apiserver's audit log, which says which operator wrote
// what and when (hack/cluster.sh logs the writes of the group lockstep:audited).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/chaos/invariants.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::chaos {

using nlohmann::json;
using WallClock = std::chrono::system_clock;
// What every chaos test names: the operator processes it starts and stops, and their leases.
using controller::testing::LeaderStatus;
using controller::testing::OperatorProcess;
using std::chrono::milliseconds;
using std::chrono::seconds;

// How hard the tests push: the short run of hack/test.sh (ctest label `chaos`), or the long one
// hack/chaos.sh asks for with LOCKSTEP_CHAOS=long.
struct Scale {
  bool long_run = false;
  int operations = 100;     // job creations, failures, restart requests, completions, deletions
  int max_live_jobs = 16;   // jobs not yet deleted, at once
  int restart_jobs = 20;    // jobs running while the apiserver and etcd restart
  int failover_rounds = 1;  // scheduler leaders killed mid-bind
};
Scale ChaosScale();

// Prints "CHAOS-FIGURE <what>: <text>" (hack/chaos.sh collects these lines for
// docs/reliability.md) and records it as a gtest property.
void Figure(const std::string& what, const std::string& text);

// Every version of the TrainingJobs and Pods of one namespace: a list, then a watch of each that
// resumes from the last resourceVersion it saw whenever it breaks (an apiserver restart). A
// watch that cannot resume (410 Gone) re-lists and counts a gap: versions in between are lost.
class History {
 public:
  // `client` must not be rate limited and must outlive the recorder.
  History(kube::RestClient& client, std::string ns);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  Status Start();
  void Stop();

  std::vector<Version> Jobs() const;
  std::vector<Version> Pods() const;
  // The revisions (after, up to] whose job versions may be missing: one per gap.
  std::vector<std::pair<int64_t, int64_t>> JobGaps() const;
  // The same for the pods' history.
  std::vector<std::pair<int64_t, int64_t>> PodGaps() const;
  int gaps() const { return gaps_.load(); }

 private:
  struct Stream {
    kube::ResourceRef ref;
    std::vector<Version> versions;                  // guarded by mu_
    std::vector<std::pair<int64_t, int64_t>> gaps;  // guarded by mu_
    std::string last_rv;                            // watch thread only
    std::thread thread;
  };
  Status List(Stream* stream);
  void Watch(Stream* stream);
  void Add(Stream* stream, kube::WatchEventType type, bool listed, json&& object);

  kube::RestClient& client_;
  const std::string ns_;
  mutable std::mutex mu_;
  Stream jobs_;
  Stream pods_;
  std::atomic<bool> stop_{false};
  std::atomic<int> gaps_{0};
};

// The GPUs of each node of a ChaosTest's pool; GpusHeldTwice checks no node holds more.
inline constexpr int kPoolGpusPerNode = 8;

// kwok nodes "<pool>-n<i>" labelled lockstep.dev/test-pool=<pool>, which the tests' jobs select;
// deleted when the pool is destroyed.
class NodePool {
 public:
  NodePool(kube::RestClient& client, std::string name);
  ~NodePool();
  Status Create(int count, int gpus);
  const std::string& name() const { return name_; }

 private:
  kube::RestClient& client_;
  const std::string name_;
  std::vector<std::string> nodes_;
};

// A Generic TrainingJob of `replicas` workers of one GPU each in `pool`: Recreate restarts with
// no backoff and a budget no test exhausts (kwok pods have no launcher to restart in place).
json ChaosJob(const std::string& name, int replicas, const std::string& pool, int gpus = 1);

// Pods of the job with the lockstep.dev/job-name label, live from the API.
std::vector<json> JobPods(kube::RestClient& client, const std::string& ns, const std::string& job);
// The pods when the job runs `attempt` whole: exactly `replicas` pods, all of that attempt, bound,
// Running and none terminating. Empty otherwise.
std::vector<json> RunningAttempt(const std::vector<json>& pods, int attempt, int replicas);
int Attempt(const json& job);
std::string State(const json& job);

// Writes a pod's terminal phase as a kubelet would: Succeeded (exit 0) or Failed (exit 1).
Status FinishPod(kube::RestClient& client, const std::string& ns, const std::string& pod,
                 bool succeeded);

// The start every chaos test shares: a client without rate limits, the CRD, a namespace of the
// test's own with a pool of kwok nodes, and a History of that namespace.
class ChaosTest : public ::testing::Test {
 protected:
  void SetUp() override { LS_REQUIRE_CLUSTER(); }
  // Namespace "<prefix>-<random>", `nodes` nodes of 8 GPUs, the recorder started.
  void Prepare(const std::string& prefix, int nodes);
  // Stops the recorder and fails the test on every violation invariants.h finds in its history;
  // returns what it found of pod creations (for the figures).
  PodCreations CheckHistory();

  kube::RestClient& client() { return *cluster_.client; }
  const std::string& ns() const { return ns_->name(); }
  const std::string& pool() const { return pool_->name(); }
  History& history() { return *history_; }

 private:
  kube::testing::Cluster cluster_;
  std::unique_ptr<kube::testing::TestNamespace> ns_;
  std::unique_ptr<NodePool> pool_;
  std::unique_ptr<History> history_;
};

// A kubeconfig for `user` in the groups system:masters and lockstep:audited (hack/cluster.sh
// kubeconfig), so the audit log records its writes.
StatusOr<std::string> AuditedKubeconfig(const std::string& user);

struct AuditEvent {
  std::string verb;         // create, update, patch, delete
  std::string resource;     // pods, trainingjobs, leases, events, ...
  std::string subresource;  // status, binding, or ""
  std::string name;
  int code = 0;                    // the response's HTTP status
  WallClock::time_point received;  // requestReceivedTimestamp, microseconds
};
// The writes of `user` in the audit log of the cluster whose kubeconfig is `kubeconfig` (one made
// by AuditedKubeconfig), oldest first.
std::vector<AuditEvent> AuditedWrites(const std::string& kubeconfig, const std::string& user);

}  // namespace lockstep::chaos
