#pragma once
// Harness for the job controller's integration tests: the real lockstep-operator binary run as
// a child process against the local control plane ($KUBECONFIG), one namespace per test, plus
// the steps a test takes in place of the gang scheduler and the kubelet (bind pods to kwok
// nodes, write pod phases and exit codes).

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/rest_client.h"

#include "tests/testing/free_port.h"

namespace lockstep::controller::testing {

// Runs `kubectl <args>` with the environment's KUBECONFIG; returns its exit status.
int Kubectl(const std::string& args);
// Applies crds/ (server-side) and waits until the CRD is Established. Once per process.
Status InstallCrd();

// A free TCP port on 127.0.0.1 (bound and released; good enough for a test).
using ::lockstep::testing::FreePort;  // tests/testing/free_port.h
// GET http://127.0.0.1:<port><path>; the body, or an error for a non-200 answer.
StatusOr<std::string> HttpGet(int port, const std::string& path);

// leader_election_master_status of the operator serving /metrics on `port`: 1, 0, or -1 when it
// cannot be read.
int LeaderStatus(int port);

class OperatorProcess {
 public:
  explicit OperatorProcess(std::vector<std::string> namespaces,
                           std::vector<std::string> extra_args = {});
  ~OperatorProcess();  // SIGKILLs a still-running child; removes the log if no test failed

  Status Start();
  void Kill(int signal);  // and reap
  void Signal(int signal);  // without waiting
  // Reaps the child if it exits within `timeout`; false while it still runs.
  bool WaitExit(std::chrono::milliseconds timeout);
  bool Running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // -1 when not running
  int metrics_port() const { return metrics_port_; }
  int health_port() const { return health_port_; }
  // Exit status of the last child that ended (or -signal).
  int last_exit() const { return last_exit_; }
  const std::string& log_path() const { return log_path_; }
  // Waits until /readyz answers 200.
  bool WaitReady(std::chrono::milliseconds timeout);
  // WaitReady's last answer from /readyz: "ready", or the error with the body (which caches
  // are not synced).
  const std::string& ready_answer() const { return ready_answer_; }

 private:
  std::vector<std::string> namespaces_;
  std::vector<std::string> extra_args_;
  pid_t pid_ = -1;
  int metrics_port_ = 0;
  int health_port_ = 0;
  int last_exit_ = 0;
  std::string log_path_;
  std::string ready_answer_;  // written by WaitReady
};

// What a deny policy matches: one operation on one resource of one API group and version.
struct AdmissionMatch {
  std::string group;      // "" for the core group
  std::string version;    // "v1", or "*"
  std::string operation;  // "CREATE", "UPDATE", ...
  std::string resource;   // "pods", "trainingjobs/status", ...
};

// A ValidatingAdmissionPolicy and its binding, both named `name`, that deny in namespace `ns`
// every `match` request whose object fails the CEL `expression`, with `message`: a write the
// apiserver refuses every time, without a mock. True when kubectl applied both. The apiserver
// enforces it only once its admission plugin has seen it (probe with a server-side dry run).
// DeleteDenyPolicy removes both (absent ones are fine).
bool ApplyDenyPolicy(const std::string& name, const std::string& ns, const AdmissionMatch& match,
                     const std::string& expression, const std::string& message);
void DeleteDenyPolicy(const std::string& name);

// A ValidatingAdmissionPolicy (CEL, in the apiserver) that refuses, in namespace `ns` only, every
// TrainingJob status write whose new object fails `expression` (422 Invalid, with `message`);
// removed with this object. A status write the apiserver refuses every time, without a mock.
// The policy is enforced only once the apiserver's admission plugin has seen it: probe with a
// server-side dry run before relying on it.
class RefuseStatusWrites {
 public:
  RefuseStatusWrites(const std::string& ns, const std::string& expression,
                     const std::string& message);
  ~RefuseStatusWrites() { Remove(); }
  RefuseStatusWrites(const RefuseStatusWrites&) = delete;
  RefuseStatusWrites& operator=(const RefuseStatusWrites&) = delete;
  bool ok() const { return ok_; }
  void Remove();

 private:
  std::string name_;
  bool ok_ = false;
};

// A PyTorch TrainingJob with `replicas` workers; `mutate` edits the JSON before it is returned.
nlohmann::json MakeJob(const std::string& name, int replicas,
                       const std::function<void(nlohmann::json&)>& mutate = nullptr);

// A Node for kwok to run (annotation kwok.x-k8s.io/node=fake) with `gpus` nvidia.com/gpu, 96
// CPUs and 1536Gi, labelled `pool_label`=`pool` so that a test's jobs can select its own nodes.
nlohmann::json KwokNode(const std::string& name, const std::string& pool_label,
                        const std::string& pool, int gpus);

// A Generic TrainingJob of `replicas` workers with `gpus` GPUs each (1 CPU, 1Gi), pinned to the
// kwok nodes labelled `pool_label`=`pool`, with Recreate restarts and no backoff (kwok pods have
// no launcher to restart in place).
nlohmann::json PoolJob(const std::string& name, int replicas, const std::string& pool_label,
                       const std::string& pool, int gpus);

// Pods of a job (label selector), live from the API.
StatusOr<std::vector<nlohmann::json>> ListJobPods(kube::RestClient& client, const std::string& ns,
                                                  const std::string& job);
// Binds every unbound pod of the job to gpu-node-<i> in turn (kwok then runs it).
Status BindJobPods(kube::RestClient& client, const std::string& ns, const std::string& job);
// Writes a terminal phase: Succeeded with exit code 0, or Failed with `exit_code`.
Status FinishPod(kube::RestClient& client, const std::string& ns, const std::string& pod,
                 bool succeeded, int exit_code = 0);

// The job's condition of `type` ("" if absent) and its status.state.
std::string ConditionStatus(const nlohmann::json& job, const std::string& type);
std::string ConditionReason(const nlohmann::json& job, const std::string& type);
// Reasons of the events whose involvedObject is the named object.
std::vector<std::string> EventReasons(kube::RestClient& client, const std::string& ns,
                                      const std::string& name);

// Polls the job until `pred` holds; returns the last seen object.
StatusOr<nlohmann::json> WaitForJob(kube::RestClient& client, const std::string& ns,
                                    const std::string& name,
                                    const std::function<bool(const nlohmann::json&)>& pred,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(30));

}  // namespace lockstep::controller::testing
