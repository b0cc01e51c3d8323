#include "tests/e2e/agent/agent.h"

#include <filesystem>

#include "common/log.h"
#include "tests/e2e/agent/oci_runtime.h"
#include "tests/e2e/agent/pod_json.h"
#include "tests/e2e/agent/serving_cert.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

StatusOr<PodItem> DecodePodItem(const json& object) {
  LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
  return PodItem{std::move(meta), object};
}

Agent::Agent(AgentOptions options, std::unique_ptr<kube::RestClient> client,
             std::string cluster_ca_pem)
    : options_(std::move(options)),
      client_(std::move(client)),
      state_(options_.state_dir),
      images_(options_),
      cluster_ca_pem_(std::move(cluster_ca_pem)) {}

Agent::~Agent() { Shutdown(); }

Status Agent::Start() {
  LS_RETURN_IF_ERROR(state_.Claim());
  claimed_ = true;
  LS_ASSIGN_OR_RETURN(IpAllocator ips, IpAllocator::Parse(options_.subnet));
  network_ = std::make_unique<PodNetwork>(options_.bridge, std::move(ips));
  bridge_created_ = true;
  LS_RETURN_IF_ERROR(network_->SetUpBridge());
  LS_RETURN_IF_ERROR(StartKubeletServer());
  const int kubelet_port = kubelet_ ? kubelet_->port() : 0;
  LS_RETURN_IF_ERROR(StartImagesAndServices());
  for (const auto& name : options_.node_names) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      modes_[name] = NodeMode::kHealthy;
    }
    auto node = std::make_unique<NodeRegistration>(*client_, options_, name, network_->host_ip(),
                                                   kubelet_port);
    LS_RETURN_IF_ERROR(node->Register());
    nodes_.push_back(std::move(node));
  }
  for (const auto& name : options_.node_names) {
    kube::ReflectorOptions reflector;
    reflector.field_selector = "spec.nodeName=" + name;
    auto informer = std::make_unique<kube::Informer<PodItem>>(*client_, kube::resources::Pods(), "",
                                                              DecodePodItem, reflector);
    kube::EventHandlers<PodItem> handlers;
    handlers.on_add = [this](const PodPtr& pod) { OnPod(pod); };
    handlers.on_update = [this](const PodPtr&, const PodPtr& pod) { OnPod(pod); };
    handlers.on_delete = [this](const PodPtr& pod, bool) { OnPodGone(pod); };
    informer->AddEventHandler(std::move(handlers));
    informer->Start();
    informers_.push_back(std::move(informer));
  }
  if (!options_.schedule_namespaces.empty()) {
    binder_ = std::make_unique<PodBinder>(*client_, options_.schedule_namespaces);
    binder_->Start();
  }
  log::Info("test node agent started", {{"nodes", std::to_string(options_.node_names.size())},
                                        {"bridge", options_.bridge},
                                        {"subnet", options_.subnet}});
  return Status::Ok();
}

Status Agent::StartKubeletServer() {
  if (options_.kubelet_port == 0) return Status::Ok();
  // One endpoint on the bridge address serves every node of this agent (they share it as their
  // InternalIP); its certificate is issued for the first node's name and that address.
  LS_ASSIGN_OR_RETURN(ServingCertificate cert,
                      RequestServingCertificate(*client_, options_.node_names.front(),
                                                network_->host_ip(), std::chrono::seconds(60)));
  KubeletServerOptions server;
  server.address = network_->host_ip();
  server.port = options_.kubelet_port;
  server.cert_pem = std::move(cert.cert_pem);
  server.key_pem = std::move(cert.key_pem);
  server.client_ca_pem = cluster_ca_pem_;
  server.locate = [this](const ContainerLogRequest& r) { return LocateLog(r); };
  server.authorize = [this](const PeerIdentity& p, const std::string& node) {
    return AuthorizeNodeProxy(p, node);
  };
  kubelet_ = std::make_unique<KubeletServer>(std::move(server));
  return kubelet_->Start();
}

