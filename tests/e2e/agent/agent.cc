#include "tests/e2e/agent/agent.h"

#include <filesystem>

#include "common/log.h"
#include "tests/e2e/agent/oci_runtime.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

StatusOr<PodItem> DecodePodItem(const json& object) {
  LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
  return PodItem{std::move(meta), object};
}

Agent::Agent(AgentOptions options, std::unique_ptr<kube::RestClient> client)
    : options_(std::move(options)),
      client_(std::move(client)),
      state_(options_.state_dir),
      images_(options_) {}

Agent::~Agent() { Shutdown(); }

Status Agent::Start() {
  LS_RETURN_IF_ERROR(state_.Claim());
  claimed_ = true;
  LS_ASSIGN_OR_RETURN(IpAllocator ips, IpAllocator::Parse(options_.subnet));
  network_ = std::make_unique<PodNetwork>(options_.bridge, std::move(ips));
  bridge_created_ = true;
  LS_RETURN_IF_ERROR(network_->SetUpBridge());
  LS_RETURN_IF_ERROR(StartImagesAndServices());
  for (const auto& name : options_.node_names) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      modes_[name] = NodeMode::kHealthy;
    }
    auto node = std::make_unique<NodeRegistration>(*client_, options_, name, network_->host_ip());
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
        BuildNode(options_, name, network_->host_ip(), NodeResources())["metadata"]["labels"];
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
  for (const auto& node : nodes_) {
    if (!WritesAllowed(node->name())) continue;
    Status s = node->Heartbeat();
    if (!s.ok())
      log::Warning("heartbeat failed", {{"node", node->name()}, {"error", s.ToString()}});
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
  informers_.clear();  // no more events
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
