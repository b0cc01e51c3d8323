#include "operator/kueue/workload_view.h"

#include <cstdint>

#include "operator/kube/json_lookup.h"

namespace lockstep::kueue {
namespace {

using nlohmann::json;

using kube::Field;
using kube::Str;

StatusOr<std::map<std::string, std::string>> StringMap(const json& value, const std::string& what) {
  std::map<std::string, std::string> out;
  if (value.is_null()) return out;
  if (!value.is_object()) return InvalidArgumentError(what + " is not a map");
  for (const auto& [k, v] : value.items()) {
    if (!v.is_string()) return InvalidArgumentError(what + "." + k + " is not a string");
    out[k] = v.get<std::string>();
  }
  return out;
}

// One level's values for the `count` domains of a slice: the same for all (universal), or
// prefix + root + suffix per domain (individual).
StatusOr<std::vector<std::string>> LevelValues(const json& level, int32_t count) {
  if (level.contains("universal") && level["universal"].is_string()) {
    return std::vector<std::string>(count, level["universal"].get<std::string>());
  }
  const json& individual = Field(level, "individual");
  const json& roots = Field(individual, "roots");
  if (!roots.is_array() || static_cast<int32_t>(roots.size()) != count) {
    return InvalidArgumentError("topologyAssignment: a level has neither one value nor one per domain");
  }
  const std::string prefix = Str(individual, "prefix");
  const std::string suffix = Str(individual, "suffix");
  std::vector<std::string> out;
  for (const json& root : roots) {
    if (!root.is_string()) return InvalidArgumentError("topologyAssignment: a root is not a string");
    out.push_back(prefix + root.get<std::string>() + suffix);
  }
  return out;
}

StatusOr<TopologyAssignment> DecodeTopology(const json& value) {
  TopologyAssignment t;
  const json& levels = Field(value, "levels");
  if (!levels.is_array() || levels.empty()) return InvalidArgumentError("topologyAssignment without levels");
  for (const json& l : levels) {
    if (!l.is_string()) return InvalidArgumentError("topologyAssignment: a level is not a string");
    t.levels.push_back(l.get<std::string>());
  }
  const json& slices = Field(value, "slices");
  if (!slices.is_array()) return InvalidArgumentError("topologyAssignment without slices");
  for (const json& slice : slices) {
    const json& count_field = Field(slice, "domainCount");
    const int32_t count = count_field.is_number_integer() ? count_field.get<int32_t>() : 0;
    constexpr int32_t kMaxDomains = 100000;  // Kueue's own bound is far lower; a guard
    if (count <= 0 || count > kMaxDomains) return InvalidArgumentError("topologyAssignment: bad domainCount");
    const json& per_level = Field(slice, "valuesPerLevel");
    if (!per_level.is_array() || per_level.size() != t.levels.size()) {
      return InvalidArgumentError("topologyAssignment: valuesPerLevel does not match levels");
    }
    std::vector<TopologyDomain> domains(count);
    for (const json& level : per_level) {
      LS_ASSIGN_OR_RETURN(std::vector<std::string> values, LevelValues(level, count));
      for (int32_t i = 0; i < count; ++i) domains[i].values.push_back(std::move(values[i]));
    }
    const json& pods = Field(slice, "podCounts");
    for (int32_t i = 0; i < count; ++i) {
      if (Field(pods, "universal").is_number_integer()) {
        domains[i].pods = pods["universal"].get<int32_t>();
      } else if (Field(pods, "individual").is_array() &&
                 static_cast<int32_t>(pods["individual"].size()) == count &&
                 pods["individual"][i].is_number_integer()) {
        domains[i].pods = pods["individual"][i].get<int32_t>();
      }
    }
    for (TopologyDomain& d : domains) t.domains.push_back(std::move(d));
  }
  return t;
}

StatusOr<Admission> DecodeAdmission(const json& value) {
  if (!value.is_object()) return InvalidArgumentError("status.admission is not an object");
  Admission a;
  a.cluster_queue = Str(value, "clusterQueue");
  const json& sets = Field(value, "podSetAssignments");
  if (!sets.is_array()) return InvalidArgumentError("status.admission.podSetAssignments is not a list");
  for (const json& s : sets) {
    PodSetAssignment p;
    p.name = Str(s, "name");
    if (p.name.empty()) return InvalidArgumentError("a podSetAssignment has no name");
    LS_ASSIGN_OR_RETURN(p.flavors, StringMap(Field(s, "flavors"),
                                             "podSetAssignments[" + p.name + "].flavors"));
    const json& count = Field(s, "count");
    if (count.is_number_integer()) p.count = count.get<int32_t>();
    if (const json& topology = Field(s, "topologyAssignment"); !topology.is_null()) {
      StatusOr<TopologyAssignment> t = DecodeTopology(topology);
      if (!t.ok()) return t.status().WithContext("pod set " + p.name);
      p.topology = std::move(t).value();
    }
    a.pod_sets.push_back(std::move(p));
  }
  return a;
}

}  // namespace

const WorkloadCondition* WorkloadView::Find(std::string_view type) const {
  for (const WorkloadCondition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool WorkloadView::IsTrue(std::string_view type) const {
  const WorkloadCondition* c = Find(type);
  return c != nullptr && c->status == "True";
}

StatusOr<WorkloadView> DecodeWorkload(const json& object) {
  const json& meta = Field(object, "metadata");
  WorkloadView w;
  w.name = Str(meta, "name");
  w.uid = Str(meta, "uid");
  if (w.name.empty() || w.uid.empty()) return InvalidArgumentError("workload without name or uid");
  w.resource_version = Str(meta, "resourceVersion");
  if (Field(meta, "generation").is_number_integer()) w.generation = meta["generation"].get<int64_t>();
  w.creation_timestamp = Str(meta, "creationTimestamp");
  w.deleting = !Str(meta, "deletionTimestamp").empty();
  const json& owners = Field(meta, "ownerReferences");
  if (owners.is_array()) {
    for (const json& o : owners) {
      if (Field(o, "controller").is_boolean() && o["controller"].get<bool>()) w.owner_uid = Str(o, "uid");
    }
  }
  const json& spec = Field(object, "spec");
  w.queue_name = Str(spec, "queueName");
  if (Field(spec, "active").is_boolean()) w.active = spec["active"].get<bool>();
  if (Field(spec, "priority").is_number_integer()) {
    const int64_t priority = spec["priority"].get<int64_t>();
    if (priority >= INT32_MIN && priority <= INT32_MAX) w.priority = static_cast<int32_t>(priority);
  }
  w.pod_sets = Field(spec, "podSets").is_array() ? spec["podSets"] : json::array();
  for (const json& s : w.pod_sets) {
    const json& count = Field(s, "count");
    w.pod_set_counts.emplace_back(Str(s, "name"), count.is_number_integer() ? count.get<int32_t>() : 0);
  }
  const json& status = Field(object, "status");
  const json& conditions = Field(status, "conditions");
  if (conditions.is_array()) {
    w.raw_conditions = conditions;
    for (const json& c : conditions) {
      w.conditions.push_back({Str(c, "type"), Str(c, "status"), Str(c, "reason"),
                              Str(c, "message"), Str(c, "lastTransitionTime")});
    }
  }
  const json& admission = Field(status, "admission");
  if (!admission.is_null()) {
    StatusOr<Admission> decoded = DecodeAdmission(admission);
    if (!decoded.ok()) return decoded.status().WithContext("workload " + w.name);
    w.admission = std::move(decoded).value();
  }
  return w;
}

StatusOr<Flavor> DecodeFlavor(const json& object) {
  const json& spec = Field(object, "spec");
  Flavor f;
  LS_ASSIGN_OR_RETURN(f.node_labels, StringMap(Field(spec, "nodeLabels"), "spec.nodeLabels"));
  const json& tolerations = Field(spec, "tolerations");
  if (!tolerations.is_null() && !tolerations.is_array()) {
    return InvalidArgumentError("spec.tolerations is not a list");
  }
  if (tolerations.is_array()) f.tolerations = tolerations;
  return f;
}

}  // namespace lockstep::kueue