StatusOr<LogSource> Agent::LocateLog(const ContainerLogRequest& r) const {
  const std::string key = r.ns + "/" + r.pod;
  for (const auto& informer : informers_) {
    std::shared_ptr<const PodItem> pod = informer->store().Get(key);
    if (!pod) continue;
    const std::string uid = pod->meta.uid;
    const std::string node = pod->object["spec"].value("nodeName", "");
    // The newest cached status of the container: running until it reports terminated.
    auto running = [informer = informer.get(), key, uid, container = r.container] {
      std::shared_ptr<const PodItem> now = informer->store().Get(key);
      if (!now || now->meta.uid != uid) return false;
      return ContainerStillRunning(now->object, container);
    };
    if (!PodHasContainer(pod->object, r.container)) {
      return FailedPreconditionError("container " + r.container + " is not valid for pod " + r.pod);
    }
    const std::string path = state_.PodDir(uid) + "/containers/" + r.container + ".log";
    std::error_code ec;
    if (!fs::exists(path, ec)) {
      return FailedPreconditionError("container \"" + r.container + "\" in pod \"" + r.pod +
                                     "\" is waiting to start");
    }
    return LogSource{path, node, std::move(running)};
  }
  return NotFoundError("pod " + key + " is not on this node");
}

Status Agent::AuthorizeNodeProxy(const PeerIdentity& peer, const std::string& node) const {
  json groups = json::array();
  for (const std::string& g : peer.groups) groups.push_back(g);
  const json review = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SubjectAccessReview"},
      {"spec",
       {{"user", peer.user},
        {"groups", groups},
        {"resourceAttributes",
         {{"verb", "get"}, {"resource", "nodes"}, {"subresource", "proxy"}, {"name", node}}}}}};
  const kube::ResourceRef reviews{"authorization.k8s.io", "v1", "subjectaccessreviews", false};
  LS_ASSIGN_OR_RETURN(json answer, client_->Create(reviews, "", review));
  if (answer.value("status", json::object()).value("allowed", false)) return Status::Ok();
  return PermissionDeniedError("Forbidden (user=" + peer.user +
                               ", verb=get, resource=nodes, subresource=proxy)");
}

Status Agent::StartImagesAndServices() {
  image_store_ = std::make_unique<ImageStore>(state_.ImagesDir());
  RemoveStaleContainers(state_.RuncDir(), options_.bridge + "-");
  for (const std::string& layout : options_.image_layouts) {
    LS_ASSIGN_OR_RETURN(std::vector<std::string> imported, image_store_->Import(layout));
    for (const std::string& image : imported) log::Info("image stored", {{"image", image}});
  }
  if (!options_.apiserver_proxy) return Status::Ok();
  LS_ASSIGN_OR_RETURN(kubernetes_service_, DiscoverKubernetesService(*client_));
  LS_ASSIGN_OR_RETURN(
      apiserver_proxy_,
      ApiserverProxy::Start(network_->host_ip(), kubernetes_service_->port,
                            kubernetes_service_->endpoint_ip, kubernetes_service_->endpoint_port));
  log::Info("pods reach the apiserver through the kubernetes Service",
            {{"cluster_ip", kubernetes_service_->cluster_ip},
             {"proxy", network_->host_ip() + ":" + std::to_string(kubernetes_service_->port)}});
  return Status::Ok();
}

std::vector<NodeChoice> Agent::HealthyNodes() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<NodeChoice> nodes;
  for (const auto& [name, mode] : modes_) {
    if (mode != NodeMode::kHealthy) continue;
    NodeChoice node{name, {}, 0};
    const json labels =
        BuildNode(options_, name, network_->host_ip(), NodeResources(), 0)["metadata"]["labels"];
    for (auto it = labels.begin(); it != labels.end(); ++it) node.labels[it.key()] = it.value();
    for (const auto& [uid, worker] : workers_) node.pods += worker->node() == name ? 1 : 0;
    nodes.push_back(std::move(node));
  }
  return nodes;
}

