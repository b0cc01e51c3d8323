#include "operator/controller/peer_loss.h"

#include <cstdio>

#include "common/enum_names.h"
#include "common/rfc3339.h"

namespace lockstep::controller {
namespace {

using Outcome = LossVerdict::Outcome;
using std::chrono::milliseconds;

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1fs", s);
  return buf;
}

double SecondsBetween(api::Time from, api::Time to) {
  return std::chrono::duration<double>(to - from).count();
}

// "node rank 1 (pod job-worker-1 on node n-3) lost by node 0's launcher in round 2 (silent):
// last heard 6.2s ago".
std::string DescribeReport(const protocol::LostMember& r, const std::string& node, api::Time now) {
  std::string out = "node rank " + std::to_string(r.node_rank) + " (pod " +
                    (r.pod_name.empty() ? "?" : r.pod_name) + " on node " + node +
                    ") lost by node 0's launcher in round " + std::to_string(r.round) + " (" +
                    (r.disconnected ? "connection closed" : "silent") + "; last heard " +
                    Seconds(SecondsBetween(FromUnixMs(r.last_heard_unix_ms), now)) + " ago)";
  return out;
}

LossVerdict Verdict(Outcome outcome, std::string node, std::string evidence) {
  LossVerdict v;
  v.outcome = outcome;
  v.node = std::move(node);
  v.evidence = std::move(evidence);
  return v;
}

std::optional<api::Time> RenewTime(const NodeSnapshot& n) {
  if (!n.lease || n.lease->renew_time.empty()) return std::nullopt;
  StatusOr<api::Time> t = ParseTime(n.lease->renew_time);
  if (!t.ok()) return std::nullopt;
  return *t;
}

// The Node's own signals (deleted, NotReady/Unknown, NoExecute): the signal name and evidence.
std::optional<std::pair<std::string, std::string>> NodeSignal(const NodeSnapshot& n) {
  if (!n.node)
    return std::make_pair(std::string("NodeDeleted"), std::string("its Node is deleted"));
  const kube::Node& node = *n.node;
  if (node.ready && (node.ready->status == "False" || node.ready->status == "Unknown")) {
    return std::make_pair(
        std::string(node.ready->status == "False" ? "NodeNotReady" : "NodeUnreachable"),
        "its Node reads Ready=" + node.ready->status);
  }
  for (const kube::Taint& t : node.taints) {
    if (t.effect == "NoExecute") {
      return std::make_pair(std::string("NodeTainted"),
                            "its Node has the taint " + t.key + ":" + t.effect);
    }
  }
  return std::nullopt;
}

// When P's launcher has stopped its ranks by itself, had it been alive (the header's Fencing).
api::Time FenceTime(const protocol::LostMember& r, const PeerLossOptions& o) {
  const api::Time lost = FromUnixMs(r.lost_unix_ms);
  if (r.disconnected) return lost + o.clock_skew;
  api::Time noticed = FromUnixMs(r.last_heard_unix_ms) + o.peer_timeout + o.heartbeat_interval;
  if (noticed < lost) noticed = lost;
  return noticed + o.clock_skew;
}

}  // namespace

std::string_view ToString(LossVerdict::Outcome o) {
  static constexpr NameTable<Outcome, 4> kNames = {{{Outcome::kCorroborated, "corroborated"},
                                                    {Outcome::kWaiting, "waiting"},
                                                    {Outcome::kNotCorroborated, "not_corroborated"},
                                                    {Outcome::kStale, "stale"}}};
  return NameOf(kNames, o, "not_corroborated");
}

api::Time FromUnixMs(uint64_t ms) {
  return api::Time(
      std::chrono::duration_cast<api::Time::duration>(milliseconds(static_cast<int64_t>(ms))));
}

