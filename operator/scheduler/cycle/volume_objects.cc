#include "operator/scheduler/cycle/volume_objects.h"

#include <string>

#include "common/quantity.h"
#include "operator/kube/json_lookup.h"
#include "operator/scheduler/cycle/convert.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;

using kube::Field;
using kube::Str;

std::vector<std::string> Strings(const json& j) {
  std::vector<std::string> out;
  if (!j.is_array()) return out;
  for (const json& v : j) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<kube::NodeSelectorRequirement> Requirements(const json& list, const char* op_key,
                                                        const char* default_op) {
  std::vector<kube::NodeSelectorRequirement> out;
  if (!list.is_array()) return out;
  for (const json& r : list) {
    const std::string op = Str(r, op_key);
    out.push_back({Str(r, "key"), op.empty() ? default_op : op, Strings(Field(r, "values"))});
  }
  return out;
}

// nodeSelectorTerms (PV node affinity): expressions and fields.
std::vector<NodeSelectorTerm> Terms(const json& terms) {
  std::vector<NodeSelectorTerm> out;
  if (!terms.is_array()) return out;
  for (const json& t : terms) {
    out.push_back({ConvertRequirements(Requirements(Field(t, "matchExpressions"), "operator", "")),
                   ConvertRequirements(Requirements(Field(t, "matchFields"), "operator", ""))});
  }
  return out;
}

// A StorageClass's allowedTopologies: TopologySelectorTerms of `key In values` requirements.
std::vector<NodeSelectorTerm> TopologyTerms(const json& terms) {
  std::vector<NodeSelectorTerm> out;
  if (!terms.is_array()) return out;
  for (const json& t : terms) {
    out.push_back(
        // A TopologySelectorLabelRequirement has no operator: it is always In.
        {ConvertRequirements(Requirements(Field(t, "matchLabelExpressions"), "-", "In")), {}});
  }
  return out;
}

StatusOr<int64_t> Bytes(const json& list, const char* name) {
  const json& v = Field(list, name);
  if (v.is_null()) return 0;
  if (!v.is_string()) return InvalidArgumentError(std::string(name) + " is not a quantity");
  return ParseQuantity(v.get<std::string>());
}

std::string VolumeMode(const json& spec) {
  const std::string mode = Str(spec, "volumeMode");
  return mode.empty() ? "Filesystem" : mode;
}

template <typename T, typename Fn>
StatusOr<T> Guarded(const json& object, Fn&& fn) {
  try {
    LS_ASSIGN_OR_RETURN(kube::ObjectMeta meta, kube::DecodeObjectMeta(object));
    return fn(std::move(meta));
  } catch (const std::exception& e) {
    return InvalidArgumentError(std::string("cannot decode: ") + e.what());
  }
}

}  // namespace

StatusOr<ClaimObject> DecodeClaim(const json& object) {
  return Guarded<ClaimObject>(object, [&](kube::ObjectMeta meta) -> StatusOr<ClaimObject> {
    const json& spec = Field(object, "spec");
    ClaimObject out;
    ClaimInfo& c = out.info;
    c.namespace_ = meta.namespace_;
    c.name = meta.name;
    c.uid = meta.uid;
    c.resource_version = meta.resource_version;
    if (Field(spec, "storageClassName").is_string()) c.storage_class = Str(spec, "storageClassName");
    c.volume_name = Str(spec, "volumeName");
    LS_ASSIGN_OR_RETURN(c.request, Bytes(Field(Field(spec, "resources"), "requests"), "storage"));
    c.access_modes = Strings(Field(spec, "accessModes"));
    c.volume_mode = VolumeMode(spec);
    const json& selector = Field(spec, "selector");
    if (selector.is_object()) {
      kube::LabelSelector s;
      for (const auto& [k, v] : Field(selector, "matchLabels").items()) {
        if (v.is_string()) s.match_labels[k] = v.get<std::string>();
      }
      s.match_expressions = Requirements(Field(selector, "matchExpressions"), "operator", "");
      c.selector = ConvertSelector(s);
    }
    if (auto it = meta.annotations.find(kSelectedNodeAnnotation); it != meta.annotations.end()) {
      c.selected_node = it->second;
    }
    c.deleting = meta.deletion_timestamp.has_value();
    out.meta = std::move(meta);
    return out;
  });
}