void Agent::OnPod(const PodPtr& pod) {
  const std::string node = pod->object["spec"].value("nodeName", "");
  std::lock_guard<std::mutex> lock(mu_);
  if (shutting_down_ || done_uids_.count(pod->meta.uid) != 0) return;
  auto mode = modes_.find(node);
  if (mode == modes_.end() || mode->second != NodeMode::kHealthy) return;
  auto it = workers_.find(pod->meta.uid);
  if (it != workers_.end()) {
    it->second->Observe(pod->object);
    return;
  }
  AgentContext ctx;
  ctx.client = client_.get();
  ctx.options = &options_;
  ctx.images = &images_;
  ctx.network = network_.get();
  ctx.hosts = &hosts_;
  ctx.state = &state_;
  ctx.image_store = image_store_.get();
  ctx.kubernetes_service = kubernetes_service_ ? &*kubernetes_service_ : nullptr;
  ctx.writes_allowed = [this](const std::string& n) { return WritesAllowed(n); };
  auto worker = std::make_unique<PodWorker>(std::move(ctx), pod->object);
  worker->Start();
  workers_.emplace(pod->meta.uid, std::move(worker));
  log::Info("pod accepted", {{"pod", pod->meta.Key()}, {"node", node}});
}

void Agent::OnPodGone(const PodPtr& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(pod->meta.uid);
  if (it == workers_.end()) return;
  const std::string node = pod->object["spec"].value("nodeName", "");
  // A partitioned node would not hear of the deletion: its processes keep running.
  if (modes_[node] == NodeMode::kPartitioned) return;
  it->second->Kill();
}

bool Agent::WritesAllowed(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = modes_.find(node);
  return it != modes_.end() && it->second == NodeMode::kHealthy;
}

void Agent::SetMode(const std::string& node, NodeMode mode) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, current] : modes_) {
    if (!node.empty() && name != node) continue;
    if (current == NodeMode::kDead) continue;
    current = mode;
    if (mode != NodeMode::kDead) continue;
    for (auto& [uid, worker] : workers_) {
      if (worker->node() == name) worker->Die();
    }
  }
}

void Agent::Partition(const std::string& node) {
  log::Warning("node partitioned: heartbeats and API writes stop",
               {{"node", node.empty() ? "all" : node}});
  SetMode(node, NodeMode::kPartitioned);
}

void Agent::Fail(const std::string& node) {
  log::Warning("node failed: pods killed, heartbeats stop",
               {{"node", node.empty() ? "all" : node}});
  SetMode(node, NodeMode::kDead);
}

void Agent::ApplyControlRequests() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_.ControlDir(), ec)) {
    const std::string file = entry.path().filename();
    const size_t dot = file.rfind('.');
    if (dot == std::string::npos) continue;
    const std::string node = file.substr(0, dot);
    const std::string verb = file.substr(dot + 1);
    if (verb == "fail") Fail(node);
    if (verb == "partition") Partition(node);
    fs::remove(entry.path(), ec);
  }
}

void Agent::Tick() {
  ApplyControlRequests();
  // Every node's Lease before any status write: on a slow API server the last node's renewal
  // waits for the fewest requests.
  for (const auto& node : nodes_) {
    if (!WritesAllowed(node->name())) continue;
    Status s = node->RenewLease();
    if (!s.ok())
      log::Warning("heartbeat failed", {{"node", node->name()}, {"error", s.ToString()}});
  }
  for (const auto& node : nodes_) {
    if (!WritesAllowed(node->name())) continue;
    Status s = node->UpdateStatusIfDue();
    if (!s.ok())
      log::Warning("node status update failed", {{"node", node->name()}, {"error", s.ToString()}});
  }
  if (binder_) binder_->Tick(HealthyNodes());
  std::vector<std::unique_ptr<PodWorker>> finished;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = workers_.begin(); it != workers_.end();) {
      if (it->second->Finished()) {
        done_uids_.insert(it->first);
        finished.push_back(std::move(it->second));
        it = workers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  finished.clear();  // joins, outside the lock
}

void Agent::Shutdown() {
  std::map<std::string, std::unique_ptr<PodWorker>> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
  }
  if (kubelet_) kubelet_->Stop();  // before the informers its lookups read
  informers_.clear();              // no more events
  binder_.reset();
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& [uid, worker] : workers) worker->Kill();
  workers.clear();  // each tears its sandbox down and joins
  apiserver_proxy_.reset();
  for (const auto& node : nodes_) {
    Status s = node->Unregister();
    if (!s.ok())
      log::Warning("cannot delete node", {{"node", node->name()}, {"error", s.ToString()}});
  }
  nodes_.clear();
  if (bridge_created_) PodNetwork::RemoveStale(options_.bridge);
  if (claimed_) state_.RemoveAll();
  log::Info("test node agent stopped; everything it created is removed");
}

}  // namespace lockstep::e2e
