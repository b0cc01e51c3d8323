#pragma once
// What the operator reads of Kueue's objects: a Workload (its identity, owner, PodSets, active,
// conditions and admission) and a ResourceFlavor (the node labels and tolerations its pods must
// get). Decoding is lenient where Kueue may add fields and strict where the operator acts on a
// value: a Workload whose admission cannot be read is an error, never an empty admission.
// Thread-compatible values; no I/O.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace lockstep::kueue {

// Workload condition types and the reasons the operator writes or reads (Kueue's API).
inline constexpr std::string_view kQuotaReserved = "QuotaReserved";
inline constexpr std::string_view kAdmitted = "Admitted";
inline constexpr std::string_view kEvicted = "Evicted";
inline constexpr std::string_view kPodsReady = "PodsReady";
inline constexpr std::string_view kFinished = "Finished";
inline constexpr std::string_view kRequeued = "Requeued";

struct WorkloadCondition {
  std::string type;
  std::string status;  // "True", "False", "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339, as stored
};

// Kueue's topology-aware assignment of one PodSet (TAS): the topology levels (node label keys,
// highest first) and the domains it chose, each as its value at every level, with the pods it
// counted there. Kueue stores it compressed (slices of universal or prefix/root/suffix values);
// this is it expanded.
struct TopologyDomain {
  std::vector<std::string> values;  // one per level
  int32_t pods = 0;
};
struct TopologyAssignment {
  std::vector<std::string> levels;
  std::vector<TopologyDomain> domains;
};

struct PodSetAssignment {
  std::string name;
  std::map<std::string, std::string> flavors;  // resource -> ResourceFlavor name
  std::optional<int32_t> count;
  std::optional<TopologyAssignment> topology;
};

struct Admission {
  std::string cluster_queue;
  std::vector<PodSetAssignment> pod_sets;
};

struct WorkloadView {
  std::string name;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;
  bool deleting = false;
  std::string owner_uid;  // the controller ownerReference's uid ("" if none)
  std::string queue_name;
  bool active = true;  // spec.active (unset: true)
  int32_t priority = 0;  // spec.priority (unset: 0)
  std::vector<std::pair<std::string, int32_t>> pod_set_counts;  // (name, count) in order
  nlohmann::json pod_sets;  // spec.podSets as stored (for the equivalence check)
  std::vector<WorkloadCondition> conditions;
  std::optional<Admission> admission;
  nlohmann::json raw_conditions = nlohmann::json::array();  // status.conditions as stored

  const WorkloadCondition* Find(std::string_view type) const;
  bool IsTrue(std::string_view type) const;
};

StatusOr<WorkloadView> DecodeWorkload(const nlohmann::json& object);

struct Flavor {
  std::map<std::string, std::string> node_labels;
  nlohmann::json tolerations = nlohmann::json::array();
};
StatusOr<Flavor> DecodeFlavor(const nlohmann::json& object);

}  // namespace lockstep::kueue
