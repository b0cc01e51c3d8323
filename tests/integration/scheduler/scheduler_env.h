#pragma once
// Fixture for the gang scheduler's integration tests: a namespace, a pool of kwok nodes of the
// test's own (unique names, a pool label the test's pods select), TrainingJobs and the pods the
// controller would create for them, and a GangScheduler confined to the namespace. Everything is
// deleted afterwards.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <prometheus/registry.h>

#include "operator/scheduler/cycle/gang_scheduler.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::scheduler::testing {

inline constexpr char kPoolLabel[] = "lockstep.dev/test-pool";

struct NodeSpec {
  std::string block;  // label values; empty = unlabeled
  std::string rack;
  int gpus = 8;
  bool kwok = true;  // false: nobody runs it, so it never becomes Ready
  bool cordoned = false;
  std::optional<std::string> taint_key;  // a NoSchedule taint
};

struct JobSpec {
  int replicas = 1;
  int gpus_per_pod = 8;
  std::vector<std::string> topology_keys;
  std::string required_topology_key;
  int min_replicas = 0;  // > 0: spec.elastic = {minReplicas, maxReplicas: replicas}
  int attempt = 0;       // CreatePods: the lockstep.dev/attempt label (and a name suffix if > 0)
  std::string priority_class = "";  // spec.priorityClassName (a name CreatePriorityClass returned)
  // The class the pods name; "" = priority_class, as the operator's pods do. Another one stands
  // for a job whose template named its own class (stored before admission refused that).
  std::string pod_priority_class = "";
  // Merged into every pod's spec (affinity, topologySpreadConstraints, ...).
  nlohmann::json pod_spec_patch = nlohmann::json::object();
  int host_port = 0;  // > 0: the trainer container asks for this hostPort (TCP)
};

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Nodes "<ns>-n<i>"; returns their names.
  std::vector<std::string> CreateNodes(const std::vector<NodeSpec>& specs);
  // `blocks` x `racks` x `per_rack` nodes with labels block-<b> / block-<b>-rack-<r>.
  std::vector<std::string> CreateTopology(int blocks, int racks, int per_rack, int gpus = 8);

  // A cluster-scoped PriorityClass "<ns>-<name>" (deleted in TearDown); returns its name.
  std::string CreatePriorityClass(const std::string& name, int value, bool never_preempts = false);

  void StartScheduler();
  // The TrainingJob and then its pods (as the controller would create them).
  void CreateJob(const std::string& name, const JobSpec& spec, bool with_pods = true);
  void CreatePods(const std::string& job, const JobSpec& spec);
  // The pods CreatePods creates, as objects (not created).
  std::vector<nlohmann::json> PodObjects(const std::string& job, const JobSpec& spec);
  // A pod of another scheduler already bound to `node` (with a hostPort when `host_port` > 0).
  void CreateForeignPod(const std::string& name, const std::string& node, int gpus,
                        int host_port = 0);
  void DeletePods(const std::string& job);
  // Applies `status` (fields of TrainingJob.status) as the controller would: server-side apply
  // on /status under the controller's field manager "lockstep".
  void ApplyControllerStatus(const std::string& job, const nlohmann::json& status);
  // status.capacity.feasibleReplicas as stored, or -1 when absent.
  int FeasibleReplicas(const std::string& job);

  // Pod name -> node ("" when unbound) for a job.
  std::map<std::string, std::string> Placement(const std::string& job);
  int BoundCount(const std::string& job);
  bool WaitAllBound(const std::string& job, int count, std::chrono::seconds timeout);
  // Waits until `job` reads Scheduled=False/InsufficientResources, then until the scheduler has
  // run `cycles` more cycles (a tick each at most), so that a test checking that nothing was
  // preempted checks after decisions were made, not after a guessed sleep.
  bool WaitUnplacedThroughCycles(const std::string& job, int cycles = 3);
  // The Scheduled condition as stored, or an empty object.
  nlohmann::json ScheduledCondition(const std::string& job);
  // The job's condition of `type` as stored, or an empty object.
  nlohmann::json Condition(const std::string& job, const std::string& type);
  nlohmann::json NodeLabels(const std::string& node);

  kube::RestClient& client() { return *cluster_.client; }
  const std::string& ns() const { return ns_->name(); }

  kube::testing::Cluster cluster_;
  std::unique_ptr<kube::testing::TestNamespace> ns_;
  std::vector<std::string> nodes_;
  std::vector<std::string> priority_classes_;
  std::map<std::string, std::string> job_uids_;
  prometheus::Registry registry_;
  std::unique_ptr<GangScheduler> scheduler_;
};

}  // namespace lockstep::scheduler::testing
