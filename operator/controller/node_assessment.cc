#include "operator/controller/node_assessment.h"

#include <algorithm>

namespace lockstep::controller {
namespace {

// A Lease's renewTime is a MicroTime: ParseTime keeps its microseconds.
std::optional<api::Time> ParseOptionalTime(const std::string& text) {
  if (text.empty()) return std::nullopt;
  StatusOr<api::Time> t = kube::ParseTime(text);
  if (!t.ok()) return std::nullopt;
  return *t;
}

NodeVerdict Lost(const std::string& name, std::string reason, const std::string& evidence,
                 std::optional<api::Time> failed_at) {
  NodeVerdict v;
  v.lost = true;
  v.reason = std::move(reason);
  v.message = "node " + name + ": " + evidence;
  v.failed_at = failed_at;
  return v;
}

// "Ready=False (KubeletNotReady: container runtime down)", dropping empty parts.
std::string ReadyEvidence(const kube::Condition& ready) {
  std::string out = "Ready=" + ready.status;
  std::string why = ready.reason;
  if (!ready.message.empty()) why += (why.empty() ? "" : ": ") + ready.message;
  if (!why.empty()) out += " (" + why + ")";
  return out;
}

std::string TaintText(const kube::Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
}

// AssessNode's verdict before the taints are attached.
NodeVerdict Judge(const std::string& name, const kube::Node* node, const kube::Lease* lease,
                  api::Time now, const NodeHealthOptions& options, api::Time leases_fresh_since) {
  // 1. Gone: nothing left to run on.
  if (node == nullptr) return Lost(name, "NodeDeleted", "deleted", std::nullopt);
  const std::optional<api::Time> renewed =
      lease != nullptr ? ParseOptionalTime(lease->renew_time) : std::nullopt;

  const bool lease_expired = renewed && leases_fresh_since <= now &&
                             now - std::max(*renewed, leases_fresh_since) > options.lease_grace;

  // 2. The kubelet (or the node controller on its behalf) says NotReady / Unknown. When the
  // heartbeat also stopped before the condition flipped (the node controller marks Unknown
  // 40 s after the lease stopped), the node died at its last renewal; a live kubelet reporting
  // NotReady keeps renewing, and then the flip itself is the failure.
  if (node->ready && (node->ready->status == "False" || node->ready->status == "Unknown")) {
    std::optional<api::Time> failed_at = ParseOptionalTime(node->ready->last_transition_time);
    if (lease_expired && (!failed_at || *renewed < *failed_at)) failed_at = renewed;
    return Lost(name, node->ready->status == "False" ? "NodeNotReady" : "NodeUnreachable",
                ReadyEvidence(*node->ready), failed_at);
  }

  // 3. A NoExecute taint evicts pods that do not tolerate it; the gang cannot wait for that.
  for (const kube::Taint& taint : node->taints) {
    if (taint.effect != "NoExecute") continue;
    return Lost(name, "NodeTainted", "tainted " + TaintText(taint),
                ParseOptionalTime(taint.time_added));
  }

  // 4. Heartbeat: the Lease is the only signal of a kubelet that died silently.
  if (lease_expired) {
    const auto silent = std::chrono::duration_cast<std::chrono::seconds>(
        now - std::max(*renewed, leases_fresh_since));
    return Lost(name, "NodeLeaseExpired",
                "lease not renewed for " + std::to_string(silent.count()) + "s", renewed);
  }

  // 5. Cordoned: a drain is coming; restart off the node now only when asked to.
  if (options.restart_on_cordon && node->unschedulable) {
    std::optional<api::Time> failed_at;
    for (const kube::Taint& taint : node->taints) {
      if (taint.key == "node.kubernetes.io/unschedulable") {
        failed_at = ParseOptionalTime(taint.time_added);
      }
    }
    return Lost(name, "NodeCordoned", "cordoned", failed_at);
  }
  return NodeVerdict{};
}

}  // namespace

bool MarkedByTaintEviction(const kube::Pod& pod) {
  const kube::Condition* c = pod.FindCondition("DisruptionTarget");
  return c != nullptr && c->status == "True" && c->reason == "DeletionByTaintManager";
}

NodeVerdict TaintEvictionVerdict(const kube::Pod& pod) {
  if (pod.node_name.empty() || !MarkedByTaintEviction(pod)) return {};
  const kube::Condition* c = pod.FindCondition("DisruptionTarget");
  NodeVerdict v;
  v.lost = true;
  v.reason = "NodeTainted";
  v.message = "node " + pod.node_name + ": the taint manager is deleting pod " + pod.meta.name +
              " for a NoExecute taint" + (c->message.empty() ? "" : " (" + c->message + ")");
  return v;
}

std::optional<api::Time> LeaseDeadline(const kube::Lease& lease, const NodeHealthOptions& options,
                                       api::Time silence_counts_from) {
  std::optional<api::Time> renewed = ParseOptionalTime(lease.renew_time);
  if (!renewed) return std::nullopt;
  return std::max(*renewed, silence_counts_from) + options.lease_grace;
}

std::chrono::nanoseconds NextTickDelay(api::Time now, const std::vector<api::Time>& deadlines,
                                       std::chrono::nanoseconds tick,
                                       std::chrono::nanoseconds coalesce) {
  std::chrono::nanoseconds delay = tick;
  for (const api::Time deadline : deadlines) {
    if (deadline < now) continue;
    delay = std::min(
        delay, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - now) + coalesce);
  }
  return delay;
}

NodeVerdict AssessNode(const std::string& name, const kube::Node* node, const kube::Lease* lease,
                       api::Time now, const NodeHealthOptions& options,
                       api::Time leases_fresh_since) {
  NodeVerdict v = Judge(name, node, lease, now, options, leases_fresh_since);
  if (v.lost && node != nullptr) {
    for (const kube::Taint& taint : node->taints) {
      if (taint.effect == "NoExecute") v.no_execute_taints.push_back(taint);
    }
  }
  return v;
}

}  // namespace lockstep::controller
