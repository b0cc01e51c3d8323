#include "operator/scheduler/cycle/cluster_objects.h"

#include <algorithm>
#include <string>

#include "operator/api/codec.h"
#include "operator/api/conditions.h"
#include "operator/api/resolved_template.h"
#include "operator/kube/informer.h"

namespace lockstep::scheduler {

StatusOr<JobInfo> DecodeJobInfo(const nlohmann::json& object) {
  if (!object.is_object()) return InvalidArgumentError("TrainingJob is not an object");
  JobInfo job;
  LS_ASSIGN_OR_RETURN(job.meta, kube::DecodeObjectMeta(object));
  // A job naming a template is placed with the spec merged over its snapshot; before the
  // snapshot it has no pods to place (the controller writes it before creating any), so it is
  // left out of the cache quietly until then (api::SnapshotSpec's FailedPrecondition).
  StatusOr<nlohmann::json> spec = api::SnapshotSpec(object);
  if (!spec.ok()) {
    if (spec.status().code() != StatusCode::kFailedPrecondition) return spec.status();
    return kube::NotYetDecodable(job.meta.Key() + ": " + std::string(spec.status().message()));
  }
  LS_ASSIGN_OR_RETURN(job.spec, api::DecodeSpec(*spec));
  auto status = object.find("status");
  if (status != object.end() && status->is_object()) {
    LS_ASSIGN_OR_RETURN(api::TrainingJobStatus decoded, api::DecodeStatus(*status));
    job.status_replicas = decoded.replicas;
    job.status_attempt = decoded.attempt;
    job.state = decoded.state;
    job.excluded_nodes = std::move(decoded.excluded_nodes);
    job.capacity = decoded.capacity;
    if (decoded.last_restart) job.last_restart_time = decoded.last_restart->time;
    if (const api::Condition* c =
            api::FindCondition(decoded.conditions, api::kConditionScheduled)) {
      job.scheduled = *c;
    }
    if (const api::Condition* c = api::FindCondition(decoded.conditions, kConditionPreempted)) {
      job.preempted = *c;
    }
  }
  return job;
}

StatusOr<PriorityClassInfo> DecodePriorityClass(const nlohmann::json& object) {
  if (!object.is_object()) return InvalidArgumentError("PriorityClass is not an object");
  PriorityClassInfo pc;
  LS_ASSIGN_OR_RETURN(pc.meta, kube::DecodeObjectMeta(object));
  auto global = object.find("globalDefault");
  pc.global_default = global != object.end() && global->is_boolean() && global->get<bool>();
  auto policy = object.find("preemptionPolicy");
  pc.never_preempts = policy != object.end() && policy->is_string() && *policy == "Never";
  return pc;
}

int32_t ExpectedPodCount(const JobInfo& job) {
  int32_t workers = job.spec.replicas;
  if (job.spec.elastic && job.status_replicas > 0) workers = job.status_replicas;
  int32_t total = workers;
  for (const api::Role& role : job.spec.roles) total += role.replicas;
  // Hot spares are placed with the gang, all or none (validation keeps them off elastic jobs).
  if (!job.spec.elastic) total += std::max(job.spec.failure_policy.spare_replicas, 0);
  return total;
}

std::vector<std::string> ExcludedNodes(const kube::ObjectMeta& meta) {
  std::vector<std::string> out;
  auto it = meta.annotations.find(std::string(kExcludedNodesAnnotation));
  if (it == meta.annotations.end()) return out;
  const std::string& list = it->second;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(start, end - start);
    const size_t first = name.find_first_not_of(" \t");
    const size_t last = name.find_last_not_of(" \t");
    if (first != std::string::npos) out.push_back(name.substr(first, last - first + 1));
    start = end + 1;
  }
  return out;
}

std::vector<std::string> ExcludedNodes(const JobInfo& job, api::Time now) {
  std::vector<std::string> out = ExcludedNodes(job.meta);
  for (const api::ExcludedNode& node : job.excluded_nodes) {
    if (node.until > now) out.push_back(node.name);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace lockstep::scheduler
