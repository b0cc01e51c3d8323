#include "operator/controller/job_caches.h"

#include <array>
#include <set>

#include "operator/api/children.h"
#include "operator/api/endpoint_slice.h"

namespace lockstep::controller {
namespace {

std::vector<std::string> IndexByJob(const kube::ObjectMeta& meta) {
  std::string key = JobKeyOf(meta);
  if (key.empty()) return {};
  return {std::move(key)};
}

bool ControlledBy(const kube::ObjectMeta& meta, const std::string& uid) {
  const kube::OwnerRef* ref = meta.ControllerRef();
  return ref != nullptr && ref->uid == uid;
}

kube::ReflectorOptions ChildOptions() {
  kube::ReflectorOptions o;
  o.label_selector = std::string(api::kLabelJobName);
  return o;
}

template <typename T>
std::function<StatusOr<T>(const nlohmann::json&)> Decoder(StatusOr<T> (*fn)(
    const nlohmann::json&)) {
  return [fn](const nlohmann::json& j) { return fn(j); };
}

}  // namespace

std::string JobKeyOf(const kube::ObjectMeta& meta) {
  auto it = meta.labels.find(std::string(api::kLabelJobName));
  if (it == meta.labels.end()) return "";
  return JobKey(meta.namespace_, it->second);
}

JobCaches::JobCaches(kube::RestClient& client, const std::vector<std::string>& namespaces,
                     std::shared_ptr<kube::DecodePool<kube::Pod>> pod_pool, const Clock& clock)
    : clock_(clock), gone_(clock) {
  std::vector<std::string> list = namespaces;
  if (list.empty()) list.push_back("");
  for (const std::string& ns : list) {
    Namespace& n = namespaces_[ns];
    n.jobs = std::make_unique<kube::Informer<CachedJob>>(client, kube::resources::TrainingJobs(),
                                                         ns, Decoder(&DecodeCachedJob));
    n.pods = std::make_unique<kube::Informer<kube::Pod>>(
        client, kube::resources::Pods(), ns, Decoder(&kube::DecodePod), ChildOptions());
    n.pods->UseDecodePool(pod_pool);
    n.services = std::make_unique<kube::Informer<kube::MetaObject>>(
        client, kube::resources::Services(), ns, Decoder(&kube::DecodeMetaObject),
        ChildOptions());
    n.network_policies = std::make_unique<kube::Informer<kube::MetaObject>>(
        client, kube::resources::NetworkPolicies(), ns, Decoder(&kube::DecodeMetaObject),
        ChildOptions());
    n.endpoint_slices = std::make_unique<kube::Informer<kube::MetaObject>>(
        client, kube::resources::EndpointSlices(), ns, Decoder(&kube::DecodeMetaObject),
        ChildOptions());
    n.pods->AddIndexer(kJobIndex, [](const kube::Pod& p) { return IndexByJob(p.meta); });
    n.pods->AddIndexer(kNodeIndex, [](const kube::Pod& p) {
      return p.node_name.empty() ? std::vector<std::string>{}
                                 : std::vector<std::string>{p.node_name};
    });
    n.services->AddIndexer(kJobIndex,
                           [](const kube::MetaObject& o) { return IndexByJob(o.meta); });
    n.network_policies->AddIndexer(kJobIndex,
                                   [](const kube::MetaObject& o) { return IndexByJob(o.meta); });
    n.endpoint_slices->AddIndexer(kJobIndex,
                                  [](const kube::MetaObject& o) { return IndexByJob(o.meta); });
  }
}

JobCaches::~JobCaches() { Stop(); }

void JobCaches::SetHandlers(CacheHandlers handlers) {
  handlers_ = std::move(handlers);
  for (auto& [ns, n] : namespaces_) Wire(n);
}

void JobCaches::Wire(Namespace& n) {
  const CacheHandlers& h = handlers_;
  kube::EventHandlers<CachedJob> jobs;
  jobs.on_add = [&h](const auto& j) { h.job_changed(j->meta.Key()); };
  jobs.on_update = [&h](const auto&, const auto& j) { h.job_changed(j->meta.Key()); };
  jobs.on_delete = [this, &h](const auto& j, bool) {
    gone_.Forget(j->meta.Key());
    h.job_deleted(j->meta.Key());
  };
  n.jobs->AddEventHandler(std::move(jobs));

  kube::EventHandlers<kube::Pod> pods;
  pods.on_add = [&h](const auto& p) {
    if (std::string key = JobKeyOf(p->meta); !key.empty()) h.pod_added(key, *p);
  };
  pods.on_update = [&h](const auto&, const auto& p) {
    if (std::string key = JobKeyOf(p->meta); !key.empty()) h.pod_updated(key, *p);
  };
  pods.on_delete = [&h](const auto& p, bool) {
    if (std::string key = JobKeyOf(p->meta); !key.empty()) h.pod_deleted(key, *p);
  };
  n.pods->AddEventHandler(std::move(pods));

  kube::EventHandlers<kube::MetaObject> children;
  children.on_add = [&h](const auto& o) {
    if (std::string key = JobKeyOf(o->meta); !key.empty()) h.child_changed(key);
  };
  children.on_delete = [&h](const auto& o, bool) {
    if (std::string key = JobKeyOf(o->meta); !key.empty()) h.child_changed(key);
  };
  n.services->AddEventHandler(children);
  n.network_policies->AddEventHandler(children);
  // A slice's own updates wake nobody: the operator wrote them, and the pod changes that call for
  // the next one wake the job themselves.
  n.endpoint_slices->AddEventHandler(children);
}

void JobCaches::Start() {
  for (auto& [ns, n] : namespaces_) {
    n.pods->Start();
    n.services->Start();
    n.network_policies->Start();
    n.endpoint_slices->Start();
    n.jobs->Start();
  }
}

void JobCaches::RequestStop() {
  for (auto& [ns, n] : namespaces_) {
    kube::InformerBase* informers[] = {n.jobs.get(), n.pods.get(), n.services.get(),
                                       n.network_policies.get(), n.endpoint_slices.get()};
    for (kube::InformerBase* informer : informers) informer->RequestStop();
  }
}

void JobCaches::Stop() {
  RequestStop();  // every namespace's watches end together, not a second after one another
  for (auto& [ns, n] : namespaces_) {
    n.jobs->Stop();
    n.pods->Stop();
    n.services->Stop();
    n.network_policies->Stop();
    n.endpoint_slices->Stop();
  }
}

std::array<const kube::InformerBase*, 5> JobCaches::Informers(const Namespace& n) {
  return {n.jobs.get(), n.pods.get(), n.services.get(), n.network_policies.get(),
          n.endpoint_slices.get()};
}

bool JobCaches::HasSynced() const {
  for (const auto& [ns, n] : namespaces_) {
    for (const kube::InformerBase* informer : Informers(n)) {
      if (!informer->HasSynced()) return false;
    }
  }
  return true;
}

std::string JobCaches::UnsyncedCaches() const {
  std::string out;
  for (const auto& [ns, n] : namespaces_) {
    kube::AppendUnsynced(Informers(n), (ns.empty() ? std::string("(all)") : ns) + "/", &out);
  }
  return out;
}

bool JobCaches::WaitForSync(std::chrono::milliseconds timeout) const {
  std::vector<const kube::InformerBase*> all;
  for (const auto& [ns, n] : namespaces_) {
    for (const kube::InformerBase* informer : Informers(n)) all.push_back(informer);
  }
  return kube::WaitForSyncAll(all, timeout, clock_);
}

const JobCaches::Namespace* JobCaches::For(const std::string& ns) const {
  if (auto it = namespaces_.find(""); it != namespaces_.end()) return &it->second;
  auto it = namespaces_.find(ns);
  return it == namespaces_.end() ? nullptr : &it->second;
}

std::shared_ptr<const CachedJob> JobCaches::GetJob(const std::string& key) const {
  std::string ns, name;
  if (!SplitKey(key, &ns, &name)) return nullptr;
  const Namespace* n = For(ns);
  return n == nullptr ? nullptr : n->jobs->store().Get(key);
}

std::vector<std::shared_ptr<const CachedJob>> JobCaches::ListJobs() const {
  std::vector<std::shared_ptr<const CachedJob>> out;
  for (const auto& [ns, n] : namespaces_) {
    for (auto& j : n.jobs->store().List()) out.push_back(std::move(j));
  }
  return out;
}

void JobCaches::RecordGone(const std::string& job_key, const kube::Pod& last) {
  std::shared_ptr<const CachedJob> job = GetJob(job_key);
  if (job == nullptr || job->meta.deletion_timestamp) return;
  gone_.Record(job_key, last);
}

std::optional<NodeSnapshot> JobCaches::NodeFacts(const std::string& node) const {
  if (node_health_ == nullptr) return std::nullopt;
  return node_health_->Snapshot(node);
}

Observed JobCaches::ObserveChildren(const CachedJob& job) const {
  Observed out;
  const Namespace* n = For(job.meta.namespace_);
  if (n == nullptr) return out;
  const std::string key = job.meta.Key();
  const api::Time now = clock_.WallNow();
  auto assess = [&](const kube::Pod& pod) {
    if (node_health_ == nullptr || pod.node_name.empty() || pod.IsTerminal() ||
        out.lost_nodes.count(pod.node_name) != 0) {
      return;
    }
    NodeVerdict verdict = node_health_->Assess(pod.node_name, now);
    if (!verdict.lost) verdict = TaintEvictionVerdict(pod);
    if (verdict.lost) out.lost_nodes.emplace(pod.node_name, std::move(verdict));
  };
  for (const auto& pod : n->pods->store().ByIndex(kJobIndex, key)) {
    if (!ControlledBy(pod->meta, job.meta.uid)) continue;
    out.pods.push_back(*pod);
    assess(*pod);
  }
  // Nearly every pass has none: the uid set is built only for those that do.
  std::vector<kube::Pod> gone = gone_.For(key);
  if (!gone.empty()) {
    std::set<std::string> present;  // uids
    for (const kube::Pod& pod : out.pods) present.insert(pod.meta.uid);
    for (kube::Pod& pod : gone) {
      if (!ControlledBy(pod.meta, job.meta.uid) || present.count(pod.meta.uid) != 0) continue;
      assess(pod);
      out.gone_pods.push_back(std::move(pod));
    }
  }
  for (const auto& svc : n->services->store().ByIndex(kJobIndex, key)) {
    if (ControlledBy(svc->meta, job.meta.uid)) out.service_exists = true;
  }
  for (const auto& policy : n->network_policies->store().ByIndex(kJobIndex, key)) {
    if (ControlledBy(policy->meta, job.meta.uid)) out.network_policy_exists = true;
  }
  for (const auto& slice : n->endpoint_slices->store().ByIndex(kJobIndex, key)) {
    if (!ControlledBy(slice->meta, job.meta.uid)) continue;
    const auto digest = slice->meta.annotations.find(std::string(api::kEndpointsDigestAnnotation));
    out.endpoint_slices[slice->meta.name] =
        digest == slice->meta.annotations.end() ? "" : digest->second;
  }
  return out;
}

std::vector<std::string> JobCaches::JobsOnNode(const std::string& node) const {
  std::set<std::string> keys;
  for (const auto& [ns, n] : namespaces_) {
    for (const auto& pod : n.pods->store().ByIndex(kNodeIndex, node)) {
      if (std::string key = JobKeyOf(pod->meta); !key.empty()) keys.insert(std::move(key));
    }
  }
  return {keys.begin(), keys.end()};
}

}  // namespace lockstep::controller