LossVerdict CorroborateLoss(const LossEvidence& e, const PeerLossOptions& options) {
  const protocol::LostMember& r = e.report;
  // 1. Still about a running pod of this attempt on the node the report names.
  if (e.pod == nullptr) {
    return Verdict(Outcome::kStale, r.node_name,
                   "pod " + r.pod_name + " is not a pod of the current attempt");
  }
  const kube::Pod& pod = *e.pod;
  const std::string& node = pod.node_name;
  if (pod.IsTerminal() || pod.meta.deletion_timestamp) {
    return Verdict(Outcome::kStale, node,
                   "pod " + pod.meta.name + " already " +
                       (pod.IsTerminal() ? "ended (" + pod.phase + ")" : "is being deleted"));
  }
  if (!r.pod_uid.empty() && r.pod_uid != pod.meta.uid) {
    return Verdict(Outcome::kStale, node,
                   "the report is about an earlier pod " + pod.meta.name + " (uid " + r.pod_uid +
                       "), not the one of uid " + pod.meta.uid);
  }
  if (!r.node_name.empty() && r.node_name != node) {
    return Verdict(Outcome::kStale, node,
                   "the report names node " + r.node_name + " but pod " + pod.meta.name +
                       " is on node " + (node.empty() ? "(none)" : node));
  }
  const std::string report = DescribeReport(r, node, e.now);
  if (!e.node) {
    return Verdict(Outcome::kNotCorroborated, node, report + "; the node caches have not synced");
  }
  const std::optional<api::Time> renewed = RenewTime(*e.node);
  std::optional<double> lease_age;
  if (renewed) lease_age = SecondsBetween(*renewed, e.now);
  const std::string lease_text =
      renewed ? "its Lease was last renewed " + Seconds(*lease_age) + " ago" : "it has no Lease";

  // 2. An independent signal: the Node itself, or the probe and the Lease together.
  std::string signal, why;
  if (auto s = NodeSignal(*e.node)) {
    signal = s->first;
    why = s->second + "; " + lease_text;
  } else {
    switch (e.probe) {
      case ProbeResult::kUnknown: {
        LossVerdict v = Verdict(Outcome::kWaiting, node, report + "; probing pod " + pod.meta.name);
        v.lease_age_seconds = lease_age;
        return v;
      }
      case ProbeResult::kReachable: {
        LossVerdict v = Verdict(Outcome::kNotCorroborated, node,
                                report + "; but the operator reached pod " + pod.meta.name + " (" +
                                    e.probe_detail + ")");
        v.lease_age_seconds = lease_age;
        return v;
      }
      case ProbeResult::kUnreachable:
        break;
    }
    const api::Time last_heard = FromUnixMs(r.last_heard_unix_ms);
    const bool view_fresh = e.node->leases_fresh_since <= e.now;
    if (!renewed || !view_fresh || *renewed > last_heard + options.clock_skew) {
      LossVerdict v = Verdict(
          Outcome::kNotCorroborated, node,
          report + "; the operator cannot reach pod " + pod.meta.name + " (" + e.probe_detail +
              ") but " +
              (!renewed ? std::string("node " + node + " has no Lease to check")
               : !view_fresh
                   ? std::string("the operator's Lease view is not current")
                   : "node " + node + "'s " + lease_text + ", after the member was last heard"));
      v.lease_age_seconds = lease_age;
      return v;
    }
    signal = "LauncherUnreachable";
    why = "the operator cannot reach pod " + pod.meta.name + " either (" + e.probe_detail +
          ") and " + lease_text + ", not since the member was last heard";
  }
  LossVerdict v =
      Verdict(Outcome::kCorroborated, node, report + "; corroborated (" + signal + "): " + why);
  v.signal = signal;
  v.lease_age_seconds = lease_age;
  // 3. Fencing: not before P's launcher would have killed its ranks by itself.
  const api::Time fence = FenceTime(r, options);
  if (e.now < fence) {
    v.outcome = Outcome::kWaiting;
    v.act_at = fence;
  }
  return v;
}

}  // namespace lockstep::controller
