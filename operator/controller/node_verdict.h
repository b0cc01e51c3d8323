#pragma once
// What the failure detector says about one node (node_health.h judges it, silence_guard.h may
// hold it). A header of its own so that both can use it without including each other.

#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

struct NodeVerdict {
  bool lost = false;
  // CamelCase: NodeDeleted, NodeNotReady, NodeUnreachable (Ready=Unknown), NodeTainted,
  // NodeLeaseExpired, NodeCordoned.
  std::string reason;
  // Names the node and the evidence: "node gpu-node-3: lease not renewed for 23s".
  std::string message;
  // Best estimate of when the node failed (the last lease renewal, the Ready transition, the
  // taint's timeAdded); unset when unknown. Detection delay = detection time - this.
  std::optional<api::Time> failed_at;
  // The lost node's NoExecute taints, whatever the reason: the taint-eviction controller deletes
  // the pods there that do not tolerate them, by name (restart_plan.cc leaves those pods to it).
  std::vector<kube::Taint> no_execute_taints;
};

}  // namespace lockstep::controller
