#pragma once
// The environment of the framework end-to-end tests (docs/e2e.md "Framework e2e tests"): the
// real lockstep-operator (gang scheduler on) and one lockstep-test-node-agent playing a few
// Nodes, against the local control plane ($KUBECONFIG). One instance serves every test of a
// binary: starting both takes seconds, a job takes tens of seconds, and the tier must stay short.
//
// Each job comes from examples/local/ and is submitted as written, except for what makes it this
// run's: its namespace, a nodeSelector for this agent's nodes (the cluster also has kwok nodes
// and maybe other agents), an environment marker (to find leftover processes) and a fresh
// directory for every hostPath volume (the checkpoint storage all agent nodes share).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/integration/controller/operator_env.h"

namespace lockstep::e2e {

struct ClusterOptions {
  int nodes = 3;
  std::vector<std::string> operator_args;  // appended to the operator's flags
  // Maps the image `lockstep/horovod` to an image root whose bin/python runs .venv-horovod's
  // python (real Horovod's own venv, hack/setup-venv-horovod.sh) and whose /examples is the
  // checkout's (HorovodSkipReason says when that venv is missing).
  bool horovod_image = false;
};

// What one finished (or timed-out) job left: its last object and each pod's container log.
struct JobRun {
  nlohmann::json job;
  struct Pod {
    std::string name, uid, node;
    int attempt = 0;
    std::string log;  // the trainer container's stdout+stderr, as the agent wrote it
  };
  std::vector<Pod> pods;  // every pod the agent ran for the job, all attempts
  double seconds = 0;
  // The TCP ports the job's processes listened on (not loopback), sampled at each poll while it
  // ran, and those of them its NetworkPolicy opens to a pod outside the job (issue 44 item 5:
  // RunExample fails on any). Sampling can miss a server that lives under half a second.
  std::set<int> listening_ports;
  std::set<int> open_to_anyone;
  std::string state() const;
  // Every log line (all pods) that starts with `prefix`.
  std::vector<std::string> Lines(const std::string& prefix) const;
  std::string AllLogs() const;
  // Each pod's last `lines` lines (each cut at 240 characters): what a timeout shows first.
  std::string LogTails(size_t lines) const;
};

class FrameworkCluster {
 public:
  // Why the tier cannot run here ("" when it can): no KUBECONFIG, not root.
  static std::string SkipReason();
  // Why the Horovod tests do not run ("" when they can): only LOCKSTEP_WITHOUT_HOROVOD=1, the
  // opt-out of hack/setup-venv-horovod.sh. A missing venv otherwise fails the test.
  static std::string HorovodSkipReason();

  explicit FrameworkCluster(ClusterOptions options);
  ~FrameworkCluster();  // Stop() if the test did not

  Status Start();
  // SIGTERM to the agent, then the agent's cleanup guarantees (docs/e2e.md); each violation is
  // one entry. Stops the operator and deletes the namespace.
  std::vector<std::string> Stop();

  // examples/local/<file> as JSON, in this run's namespace.
  StatusOr<nlohmann::json> LoadExample(const std::string& file);
  // Creates the job and waits until it is Succeeded or Failed (or `timeout`).
  StatusOr<JobRun> Run(const nlohmann::json& job, std::chrono::seconds timeout);
  // Creates the job, made this run's (see the file comment): every hostPath volume gets a fresh
  // empty directory under the run's work dir (HostPathDir).
  Status Create(nlohmann::json job);
  // Waits until `pred` holds for the job; returns its last object.
  StatusOr<nlohmann::json> WaitFor(const std::string& name,
                                   const std::function<bool(const nlohmann::json&)>& pred,
                                   std::chrono::seconds timeout);
  // The job's pods and their logs, found in the agent's state dir.
  JobRun Collect(const std::string& name);

  // Processes (any pod of this agent) whose environment names the job: none may outlive it.
  std::vector<pid_t> JobProcesses(const std::string& job) const;

  // A node of this agent dies (its pods are killed, its Lease stops): `--fail-node`.
  Status FailNode(const std::string& node);

  kube::RestClient& client() { return *client_; }
  const std::string& ns() const { return ns_; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  // The host directory behind the job's hostPath volume `volume` (see LoadExample).
  std::string HostPathDir(const std::string& job, const std::string& volume) const;
  std::string agent_log() const;
  std::string operator_log() const;

 private:
  Status StartAgent();
  StatusOr<std::string> MakeHorovodImage();
  void MakeOurs(nlohmann::json& pod_template, const std::string& job);
  // Remembers the job's pods as they are now (by uid): a clean-pod policy deletes them later.
  void Observe(const std::string& job);

  ClusterOptions options_;
  std::unique_ptr<kube::RestClient> client_;
  std::unique_ptr<controller::testing::OperatorProcess> operator_;
  std::string id_, ns_, block_, bridge_, marker_, state_dir_, work_dir_, agent_log_;
  std::vector<std::string> nodes_;
  pid_t agent_pid_ = 0;
  bool stopped_ = false;
  std::map<std::string, std::map<std::string, nlohmann::json>> seen_pods_;  // job -> uid -> pod
};

}  // namespace lockstep::e2e
