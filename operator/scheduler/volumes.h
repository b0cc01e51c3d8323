#pragma once
// PersistentVolumeClaims with kube-scheduler's VolumeBinding semantics, as pure rules (issue 41
// item 1). Lockstep binds its pods itself, so kube-scheduler's VolumeBinding plugin never runs
// for them; these rules do its part:
//  - a bound claim (spec.volumeName set) restricts the pod to the nodes its PV's node affinity
//    admits; a PV missing from the cache is a wait;
//  - an unbound claim of an Immediate class (or of no class) is the PV controller's to bind: the
//    pod waits, as kube-scheduler's "pod has unbound immediate PersistentVolumeClaims";
//  - an unbound WaitForFirstConsumer claim is bound for the node the pod gets: to a free PV
//    that matches it (class, capacity >= request, access modes a superset, volume mode,
//    selector, node affinity admits the node; the smallest first; a PV whose claimRef names the
//    claim is its only candidate), each PV chosen once; else, when its class has a provisioner
//    other than kubernetes.io/no-provisioner, provisioned on any node the class's
//    allowedTopologies admit; a claim with volume.kubernetes.io/selected-node already set goes
//    to that node only;
//  - a missing claim waits (a generic ephemeral volume's claim `<pod>-<volume>` is created by
//    the ephemeral volume controller once the pod exists), as does a claim being deleted.
// Pure functions, thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/scheduler/node_info.h"
#include "operator/scheduler/volume_terms.h"

namespace lockstep::scheduler {

inline constexpr char kNoProvisioner[] = "kubernetes.io/no-provisioner";
inline constexpr char kSelectedNodeAnnotation[] = "volume.kubernetes.io/selected-node";

enum class VolumeBindingMode { kImmediate, kWaitForFirstConsumer };

struct StorageClassInfo {
  std::string name;
  std::string provisioner;
  VolumeBindingMode mode = VolumeBindingMode::kImmediate;
  std::vector<NodeSelectorTerm> allowed_topologies;  // ORed; empty = every node
};

// A PersistentVolume.
struct VolumeInfo {
  std::string name;
  std::string resource_version;  // the pre-bind's precondition
  std::string storage_class;     // "" = none
  int64_t capacity = 0;          // bytes
  std::vector<std::string> access_modes;
  std::string volume_mode = "Filesystem";
  Labels labels;
  std::vector<NodeSelectorTerm> node_affinity;  // required terms, ORed; empty = every node
  std::string claim_namespace;                  // spec.claimRef; empty name = free
  std::string claim_name;
  std::string claim_uid;
  bool deleting = false;
};

// A PersistentVolumeClaim.
struct ClaimInfo {
  std::string namespace_;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::optional<std::string> storage_class;  // nullopt: none named (then "" as kube reads it)
  std::string volume_name;                   // spec.volumeName
  int64_t request = 0;                       // bytes
  std::vector<std::string> access_modes;
  std::string volume_mode = "Filesystem";
  std::optional<LabelSelector> selector;  // nullopt: every PV
  std::string selected_node;              // the selected-node annotation
  bool deleting = false;
};

// The claims, PVs and classes one cycle sees; keys: "namespace/name", name, name.
struct VolumeCatalog {
  std::map<std::string, ClaimInfo> claims;
  std::map<std::string, VolumeInfo> volumes;
  std::map<std::string, StorageClassInfo> classes;
};

// One claim a pod names: a persistentVolumeClaim volume, or a generic ephemeral volume's claim.
struct PodClaimRef {
  std::string claim;
  bool ephemeral = false;
};

// The need of one claim of a pod in `namespace_` (see the file comment).
ClaimNeed ResolveClaim(const std::string& namespace_, const PodClaimRef& ref,
                       const VolumeCatalog& catalog);

// Whether `need` can be met on `node`: the choice for an unbound claim (the first candidate PV
// the node admits and `taken` does not hold, else provisioning), an empty choice for a bound
// claim, nullopt when it cannot. `earlier`: this claim's choice for an earlier pod of the gang
// (a claim shared by several pods): then only that choice's volume, or node, will do.
std::optional<ClaimChoice> FitClaim(const ClaimNeed& need, const NodeInfo& node,
                                    const std::function<bool(const std::string&)>& taken,
                                    const ClaimChoice* earlier);

// Why `need` fits none of `candidate_nodes` nodes that pass every other check, e.g.
// "claim data-0 (class local-storage): no free PV matches it on 3 candidate nodes".
std::string DescribeClaimMiss(const ClaimNeed& need, int64_t candidate_nodes);

// "claim x (class c)" / "claim x (no class)".
std::string ClaimLabel(const ClaimNeed& need);

}  // namespace lockstep::scheduler
