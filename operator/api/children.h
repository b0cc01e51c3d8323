#pragma once
// The desired children of a TrainingJob (architecture.md section 4), as a pure function of the job
// and a few operator options: the headless Service `<job>` (its EndpointSlice: endpoint_slice.h),
// the Secret `<job>-rdzv`, and one Pod per (role, index) in node-rank order (ranks.h). The
// controller compares these with what exists and creates what is missing; nothing here talks to
// the API. The job must have passed Validate() (validation.h); a shape the builder cannot use is
// still an error, never a crash.
//
// Pod anatomy (docs/api.md): the user's template, plus
//   - labels lockstep.dev/{job-name, role, replica-index, attempt}; a controller ownerReference;
//   - schedulerName lockstep (the gang scheduler binds), hostname <pod>, subdomain <job>,
//     restartPolicy Never (the launcher restarts processes; the operator restarts pods);
//   - init container `lockstep-launcher-install` (image --launcher-image) that copies
//     /lockstep-launcher from its image into the emptyDir `lockstep-bin` at /lockstep/bin, with
//     a securityContext that passes Pod Security "restricted" (non-root 65532, no privilege
//     escalation, every capability dropped, RuntimeDefault seccomp, read-only root);
//   - the trainer (first container) runs `/lockstep/bin/lockstep-launcher -- <command> <args>`
//     with LOCKSTEP_* env (protocol/contract.h) and the token Secret mounted read-only at
//     /var/run/lockstep/rdzv/token. Resources are untouched;
//   - terminationGracePeriodSeconds: the template's, else Kubernetes' default (30) written out,
//     and LOCKSTEP_GRACE_PERIOD one second less, so on a deletion (suspend, preemption,
//     eviction) the launcher gives its trainers all the time the kubelet gives the pod to
//     checkpoint and still ends before the kubelet's SIGKILL (docs/launcher.md "Graceful stop").

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "operator/api/types.h"

namespace lockstep::api {

inline constexpr std::string_view kLabelJobName = "lockstep.dev/job-name";
inline constexpr std::string_view kLabelRole = "lockstep.dev/role";
inline constexpr std::string_view kLabelReplicaIndex = "lockstep.dev/replica-index";
inline constexpr std::string_view kLabelAttempt = "lockstep.dev/attempt";

inline constexpr std::string_view kSchedulerName = "lockstep";
inline constexpr int32_t kRdzvPort = 29400;
inline constexpr int32_t kTensorFlowPort = 2222;  // TF's customary task port (TF_CONFIG)
inline constexpr std::string_view kInitContainerName = "lockstep-launcher-install";
inline constexpr std::string_view kLauncherInImage = "/lockstep-launcher";
inline constexpr std::string_view kLauncherVolume = "lockstep-bin";
inline constexpr std::string_view kLauncherDir = "/lockstep/bin";
inline constexpr std::string_view kLauncherPath = "/lockstep/bin/lockstep-launcher";
inline constexpr std::string_view kTokenVolume = "lockstep-rdzv";
inline constexpr std::string_view kTokenDir = "/var/run/lockstep/rdzv";
inline constexpr std::string_view kTokenKey = "token";
inline constexpr int64_t kLauncherImageUser = 65532;  // docker/launcher.Dockerfile's USER

// What an admission adds to one role's pods (Kueue's flavors, operator/kueue/admission.h): node
// labels the pods require (merged into nodeSelector; a key the template sets to another value is
// an error, not an override), required node affinity terms, tolerations appended, labels added.
struct RolePlacement {
  std::map<std::string, std::string> node_selector;
  nlohmann::json tolerations = nlohmann::json::array();
  // nodeSelectorTerms (ORed) the pods' nodes must match, on top of the template's own required
  // node affinity (ANDed with each of its terms): a topology assignment's domains.
  nlohmann::json node_terms = nlohmann::json::array();
  std::map<std::string, std::string> labels;
  friend bool operator==(const RolePlacement&, const RolePlacement&) = default;
};

struct ChildrenOptions {
  std::string launcher_image;              // the operator's --launcher-image
  std::string launcher_image_pull_policy;  // empty: the cluster's default
  int32_t attempt = 0;                     // written into labels and LOCKSTEP_ATTEMPT
  // Workers in this attempt; unset: spec.replicas. An elastic restart may run smaller.
  std::optional<int32_t> worker_replicas;
  // LOCKSTEP_MAX_RESTARTS: the in-place restarts the launchers may make (the controller's
  // in-place policy computes it: operator/controller/inplace_policy.h).
  int32_t launcher_max_restarts = 0;
  // By role name; a role not named gets nothing added. Spare pods get the workers' unless
  // "spare" is named.
  std::map<std::string, RolePlacement> role_placement;
  // Hot spares (controller/spare_plan.h): the spare pods (by spare index) the attempt wants
  // standing by, and the node-ranks promoted spares serve, whose gang pods are not recreated.
  std::set<int32_t> spare_indexes;
  std::set<int32_t> served_node_ranks;
};

// Kubernetes' default terminationGracePeriodSeconds, written into pods whose template has none.
inline constexpr int64_t kDefaultTerminationGracePeriodSeconds = 30;

// The pod's terminationGracePeriodSeconds: the template spec's when it is a non-negative
// integer, else the default (the apiserver refuses any other value in a pod anyway).
int64_t PodGracePeriodSeconds(const nlohmann::json& pod_spec);
// LOCKSTEP_GRACE_PERIOD for a pod with that grace: one second less (at least 0), so the
// launcher's SIGKILL of a trainer that ignores SIGTERM comes before the kubelet's of the pod.
int64_t LauncherGracePeriodSeconds(int64_t pod_grace_seconds);

// "lockstep.dev/job-name=<job>": status.selector (the Service has none: endpoint_slice.h).
std::string JobSelector(std::string_view job_name);
std::string RdzvSecretName(std::string_view job_name);
nlohmann::json ControllerOwnerReference(const TrainingJob& job);
// A child's metadata: `name`, the job's namespace, the label lockstep.dev/job-name and the
// controller ownerReference.
nlohmann::json ChildMetadata(const TrainingJob& job, std::string name);

nlohmann::json BuildService(const TrainingJob& job);
// `token` comes from GenerateRdzvToken() (token.h).
nlohmann::json BuildRdzvSecret(const TrainingJob& job, std::string_view token);
// Every pod of the attempt, in node-rank order.
StatusOr<std::vector<nlohmann::json>> BuildPods(const TrainingJob& job,
                                                const ChildrenOptions& options);
// The pods of the attempt whose names `present` does not hold, in node-rank order, at most
// `limit` of them: a reconcile pass builds only the pods it will create, so what it holds is
// bounded by its create budget, not by the job's size (a 1 MB template x 10,000 replicas would
// be 10 GB; docs/reliability.md, hole 4).
StatusOr<std::vector<nlohmann::json>> BuildMissingPods(const TrainingJob& job,
                                                       const ChildrenOptions& options,
                                                       const std::set<std::string>& present,
                                                       size_t limit);

}  // namespace lockstep::api
