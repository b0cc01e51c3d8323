#pragma once
// The informer caches of the templates jobs name in spec.templateRef (docs/api.md "Templates"):
// ClusterTrainingTemplates (cluster-wide) and TrainingTemplates (one informer per watched
// namespace, like JobCaches). A template's add, change or delete calls the handler with its
// reference; the controller wakes the jobs that name it and have not started yet (a started job
// runs on its snapshot, status.resolvedTemplate, and ignores the template).
//
// The template CRDs may be missing (an operator newer than its CRDs): the informers keep
// retrying, HasSynced stays false and only the jobs that name a template wait (template_resolve.h);
// the controller does not wait for these caches at start. Thread-safe after Start().

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/template_merge.h"
#include "operator/kube/informer.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

// A template as cached: its metadata and its .spec (templates are few and small; the spec is
// what the merge reads).
struct CachedTemplate {
  kube::ObjectMeta meta;
  nlohmann::json spec = nlohmann::json::object();
};
StatusOr<CachedTemplate> DecodeCachedTemplate(const nlohmann::json& object);

namespace resources {
inline kube::ResourceRef ClusterTrainingTemplates() {
  return {"lockstep.dev", "v1alpha1", std::string(api::kClusterTrainingTemplatePlural), false};
}
inline kube::ResourceRef TrainingTemplates() {
  return {"lockstep.dev", "v1alpha1", std::string(api::kTrainingTemplatePlural), true};
}
}  // namespace resources

class TemplateCaches {
 public:
  // `namespaces` as JobCaches' (empty: all).
  TemplateCaches(kube::RestClient& client, const std::vector<std::string>& namespaces);
  ~TemplateCaches();

  // Before Start(): called with the template that changed and, for a TrainingTemplate, its
  // namespace ("" for a ClusterTrainingTemplate).
  void SetHandler(std::function<void(const api::TemplateRef&, const std::string& ns)> changed);
  void Start();
  void RequestStop();
  void Stop();
  bool HasSynced() const;

  // The template `ref` names for a job of namespace `job_ns`; null when there is none (or the
  // namespace is not watched).
  std::shared_ptr<const CachedTemplate> Find(const api::TemplateRef& ref,
                                             const std::string& job_ns) const;

 private:
  std::unique_ptr<kube::Informer<CachedTemplate>> cluster_;
  std::map<std::string, std::unique_ptr<kube::Informer<CachedTemplate>>> namespaced_;  // "" = all
};

}  // namespace lockstep::controller
