#include "operator/scheduler/cycle/volume_binding.h"

#include <set>

#include "operator/scheduler/cycle/volume_objects.h"

namespace lockstep::scheduler {

std::vector<VolumeWrite> VolumeWritesFor(const CollectedGang& gang, const Placement& placement,
                                         const VolumeCatalog& catalog) {
  std::vector<VolumeWrite> out;
  std::set<std::string> seen;
  for (const PodAssignment& a : placement.assignments) {
    const std::string& ns = gang.pods[a.role][a.replica]->meta.namespace_;
    for (const ClaimChoice& choice : a.volumes) {
      if (choice.prebound || !seen.insert(choice.claim).second) continue;
      auto claim = catalog.claims.find(ns + "/" + choice.claim);
      if (claim == catalog.claims.end()) continue;  // resolved from this catalog: never here
      VolumeWrite write{ns, choice.claim, claim->second.uid, choice.volume, "", choice.node};
      if (!choice.volume.empty()) {
        auto pv = catalog.volumes.find(choice.volume);
        if (pv != catalog.volumes.end()) write.volume_resource_version = pv->second.resource_version;
      } else if (claim->second.selected_node == choice.node) {
        continue;  // annotated for this node already
      }
      out.push_back(std::move(write));
    }
  }
  return out;
}

nlohmann::json VolumeWritePatch(const VolumeWrite& write) {
  if (write.volume.empty()) {
    return {{"metadata", {{"annotations", {{kSelectedNodeAnnotation, write.node}}}}}};
  }
  return {{"metadata",
           {{"resourceVersion", write.volume_resource_version},
            {"annotations", {{"pv.kubernetes.io/bound-by-controller", "yes"}}}}},
          {"spec",
           {{"claimRef",
             {{"apiVersion", "v1"},
              {"kind", "PersistentVolumeClaim"},
              {"namespace", write.claim_namespace},
              {"name", write.claim_name},
              {"uid", write.claim_uid}}}}}};
}

Status ApplyVolumeWrite(kube::RestClient& client, const VolumeWrite& write) {
  if (write.volume.empty()) {
    return client
        .MergePatch(PersistentVolumeClaims(), write.claim_namespace, write.claim_name,
                    VolumeWritePatch(write))
        .status();
  }
  return client.MergePatch(PersistentVolumes(), "", write.volume, VolumeWritePatch(write)).status();
}

std::string DescribeVolumeWrite(const VolumeWrite& write) {
  const std::string claim = write.claim_namespace + "/" + write.claim_name;
  if (write.volume.empty()) return "asked to provision claim " + claim + " on node " + write.node;
  return "pre-bound PV " + write.volume + " to claim " + claim;
}

}  // namespace lockstep::scheduler
