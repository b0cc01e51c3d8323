#pragma once
// Runs one pod bound to one of the agent's nodes, on its own thread, the way a kubelet with
// restartPolicy Never does (Lockstep's pods never restart containers in place; the launcher
// restarts ranks inside the container): set up the sandbox (network namespace, volumes,
// /etc/hosts, hostname), run the init containers one by one, then all containers (from the
// agent's image store with runc when it has the image, else as host processes), write the
// status back at every step, tear the sandbox down when the pod is finished, and on deletion
// stop the processes (SIGTERM to each container's process group, the grace period, SIGKILL to
// everything in the pod's network namespace) and delete the object with grace 0.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/hosts_book.h"
#include "tests/e2e/agent/image_map.h"
#include "tests/e2e/agent/kubernetes_service.h"
#include "tests/e2e/agent/oci_image_store.h"
#include "tests/e2e/agent/oci_runtime.h"
#include "tests/e2e/agent/options.h"
#include "tests/e2e/agent/pod_network.h"
#include "tests/e2e/agent/pod_status.h"
#include "tests/e2e/agent/pod_volumes.h"
#include "tests/e2e/agent/sandbox.h"
#include "tests/e2e/agent/state_dir.h"

namespace lockstep::e2e {

// Shared services, owned by the Agent and outliving every worker.
struct AgentContext {
  kube::RestClient* client = nullptr;
  const AgentOptions* options = nullptr;
  const ImageMapper* images = nullptr;
  PodNetwork* network = nullptr;
  HostsBook* hosts = nullptr;
  StateDir* state = nullptr;
  const ImageStore* image_store = nullptr;                // images that run with runc
  const KubernetesService* kubernetes_service = nullptr;  // null: no in-cluster API access
  // False while the pod's node is partitioned or dead: nothing may reach the API for it.
  std::function<bool(const std::string& node)> writes_allowed;
};

class PodWorker {
 public:
  PodWorker(AgentContext ctx, nlohmann::json pod);
  ~PodWorker();  // Kill()s and joins
  PodWorker(const PodWorker&) = delete;
  PodWorker& operator=(const PodWorker&) = delete;

  void Start();
  // The newest object from the watch; a deletionTimestamp starts the graceful stop.
  void Observe(const nlohmann::json& pod);
  // The object is gone from the API, or the agent exits: stop now (SIGKILL), no more writes.
  void Kill();
  // The node died: like Kill. Separate name so logs say why.
  void Die() { Kill(); }
  // True once the thread has nothing left to do (it may be joined without waiting).
  bool Finished() const { return finished_.load(); }
  const std::string& node() const { return node_; }

 private:
  struct Running {
    const nlohmann::json* spec;
    ContainerRecord* record;
    pid_t pid;
  };

  void Run();
  void RunPod(const nlohmann::json& spec);
  bool StopRequested() const;
  Status SetUpSandbox();
  void TearDownSandbox();
  StatusOr<pid_t> LaunchContainer(const nlohmann::json& spec, ContainerRecord* record);
  // A container whose image the store holds: a runc bundle (oci_runtime.h).
  StatusOr<pid_t> LaunchOciContainer(const nlohmann::json& spec, ContainerRecord* record,
                                     const StoredImage& image);
  // The container's env as the kubelet resolves it, the kubernetes Service's first.
  StatusOr<EnvList> ContainerEnv(const nlohmann::json& spec);
  // Records a container that could not start (StartError; 127 when not found) and returns s.
  Status FailStart(ContainerRecord* record, const Status& s);
  // Waits for the processes, applying deletion and kill requests. Records exits.
  void WaitAll(std::vector<Running> running);
  void RecordExit(const nlohmann::json& spec, ContainerRecord* record, int wstatus);
  void WriteStatus();
  void DeleteObject();
  bool PreviouslyStarted() const;

  nlohmann::json Snapshot() const;

  AgentContext ctx_;
  const std::string ns_;
  const std::string name_;
  const std::string uid_;
  const std::string node_;
  const std::string key_;
  const std::string dir_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  nlohmann::json pod_;                   // guarded by mu_: the newest object
  std::optional<int64_t> delete_grace_;  // guarded by mu_: set once deletion is requested
  bool kill_ = false;                    // guarded by mu_

  PodRecord record_;  // worker thread only
  // Worker thread only: the pod's volumes, and by container name the stored images decided at
  // sandbox set-up and the runc containers started from them.
  VolumeDirs volume_dirs_;
  std::map<std::string, StoredImage> stored_images_;
  std::map<std::string, std::unique_ptr<OciContainer>> oci_containers_;
  std::optional<PodNet> net_;
  pid_t pause_pid_ = 0;
  std::atomic<bool> finished_{false};
  std::thread thread_;
};

}  // namespace lockstep::e2e
