#include "operator/controller/template_caches.h"

namespace lockstep::controller {

StatusOr<CachedTemplate> DecodeCachedTemplate(const nlohmann::json& object) {
  CachedTemplate out;
  LS_ASSIGN_OR_RETURN(out.meta, kube::DecodeObjectMeta(object));
  if (object.contains("spec")) {
    if (!object["spec"].is_object()) return InvalidArgumentError("template spec is not an object");
    out.spec = object["spec"];
  }
  return out;
}

TemplateCaches::TemplateCaches(kube::RestClient& client,
                               const std::vector<std::string>& namespaces) {
  std::vector<std::string> list = namespaces;
  if (list.empty()) list.push_back("");
  cluster_ = std::make_unique<kube::Informer<CachedTemplate>>(
      client, resources::ClusterTrainingTemplates(), "", &DecodeCachedTemplate);
  for (const std::string& ns : list) {
    namespaced_[ns] = std::make_unique<kube::Informer<CachedTemplate>>(
        client, resources::TrainingTemplates(), ns, &DecodeCachedTemplate);
  }
}

TemplateCaches::~TemplateCaches() { Stop(); }

void TemplateCaches::SetHandler(
    std::function<void(const api::TemplateRef&, const std::string& ns)> changed) {
  auto handlers = [changed](std::string_view kind) {
    auto call = [changed, kind](const CachedTemplate& t) {
      changed(api::TemplateRef{std::string(kind), t.meta.name}, t.meta.namespace_);
    };
    kube::EventHandlers<CachedTemplate> h;
    h.on_add = [call](const auto& t) { call(*t); };
    h.on_update = [call](const auto&, const auto& t) { call(*t); };
    h.on_delete = [call](const auto& t, bool) { call(*t); };
    return h;
  };
  cluster_->AddEventHandler(handlers(api::kClusterTrainingTemplateKind));
  for (auto& [ns, informer] : namespaced_) {
    informer->AddEventHandler(handlers(api::kTrainingTemplateKind));
  }
}

void TemplateCaches::Start() {
  cluster_->Start();
  for (auto& [ns, informer] : namespaced_) informer->Start();
}

void TemplateCaches::RequestStop() {
  cluster_->RequestStop();
  for (auto& [ns, informer] : namespaced_) informer->RequestStop();
}

void TemplateCaches::Stop() {
  RequestStop();
  cluster_->Stop();
  for (auto& [ns, informer] : namespaced_) informer->Stop();
}

bool TemplateCaches::HasSynced() const {
  if (!cluster_->HasSynced()) return false;
  for (const auto& [ns, informer] : namespaced_) {
    if (!informer->HasSynced()) return false;
  }
  return true;
}

std::shared_ptr<const CachedTemplate> TemplateCaches::Find(const api::TemplateRef& ref,
                                                           const std::string& job_ns) const {
  if (ref.cluster_scoped()) return cluster_->store().Get(ref.name);
  auto it = namespaced_.find("");
  if (it == namespaced_.end()) it = namespaced_.find(job_ns);
  if (it == namespaced_.end()) return nullptr;
  return it->second->store().Get(job_ns + "/" + ref.name);
}

}  // namespace lockstep::controller
