#pragma once
// What a pod's PersistentVolumeClaims ask of its node, as placement sees them (issue 41 item 1):
// plain data, resolved by volumes.h from the cluster's claims, PersistentVolumes and
// StorageClasses before a cycle places the gang; the rules that use it are volumes.h's.

#include <string>
#include <vector>

#include "operator/scheduler/pod_terms.h"

namespace lockstep::scheduler {

// One node selector term; terms are ORed, expressions in a term ANDed (feasibility.h).
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  std::vector<NodeSelectorRequirement> match_fields;
  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

// A free PersistentVolume an unbound WaitForFirstConsumer claim may be bound to.
struct VolumeCandidate {
  std::string name;
  std::vector<NodeSelectorTerm> node_affinity;  // ORed; empty = every node
  bool prebound = false;  // its claimRef names this claim already (the only candidate then)
  friend bool operator==(const VolumeCandidate&, const VolumeCandidate&) = default;
};

enum class ClaimState {
  kWaiting,  // cannot be placed anywhere now (`waiting` says why)
  kBound,    // bound to `volume`: the pod goes where the volume's node affinity allows
  kUnbound,  // WaitForFirstConsumer and unbound: a candidate PV per node, or provisioning
};

// One claim of a pod (a `persistentVolumeClaim` volume, or the `<pod>-<volume>` claim of a
// generic ephemeral volume), in the pod's namespace.
struct ClaimNeed {
  std::string claim;       // the claim's name
  std::string class_name;  // its storage class ("" = none)
  ClaimState state = ClaimState::kWaiting;
  std::string waiting;  // kWaiting: why, e.g. "unbound, and class fast binds Immediate..."
  // kBound: the volume and its node affinity.
  std::string volume;
  std::vector<NodeSelectorTerm> node_affinity;
  // kUnbound: the free PVs that match it (class, capacity, access and volume modes, selector),
  // smallest first, as kube-scheduler prefers; a node may use the first one its affinity allows.
  std::vector<VolumeCandidate> candidates;
  // kUnbound: the class may provision a volume (its provisioner is not
  // kubernetes.io/no-provisioner) on nodes its allowedTopologies admit (ORed; empty = any).
  bool provision = false;
  std::vector<NodeSelectorTerm> allowed_topologies;
  // kUnbound: volume.kubernetes.io/selected-node is set already: provisioning has started
  // for that node, so only that node will do.
  std::string selected_node;
  friend bool operator==(const ClaimNeed&, const ClaimNeed&) = default;
};

// Where one unbound claim goes on the node chosen for its pod: the PV to pre-bind, or "" for
// dynamic provisioning there (the selected-node annotation).
struct ClaimChoice {
  std::string claim;
  std::string volume;  // "" = provision on `node`
  std::string node;
  bool prebound = false;  // the PV's claimRef names the claim already: nothing to write
  friend bool operator==(const ClaimChoice&, const ClaimChoice&) = default;
};

}  // namespace lockstep::scheduler
