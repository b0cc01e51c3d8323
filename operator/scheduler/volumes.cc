#include "operator/scheduler/volumes.h"

#include <algorithm>
#include <utility>

#include "operator/scheduler/feasibility.h"
#include "operator/scheduler/pod_constraints.h"

namespace lockstep::scheduler {
namespace {

bool HasModes(const std::vector<std::string>& offered, const std::vector<std::string>& wanted) {
  return std::all_of(wanted.begin(), wanted.end(), [&](const std::string& mode) {
    return std::find(offered.begin(), offered.end(), mode) != offered.end();
  });
}

bool PreboundTo(const VolumeInfo& pv, const ClaimInfo& claim) {
  return pv.claim_name == claim.name && pv.claim_namespace == claim.namespace_ &&
         (pv.claim_uid.empty() || pv.claim_uid == claim.uid);
}

// kube-scheduler's FindMatchingVolume without the node: what a free PV must offer the claim.
bool Matches(const VolumeInfo& pv, const ClaimInfo& claim, const std::string& class_name) {
  return !pv.deleting && pv.claim_name.empty() && pv.storage_class == class_name &&
         pv.capacity >= claim.request && pv.volume_mode == claim.volume_mode &&
         HasModes(pv.access_modes, claim.access_modes) &&
         (!claim.selector || MatchesLabelSelector(*claim.selector, pv.labels));
}

ClaimNeed Waiting(ClaimNeed need, std::string why) {
  need.state = ClaimState::kWaiting;
  need.waiting = std::move(why);
  return need;
}

// Free PVs matching the claim, smallest first (then by name); a PV pre-bound to the claim alone.
std::vector<VolumeCandidate> Candidates(const ClaimInfo& claim, const std::string& class_name,
                                        const VolumeCatalog& catalog) {
  std::vector<std::pair<int64_t, const VolumeInfo*>> found;
  for (const auto& [name, pv] : catalog.volumes) {
    if (!pv.deleting && PreboundTo(pv, claim)) return {{pv.name, pv.node_affinity, true}};
    if (Matches(pv, claim, class_name)) found.emplace_back(pv.capacity, &pv);
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<VolumeCandidate> out;
  out.reserve(found.size());
  for (const auto& [capacity, pv] : found) out.push_back({pv->name, pv->node_affinity, false});
  return out;
}

}  // namespace

std::string ClaimLabel(const ClaimNeed& need) {
  return "claim " + need.claim +
         (need.class_name.empty() ? std::string(" (no class)") : " (class " + need.class_name + ")");
}

ClaimNeed ResolveClaim(const std::string& namespace_, const PodClaimRef& ref,
                       const VolumeCatalog& catalog) {
  ClaimNeed need;
  need.claim = ref.claim;
  auto it = catalog.claims.find(namespace_ + "/" + ref.claim);
  if (it == catalog.claims.end()) {
    return Waiting(std::move(need),
                   ref.ephemeral ? "not created yet (the ephemeral volume controller creates a "
                                   "generic ephemeral volume's claim once the pod exists)"
                                 : "not found");
  }
  const ClaimInfo& claim = it->second;
  need.class_name = claim.storage_class.value_or("");
  if (claim.deleting) return Waiting(std::move(need), "is being deleted");
  if (!claim.volume_name.empty()) {
    auto pv = catalog.volumes.find(claim.volume_name);
    if (pv == catalog.volumes.end()) {
      return Waiting(std::move(need),
                     "bound to volume " + claim.volume_name + ", which does not exist");
    }
    need.state = ClaimState::kBound;
    need.volume = claim.volume_name;
    need.node_affinity = pv->second.node_affinity;
    return need;
  }
  if (need.class_name.empty()) {
    return Waiting(std::move(need), "unbound and of no storage class: the PV controller binds it");
  }
  auto cls = catalog.classes.find(need.class_name);
  if (cls == catalog.classes.end()) {
    return Waiting(std::move(need), "storage class " + need.class_name + " not found");
  }
  if (cls->second.mode == VolumeBindingMode::kImmediate) {
    return Waiting(std::move(need),
                   "unbound, and its class binds Immediate: the PV controller (or the class's "
                   "provisioner) binds it first");
  }
  need.state = ClaimState::kUnbound;
  need.selected_node = claim.selected_node;
  need.candidates = Candidates(claim, need.class_name, catalog);
  // kube-scheduler refuses to provision for a claim with a selector.
  need.provision = !cls->second.provisioner.empty() &&
                   cls->second.provisioner != kNoProvisioner && !claim.selector;
  need.allowed_topologies = cls->second.allowed_topologies;
  if (need.candidates.empty() && !need.provision) {
    return Waiting(std::move(need), std::string("no free PV matches it and its class cannot "
                                                "provision one (") +
                                        (claim.selector ? "the claim has a selector"
                                                        : "provisioner " + cls->second.provisioner) +
                                        ")");
  }
  return need;
}

std::optional<ClaimChoice> FitClaim(const ClaimNeed& need, const NodeInfo& node,
                                    const std::function<bool(const std::string&)>& taken,
                                    const ClaimChoice* earlier) {
  switch (need.state) {
    case ClaimState::kWaiting:
      return std::nullopt;
    case ClaimState::kBound:
      if (!MatchesRequiredAffinity(need.node_affinity, node)) return std::nullopt;
      return ClaimChoice{};  // nothing to choose or write
    case ClaimState::kUnbound:
      break;
  }
  const bool provisionable =
      need.provision && MatchesRequiredAffinity(need.allowed_topologies, node);
  if (earlier != nullptr) {  // the claim is shared with an earlier pod of the gang
    if (earlier->volume.empty()) {
      if (node.name != earlier->node) return std::nullopt;
      return *earlier;
    }
    for (const VolumeCandidate& c : need.candidates) {
      if (c.name == earlier->volume && MatchesRequiredAffinity(c.node_affinity, node)) {
        return *earlier;
      }
    }
    return std::nullopt;
  }
  if (!need.selected_node.empty()) {  // provisioning started for that node
    if (node.name != need.selected_node || !provisionable) return std::nullopt;
    return ClaimChoice{need.claim, "", node.name, false};
  }
  for (const VolumeCandidate& c : need.candidates) {
    if (!c.prebound && taken && taken(c.name)) continue;
    if (MatchesRequiredAffinity(c.node_affinity, node)) {
      return ClaimChoice{need.claim, c.name, node.name, c.prebound};
    }
  }
  // A PV pre-bound to the claim is its only volume: nothing else, nothing provisioned.
  if (!need.candidates.empty() && need.candidates.front().prebound) return std::nullopt;
  if (provisionable) return ClaimChoice{need.claim, "", node.name, false};
  return std::nullopt;
}

std::string DescribeClaimMiss(const ClaimNeed& need, int64_t candidate_nodes) {
  const std::string label = ClaimLabel(need);
  const std::string nodes = std::to_string(candidate_nodes) + " candidate node" +
                            (candidate_nodes == 1 ? "" : "s");
  switch (need.state) {
    case ClaimState::kWaiting:
      return label + ": " + need.waiting;
    case ClaimState::kBound:
      return label + ": its volume " + need.volume + "'s node affinity admits none of " + nodes;
    case ClaimState::kUnbound:
      break;
  }
  if (!need.selected_node.empty()) {
    return label + ": provisioning started for node " + need.selected_node + " (" +
           kSelectedNodeAnnotation + "), not one of " + nodes;
  }
  if (!need.candidates.empty() && need.candidates.front().prebound) {
    return label + ": its pre-bound volume " + need.candidates.front().name +
           "'s node affinity admits none of " + nodes;
  }
  if (need.provision) {
    return label + ": no free PV matching it, and none its class's allowedTopologies admit, on " +
           nodes;
  }
  return label + ": no free PV matching it on " + nodes;
}

}  // namespace lockstep::scheduler
