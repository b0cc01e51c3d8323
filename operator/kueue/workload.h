#pragma once
// The Workload (kueue.x-k8s.io/v1beta2) that stands for one TrainingJob in Kueue, as a pure
// function of the job: Kueue's contract for a job it does not know (an "external framework",
// docs/queues.md) is that the job's own controller creates and owns one Workload per job, with a
// PodSet per group of identical pods, and starts the job only once Kueue admitted it.
//
//  - A job is Kueue's when it carries the label kueue.x-k8s.io/queue-name (the LocalQueue); the
//    operator manages it so only when started with --kueue.
//  - One PodSet per role, in node-rank order (the leader role first, then "worker", then the
//    others), named after the role, count = the role's replicas (spec.replicas for "worker"),
//    template = the role's PodTemplateSpec as the user wrote it: Kueue counts quota from its
//    containers' requests and matches flavors with its nodeSelector, affinity and tolerations.
//    Hot spares (spec.failurePolicy.spareReplicas) are counted in the worker PodSet: every pod
//    that runs is charged, and spares get the workers' flavor and topology domain.
//  - spec.placement becomes each PodSet's topologyRequest: `requiredTopologyKey` required, else
//    the finest of `topologyKeys` preferred (Kueue's topology-aware scheduling then needs a
//    flavor with a Topology of those node labels).
//  - priority: the label kueue.x-k8s.io/priority-class names a WorkloadPriorityClass, else
//    spec.priorityClassName a PriorityClass (Kueue's order); the caller resolves the value.
//  - spec.active follows spec.runPolicy.suspend: a suspended job gives its quota back.
//  - The Workload's controller ownerReference is the job, so it goes with the job.
// Thread-compatible values; no I/O.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"
#include "operator/kube/rest_client.h"

namespace lockstep::kueue {

inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
// Put on the pods Kueue admitted, naming their PodSet (as Kueue does for the jobs it knows).
inline constexpr std::string_view kPodSetLabel = "kueue.x-k8s.io/podset";
inline constexpr std::string_view kJobUidLabel = "kueue.x-k8s.io/job-uid";

inline kube::ResourceRef Workloads() { return {"kueue.x-k8s.io", "v1beta2", "workloads", true}; }
inline kube::ResourceRef ResourceFlavors() {
  return {"kueue.x-k8s.io", "v1beta2", "resourceflavors", false};
}
inline kube::ResourceRef WorkloadPriorityClasses() {
  return {"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", false};
}
inline kube::ResourceRef PriorityClasses() {
  return {"scheduling.k8s.io", "v1", "priorityclasses", false};
}

// The LocalQueue the job asks for; "" when it is not Kueue's.
std::string QueueName(const api::TrainingJob& job);

// Which priority class the Workload names, and its value once resolved.
struct PriorityRef {
  std::string group;  // "kueue.x-k8s.io" or "scheduling.k8s.io"
  std::string kind;   // "WorkloadPriorityClass" or "PriorityClass"
  std::string name;
  friend bool operator==(const PriorityRef&, const PriorityRef&) = default;
};
// The class the job names (label first, then spec.priorityClassName); nullopt: none (priority 0).
std::optional<PriorityRef> PriorityClassOf(const api::TrainingJob& job);

struct PodSetShape {
  std::string name;
  int32_t count = 0;
  nlohmann::json pod_template;  // the role's PodTemplateSpec
};
// The job's PodSets, roles with no replicas left out.
std::vector<PodSetShape> PodSetsOf(const api::TrainingJob& job);

// "trainingjob-<job>-<5 hex of the job's uid>": one name per job object, so a job deleted and
// created again under the same name never takes over the old one's Workload.
std::string WorkloadName(const api::TrainingJob& job);

// The Workload to create. `priority`: the resolved value of PriorityClassOf(job) (0 if none).
nlohmann::json BuildWorkload(const api::TrainingJob& job, int32_t priority);

}  // namespace lockstep::kueue
