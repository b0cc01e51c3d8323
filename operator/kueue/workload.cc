#include "operator/kueue/workload.h"

#include <algorithm>
#include <cctype>

#include "operator/api/children.h"
#include "operator/api/ranks.h"

namespace lockstep::kueue {
namespace {

using nlohmann::json;

std::string Label(const api::TrainingJob& job, std::string_view key) {
  auto it = job.metadata.labels.find(std::string(key));
  return it == job.metadata.labels.end() ? "" : it->second;
}

// The template as Kueue reads it: the user's PodTemplateSpec; the role's priorityClassName when
// the job names one and the template does not (the pods get it the same way: children.h).
json PodSetTemplate(const api::TrainingJob& job, const json& tmpl) {
  json out = tmpl.is_object() ? tmpl : json::object();
  if (!out.contains("spec") || !out["spec"].is_object()) out["spec"] = json::object();
  if (!job.spec.priority_class_name.empty() && !out["spec"].contains("priorityClassName")) {
    out["spec"]["priorityClassName"] = job.spec.priority_class_name;
  }
  return out;
}

// spec.placement as Kueue's topologyRequest: requiredTopologyKey is required; otherwise the
// finest of topologyKeys is preferred (Kueue falls back to coarser levels itself).
std::optional<json> TopologyRequest(const api::TrainingJob& job) {
  if (!job.spec.placement) return std::nullopt;
  if (job.spec.placement->required_topology_key) {
    return json{{"required", *job.spec.placement->required_topology_key}};
  }
  if (!job.spec.placement->topology_keys.empty()) {
    return json{{"preferred", job.spec.placement->topology_keys.back()}};
  }
  return std::nullopt;
}

}  // namespace

std::string QueueName(const api::TrainingJob& job) { return Label(job, kQueueNameLabel); }

std::optional<PriorityRef> PriorityClassOf(const api::TrainingJob& job) {
  if (std::string wpc = Label(job, kPriorityClassLabel); !wpc.empty()) {
    return PriorityRef{"kueue.x-k8s.io", "WorkloadPriorityClass", wpc};
  }
  if (!job.spec.priority_class_name.empty()) {
    return PriorityRef{"scheduling.k8s.io", "PriorityClass", job.spec.priority_class_name};
  }
  return std::nullopt;
}

std::vector<PodSetShape> PodSetsOf(const api::TrainingJob& job) {
  std::vector<PodSetShape> sets;
  // PodSlots orders the roles as the ranks go; one PodSet per role, in that order.
  for (const api::PodSlot& slot : api::PodSlots(job.spec, job.spec.replicas)) {
    if (sets.empty() || sets.back().name != slot.role) {
      sets.push_back({slot.role, 0, PodSetTemplate(job, *slot.pod_template)});
    }
    ++sets.back().count;
  }
  // Hot spares run the worker template beside the gang and hold a node's resources the whole
  // time: Kueue must charge them. They join the worker PodSet rather than a PodSet of their
  // own, so Kueue gives them the workers' flavor (a spare takes a worker's node-rank) and its
  // topology assignment covers them; their pods carry the workers' placement (children.cc).
  if (const int32_t spares = job.spec.failure_policy.spare_replicas; spares > 0) {
    auto workers = std::find_if(sets.begin(), sets.end(), [](const PodSetShape& set) {
      return set.name == api::kWorkerRole;
    });
    if (workers != sets.end()) workers->count += spares;
  }
  return sets;
}

std::string WorkloadName(const api::TrainingJob& job) {
  std::string suffix;
  for (char c : job.metadata.uid) {
    if (suffix.size() == 5) break;
    if (std::isxdigit(static_cast<unsigned char>(c))) suffix += static_cast<char>(std::tolower(c));
  }
  return "trainingjob-" + job.metadata.name + "-" + suffix;
}

json BuildWorkload(const api::TrainingJob& job, int32_t priority) {
  json pod_sets = json::array();
  for (const PodSetShape& set : PodSetsOf(job)) {
    json pod_set = {{"name", set.name}, {"count", set.count}, {"template", set.pod_template}};
    if (std::optional<json> topology = TopologyRequest(job)) pod_set["topologyRequest"] = *topology;
    pod_sets.push_back(std::move(pod_set));
  }
  json spec = {{"queueName", QueueName(job)},
               {"podSets", std::move(pod_sets)},
               {"active", !job.spec.run_policy.suspend}};
  if (std::optional<PriorityRef> ref = PriorityClassOf(job)) {
    spec["priorityClassRef"] = {{"group", ref->group}, {"kind", ref->kind}, {"name", ref->name}};
    spec["priority"] = priority;
  }
  json meta = api::ChildMetadata(job, WorkloadName(job));
  meta["labels"][std::string(kJobUidLabel)] = job.metadata.uid;
  meta["labels"][std::string(kQueueNameLabel)] = QueueName(job);
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata", std::move(meta)},
          {"spec", std::move(spec)}};
}

}  // namespace lockstep::kueue
