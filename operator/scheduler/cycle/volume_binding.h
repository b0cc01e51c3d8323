#pragma once
// What the scheduler writes for a placed gang's unbound WaitForFirstConsumer claims before it
// binds the pods (issue 41 item 1), as kube-scheduler's VolumeBinding PreBind does:
//  - a chosen PV is pre-bound: its spec.claimRef names the claim (and
//    pv.kubernetes.io/bound-by-controller: "yes"), by a merge patch that carries the cached
//    resourceVersion, so two schedulers (or two gangs) never both take one PV: the loser gets a
//    Conflict and its gang is retried. The PV controller then binds the claim to it.
//  - a claim to provision gets volume.kubernetes.io/selected-node: <node>; the PV controller
//    and the class's provisioner make the volume there.
// The kubelet waits for the claim to be bound before it starts the pod. Writes already made for
// a gang whose later write or bind fails are not undone: a pre-bound PV stays the claim's (the
// claim still exists, or the PV controller releases it when it is gone), an annotated claim is
// provisioned where the gang will most likely be placed again.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/placement.h"
#include "operator/scheduler/volumes.h"

namespace lockstep::scheduler {

struct VolumeWrite {
  std::string claim_namespace;
  std::string claim_name;
  std::string claim_uid;
  std::string volume;                   // the PV to pre-bind; "" = select `node` for provisioning
  std::string volume_resource_version;  // its cached version: the patch's precondition
  std::string node;
  friend bool operator==(const VolumeWrite&, const VolumeWrite&) = default;
};

// The writes a placement needs, once per claim, in gang order; none for a PV already pre-bound
// to its claim or a claim already annotated for that node.
std::vector<VolumeWrite> VolumeWritesFor(const CollectedGang& gang, const Placement& placement,
                                         const VolumeCatalog& catalog);

// The merge patch of the PV (pre-bind) or the claim (selected node).
nlohmann::json VolumeWritePatch(const VolumeWrite& write);

Status ApplyVolumeWrite(kube::RestClient& client, const VolumeWrite& write);

// "pre-bound PV pv-1 to claim ns/data-0" / "asked to provision claim ns/data-0 on node n1".
std::string DescribeVolumeWrite(const VolumeWrite& write);

}  // namespace lockstep::scheduler
