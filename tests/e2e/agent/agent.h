#pragma once
// The test node agent: plays one or more Nodes on this host and runs the pods bound to them as
// local processes (pod_worker.h). See docs/e2e.md.
//
// Threads: one pod informer (reflector thread) per node, one thread per pod worker, the
// apiserver proxy's and the pod binder's informers when enabled, and the caller's thread, which
// drives Tick() (heartbeats, control requests, binding, reaping finished workers) and calls
// Partition/Fail on signals.

#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/hosts_book.h"
#include "tests/e2e/agent/image_map.h"
#include "tests/e2e/agent/kubelet_server.h"
#include "tests/e2e/agent/kubernetes_service.h"
#include "tests/e2e/agent/node_registration.h"
#include "tests/e2e/agent/oci_image_store.h"
#include "tests/e2e/agent/options.h"
#include "tests/e2e/agent/pod_binder.h"
#include "tests/e2e/agent/pod_network.h"
#include "tests/e2e/agent/pod_worker.h"
#include "tests/e2e/agent/state_dir.h"

namespace lockstep::e2e {

// Informer cache entry: the pod's metadata plus its whole object (the agent needs the spec).
struct PodItem {
  kube::ObjectMeta meta;
  nlohmann::json object;
};
StatusOr<PodItem> DecodePodItem(const nlohmann::json& object);

class Agent {
 public:
  // `cluster_ca_pem` verifies the apiserver's client certificate on the kubelet endpoint.
  Agent(AgentOptions options, std::unique_ptr<kube::RestClient> client,
        std::string cluster_ca_pem);
  ~Agent();

  // Claims the state dir (removing a crashed run's leftovers), creates the bridge, starts the
  // kubelet log endpoint (kubelet_server.h) with a certificate from the cluster's
  // kubelet-serving signer, registers the nodes and starts running their pods. On error, call
  // Shutdown() to undo what was done.
  Status Start();
  // Heartbeats for healthy nodes, control requests from the state dir, finished workers.
  void Tick();
  // Node-loss controls; "" means every node of this agent.
  //   Partition: heartbeats and every API write for the node stop; its pods keep running
  //   and it ignores new pods and deletions (a kubelet cut off from the API server).
  //   Fail: as Partition, and every process of its pods is killed (a dead machine).
  void Partition(const std::string& node);
  void Fail(const std::string& node);
  // Stops every pod, deletes the Nodes, removes namespaces, links, bridge and state.
  void Shutdown();

 private:
  enum class NodeMode { kHealthy, kPartitioned, kDead };
  using PodPtr = std::shared_ptr<const PodItem>;

  void OnPod(const PodPtr& pod);
  void OnPodGone(const PodPtr& pod);
  bool WritesAllowed(const std::string& node);
  void SetMode(const std::string& node, NodeMode mode);
  void ApplyControlRequests();
  Status StartKubeletServer();
  // kubectl logs: where a container's log is (from the pod caches and the state dir).
  StatusOr<LogSource> LocateLog(const ContainerLogRequest& request) const;
  // A kubelet's webhook authorization: may this user get nodes/proxy on `node`?
  Status AuthorizeNodeProxy(const PeerIdentity& peer, const std::string& node) const;
  // The image store (stale runc containers removed, --image-layout imported) and, with
  // --apiserver-proxy, the kubernetes Service's route for pods. After the bridge exists.
  Status StartImagesAndServices();
  std::vector<NodeChoice> HealthyNodes();

  AgentOptions options_;
  std::unique_ptr<kube::RestClient> client_;
  StateDir state_;
  ImageMapper images_;
  std::unique_ptr<PodNetwork> network_;
  HostsBook hosts_;
  std::unique_ptr<ImageStore> image_store_;
  std::optional<KubernetesService> kubernetes_service_;
  std::unique_ptr<ApiserverProxy> apiserver_proxy_;
  std::unique_ptr<PodBinder> binder_;
  std::vector<std::unique_ptr<NodeRegistration>> nodes_;
  std::vector<std::unique_ptr<kube::Informer<PodItem>>> informers_;
  const std::string cluster_ca_pem_;
  std::unique_ptr<KubeletServer> kubelet_;
  bool claimed_ = false;
  bool bridge_created_ = false;

  std::mutex mu_;
  std::map<std::string, NodeMode> modes_;                      // guarded by mu_
  std::map<std::string, std::unique_ptr<PodWorker>> workers_;  // by pod uid; guarded by mu_
  std::set<std::string> done_uids_;                            // guarded by mu_
  bool shutting_down_ = false;                                 // guarded by mu_
};

}  // namespace lockstep::e2e
