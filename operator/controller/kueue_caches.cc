#include "operator/controller/kueue_caches.h"

#include "operator/api/children.h"
#include "operator/controller/job_caches.h"
#include "operator/kueue/workload.h"

namespace lockstep::controller {
namespace {

StatusOr<CachedWorkload> DecodeCachedWorkload(const nlohmann::json& object) {
  LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
  LS_ASSIGN_OR_RETURN(kueue::WorkloadView view, kueue::DecodeWorkload(object));
  return CachedWorkload{std::move(meta), std::move(view)};
}

StatusOr<CachedFlavor> DecodeCachedFlavor(const nlohmann::json& object) {
  LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
  LS_ASSIGN_OR_RETURN(kueue::Flavor flavor, kueue::DecodeFlavor(object));
  return CachedFlavor{std::move(meta), std::move(flavor)};
}

// PriorityClass and WorkloadPriorityClass both carry a top-level integer `value`.
StatusOr<CachedPriority> DecodeCachedPriority(const nlohmann::json& object) {
  LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
  if (!object.contains("value") || !object["value"].is_number_integer()) {
    return InvalidArgumentError("priority class " + meta.name + " has no integer value");
  }
  return CachedPriority{std::move(meta), object["value"].get<int32_t>()};
}

// Workloads by "namespace/LocalQueue": a waiting job's neighbours in its queue.
constexpr char kQueueIndex[] = "queue";
std::string QueueKey(const std::string& ns, const std::string& queue) { return ns + "/" + queue; }

std::vector<std::string> IndexByJob(const kube::ObjectMeta& meta) {
  std::string key = JobKeyOf(meta);
  if (key.empty()) return {};
  return {std::move(key)};
}

}  // namespace

KueueCaches::KueueCaches(kube::RestClient& client, const std::vector<std::string>& namespaces) {
  std::vector<std::string> list = namespaces;
  if (list.empty()) list.push_back("");
  kube::ReflectorOptions ours;
  ours.label_selector = std::string(api::kLabelJobName);
  for (const std::string& ns : list) {
    auto informer = std::make_unique<kube::Informer<CachedWorkload>>(
        client, kueue::Workloads(), ns, &DecodeCachedWorkload, ours);
    informer->AddIndexer(kJobIndex, [](const CachedWorkload& w) { return IndexByJob(w.meta); });
    informer->AddIndexer(kQueueIndex, [](const CachedWorkload& w) {
      return std::vector<std::string>{QueueKey(w.meta.namespace_, w.view.queue_name)};
    });
    workloads_.push_back(std::move(informer));
  }
  flavors_ = std::make_unique<kube::Informer<CachedFlavor>>(client, kueue::ResourceFlavors(), "",
                                                            &DecodeCachedFlavor);
  workload_priorities_ = std::make_unique<kube::Informer<CachedPriority>>(
      client, kueue::WorkloadPriorityClasses(), "", &DecodeCachedPriority);
  priorities_ = std::make_unique<kube::Informer<CachedPriority>>(
      client, kueue::PriorityClasses(), "", &DecodeCachedPriority);
}

KueueCaches::~KueueCaches() { Stop(); }

void KueueCaches::SetHandlers(std::function<void(const std::string&)> job_changed,
                              std::function<void()> all_jobs_changed) {
  kube::EventHandlers<CachedWorkload> w;
  w.on_add = [job_changed](const auto& o) {
    if (std::string key = JobKeyOf(o->meta); !key.empty()) job_changed(key);
  };
  w.on_update = [job_changed](const auto&, const auto& o) {
    if (std::string key = JobKeyOf(o->meta); !key.empty()) job_changed(key);
  };
  w.on_delete = [job_changed](const auto& o, bool) {
    if (std::string key = JobKeyOf(o->meta); !key.empty()) job_changed(key);
  };
  for (auto& informer : workloads_) informer->AddEventHandler(w);
  kube::EventHandlers<CachedFlavor> f;
  f.on_add = [all_jobs_changed](const auto&) { all_jobs_changed(); };
  f.on_update = [all_jobs_changed](const auto&, const auto&) { all_jobs_changed(); };
  f.on_delete = [all_jobs_changed](const auto&, bool) { all_jobs_changed(); };
  flavors_->AddEventHandler(std::move(f));
  kube::EventHandlers<CachedPriority> p;
  p.on_add = [all_jobs_changed](const auto&) { all_jobs_changed(); };
  p.on_update = [all_jobs_changed](const auto&, const auto&) { all_jobs_changed(); };
  p.on_delete = [all_jobs_changed](const auto&, bool) { all_jobs_changed(); };
  workload_priorities_->AddEventHandler(p);
  priorities_->AddEventHandler(std::move(p));
}

void KueueCaches::Start() {
  for (auto& informer : workloads_) informer->Start();
  flavors_->Start();
  workload_priorities_->Start();
  priorities_->Start();
}

void KueueCaches::RequestStop() {
  for (auto& informer : workloads_) informer->RequestStop();
  flavors_->RequestStop();
  workload_priorities_->RequestStop();
  priorities_->RequestStop();
}

void KueueCaches::Stop() {
  RequestStop();
  for (auto& informer : workloads_) informer->Stop();
  flavors_->Stop();
  workload_priorities_->Stop();
  priorities_->Stop();
}

bool KueueCaches::HasSynced() const {
  for (const auto& informer : workloads_) {
    if (!informer->HasSynced()) return false;
  }
  return flavors_->HasSynced() && workload_priorities_->HasSynced() && priorities_->HasSynced();
}

kueue::KueueObservation KueueCaches::Observe(const CachedJob& job) const {
  kueue::KueueObservation out;
  out.synced = HasSynced();
  if (!out.synced) return out;
  const std::string key = job.meta.Key();
  const std::string queue = kueue::QueueName(job.job);
  for (const auto& informer : workloads_) {
    for (const auto& w : informer->store().ByIndex(kJobIndex, key)) {
      if (w->view.owner_uid == job.meta.uid) out.workloads.push_back(w->view);
    }
    // The same LocalQueue's other TrainingJobs, for the job's place in it (what this operator
    // watches: its own Workloads only).
    const std::string queue_key = QueueKey(job.meta.namespace_, queue);
    for (const auto& w : informer->store().ByIndex(kQueueIndex, queue_key)) {
      if (w->view.owner_uid != job.meta.uid) out.neighbours.push_back(w->view);
    }
  }
  for (const auto& f : flavors_->store().List()) out.flavors[f->meta.name] = f->flavor;
  if (std::optional<kueue::PriorityRef> ref = kueue::PriorityClassOf(job.job)) {
    const bool kueue_class = ref->kind == "WorkloadPriorityClass";
    const auto& store = kueue_class ? workload_priorities_->store() : priorities_->store();
    if (auto found = store.Get(ref->name)) {
      out.priority = found->value;
    } else {
      out.priority.reset();
      out.priority_error = ref->kind + " " + ref->name + " not found";
    }
  }
  return out;
}

}  // namespace lockstep::controller
