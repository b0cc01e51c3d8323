#pragma once
// The compact cache types the scheduler keeps besides Pods and Nodes: the part of a TrainingJob
// it reads (spec, the elastic world size, the attempt, excluded nodes, its own Scheduled
// condition and capacity) and PriorityClasses.
// Decoders never throw (they run on informer threads).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"
#include "operator/kube/rest_client.h"

namespace lockstep::scheduler {

// Comma-separated node names the gang must avoid (failed nodes under cool-down), set by hand or
// by tools; the operator's own list is status.excludedNodes (with an expiry). Read every cycle.
inline constexpr std::string_view kExcludedNodesAnnotation = "lockstep.dev/excluded-nodes";

// The condition the scheduler writes on a job whose gang it evicted for a higher-priority one
// (its one author; docs/scheduler.md, "Preemption").
inline constexpr std::string_view kConditionPreempted = "Preempted";

struct JobInfo {
  kube::ObjectMeta meta;
  api::TrainingJobSpec spec;
  int32_t status_replicas = 0;
  int32_t status_attempt = 0;
  std::optional<api::JobState> state;
  std::vector<api::ExcludedNode> excluded_nodes;  // status.excludedNodes, expired ones included
  std::optional<api::Condition> scheduled;        // status.conditions[type=Scheduled]
  std::optional<api::Capacity> capacity;          // status.capacity (the scheduler's own)
  std::optional<api::Time> last_restart_time;     // status.lastRestart.time: the attempt's start
  std::optional<api::Condition> preempted;        // status.conditions[type=Preempted] (ours too)
};

// What the scheduler reads of a PriorityClass: whether it is the default and whether it
// preempts. Not its value: a gang is ranked by its pods' admitted spec.priority (gangs.cc).
struct PriorityClassInfo {
  kube::ObjectMeta meta;
  bool global_default = false;
  bool never_preempts = false;  // preemptionPolicy: Never
};

// A job naming a template decodes with its spec merged over status.resolvedTemplate; without
// that snapshot yet it is kube::NotYetDecodable (left out of the informer's cache quietly: it has
// no pods before the snapshot).
StatusOr<JobInfo> DecodeJobInfo(const nlohmann::json& object);
StatusOr<PriorityClassInfo> DecodePriorityClass(const nlohmann::json& object);

inline kube::ResourceRef PriorityClasses() {
  return {"scheduling.k8s.io", "v1", "priorityclasses", false};
}

// Pods the gang of this job must have before it may be placed: the workers (status.replicas
// when elastic has set the world size, else spec.replicas) plus every extra role's replicas.
int32_t ExpectedPodCount(const JobInfo& job);

// The annotation's node names, trimmed, empty entries dropped.
std::vector<std::string> ExcludedNodes(const kube::ObjectMeta& meta);

// Every node the job's placements must avoid at `now`: the annotation's, plus status.excludedNodes
// whose `until` is still in the future (a cool-down that has run out no longer counts).
// Sorted, without duplicates.
std::vector<std::string> ExcludedNodes(const JobInfo& job, api::Time now);

}  // namespace lockstep::scheduler