StatusOr<VolumeObject> DecodeVolume(const json& object) {
  return Guarded<VolumeObject>(object, [&](kube::ObjectMeta meta) -> StatusOr<VolumeObject> {
    const json& spec = Field(object, "spec");
    VolumeObject out;
    VolumeInfo& v = out.info;
    v.name = meta.name;
    v.resource_version = meta.resource_version;
    v.storage_class = Str(spec, "storageClassName");
    LS_ASSIGN_OR_RETURN(v.capacity, Bytes(Field(spec, "capacity"), "storage"));
    v.access_modes = Strings(Field(spec, "accessModes"));
    v.volume_mode = VolumeMode(spec);
    v.labels = {meta.labels.begin(), meta.labels.end()};
    v.node_affinity = Terms(Field(Field(Field(spec, "nodeAffinity"), "required"),
                                  "nodeSelectorTerms"));
    const json& ref = Field(spec, "claimRef");
    v.claim_namespace = Str(ref, "namespace");
    v.claim_name = Str(ref, "name");
    v.claim_uid = Str(ref, "uid");
    v.deleting = meta.deletion_timestamp.has_value();
    out.meta = std::move(meta);
    return out;
  });
}

StatusOr<StorageClassObject> DecodeStorageClass(const json& object) {
  return Guarded<StorageClassObject>(
      object, [&](kube::ObjectMeta meta) -> StatusOr<StorageClassObject> {
        StorageClassObject out;
        StorageClassInfo& s = out.info;
        s.name = meta.name;
        s.provisioner = Str(object, "provisioner");
        s.mode = Str(object, "volumeBindingMode") == "WaitForFirstConsumer"
                     ? VolumeBindingMode::kWaitForFirstConsumer
                     : VolumeBindingMode::kImmediate;
        s.allowed_topologies = TopologyTerms(Field(object, "allowedTopologies"));
        out.meta = std::move(meta);
        return out;
      });
}

VolumeCatalog BuildCatalog(const std::vector<std::shared_ptr<const ClaimObject>>& claims,
                           const std::vector<std::shared_ptr<const VolumeObject>>& volumes,
                           const std::vector<std::shared_ptr<const StorageClassObject>>& classes) {
  VolumeCatalog catalog;
  for (const auto& c : claims) catalog.claims.emplace(c->meta.Key(), c->info);
  for (const auto& v : volumes) catalog.volumes.emplace(v->meta.name, v->info);
  for (const auto& s : classes) catalog.classes.emplace(s->meta.name, s->info);
  return catalog;
}

bool HasVolumeClaims(const kube::Pod& pod) {
  return pod.placement_terms != nullptr && !pod.placement_terms->volume_claims.empty();
}

void ResolveGangVolumes(CollectedGang& gang, const VolumeCatalog& catalog) {
  for (size_t r = 0; r < gang.pods.size(); ++r) {
    for (size_t i = 0; i < gang.pods[r].size(); ++i) {
      const kube::Pod& pod = *gang.pods[r][i];
      PodRequest& request = gang.request.roles[r].pods[i];
      request.volumes.clear();
      if (!HasVolumeClaims(pod)) continue;
      for (const kube::PodVolumeClaim& claim : pod.placement_terms->volume_claims) {
        request.volumes.push_back(
            ResolveClaim(pod.meta.namespace_, {claim.claim, claim.ephemeral}, catalog));
      }
    }
  }
}

}  // namespace lockstep::scheduler
