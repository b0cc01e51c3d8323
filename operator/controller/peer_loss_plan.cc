#include "operator/controller/peer_loss_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "operator/api/ranks.h"
#include "operator/controller/peer_loss.h"
#include "operator/controller/restart_plan.h"
#include "protocol/contract.h"

namespace lockstep::controller {
namespace {

using LossOutcome = LossVerdict::Outcome;
using std::chrono::seconds;

// What the pass looks a report up in, built once (O(pods + serving)), so that L lost members cost
// O(L), not O(L x pods): a hostile worker-0 may report every node-rank of a large job lost on
// every poll.
class ReportIndex {
 public:
  explicit ReportIndex(const Pass& p) : p_(p) {
    pods_.reserve(p.pods.size());
    for (const kube::Pod& pod : p.pods) pods_.emplace(pod.meta.name, &pod);
    for (const protocol::SpareServing& s : p.observed.launchers->status.serving) {
      auto [it, added] = newest_serving_.emplace(s.node_rank, s.round);
      if (!added) it->second = std::max(it->second, s.round);
    }
  }
  // P: the current attempt's pod the report names (by its name, else by its node rank's slot).
  const kube::Pod* ReportedPod(const protocol::LostMember& m) {
    if (!m.pod_name.empty()) return Find(m.pod_name);
    if (!slots_) slots_ = api::PodSlots(p_.spec, p_.spec.replicas);  // once, when a name lacks
    if (m.node_rank >= slots_->size()) return nullptr;
    const api::PodSlot& slot = (*slots_)[m.node_rank];
    return Find(api::PodName(p_.job.metadata.name, slot.role, slot.index));
  }
  // CoveredBySpare, by the index: a spare serves the node-rank from a round after the loss's.
  bool Covered(const protocol::LostMember& m) const {
    auto it = newest_serving_.find(m.node_rank);
    return it != newest_serving_.end() && it->second > m.round;
  }

 private:
  const kube::Pod* Find(std::string_view name) const {
    auto it = pods_.find(name);
    return it == pods_.end() ? nullptr : it->second;
  }
  const Pass& p_;
  std::unordered_map<std::string_view, const kube::Pod*> pods_;  // by name; first one wins
  std::unordered_map<uint32_t, uint32_t> newest_serving_;        // node-rank -> latest round served
  std::optional<std::vector<api::PodSlot>> slots_;
};

// The evidence CorroborateLoss judges; asks for a probe when this report has none yet.
LossEvidence Gather(Pass& p, ReportIndex& index, const LauncherObservation& obs,
                    const protocol::LostMember& m) {
  LossEvidence e;
  e.report = m;
  e.pod = index.ReportedPod(m);
  e.now = p.now;
  if (e.pod == nullptr) return e;
  auto node = p.observed.peer_loss_nodes.find(e.pod->node_name);
  if (node != p.observed.peer_loss_nodes.end()) e.node = node->second;
  auto probe = obs.probes.find(e.pod->meta.name);
  if (probe != obs.probes.end() && probe->second.report_lost_unix_ms == m.lost_unix_ms) {
    e.probe = probe->second.answer.result;
    e.probe_detail = probe->second.answer.detail;
  } else if (!e.pod->pod_ip.empty() && !e.pod->IsTerminal()) {
    p.plan->launcher_probes.push_back({e.pod->meta.name, e.pod->pod_ip, m.lost_unix_ms});
  }
  return e;
}

void Restart(Pass& p, const std::vector<std::pair<protocol::LostMember, LossVerdict>>& lost) {
  RestartRequest r;
  r.kind = RestartRequest::Kind::kDisruption;
  r.reason = kReasonPeerReportedLost;
  std::set<std::string> nodes;  // sorted, each once
  for (const auto& [m, v] : lost) {
    r.message += (r.message.empty() ? "" : "; ") + v.evidence;
    nodes.insert(v.node);
    const api::Time heard = FromUnixMs(m.last_heard_unix_ms);
    if (!r.failed_at || heard < *r.failed_at) r.failed_at = heard;
  }
  r.lost_nodes.assign(nodes.begin(), nodes.end());
  PlanRestart(p, r, p.pods);
}

}  // namespace

namespace {

// A launcher timing the user set in a trainer's env (the operator leaves these to the launcher's
// defaults, so a template may set them: MergeEnv keeps them): the longest one over every
// template, since any pod may be the lost one. Unparsable values are skipped (the launcher
// refuses to start with them anyway).
std::optional<std::chrono::milliseconds> TemplateSeconds(const api::TrainingJobSpec& spec,
                                                         std::string_view name) {
  std::optional<std::chrono::milliseconds> longest;
  const auto scan = [&](const nlohmann::json& tmpl) {
    const nlohmann::json* containers = nullptr;
    if (tmpl.contains("spec") && tmpl["spec"].contains("containers")) {
      containers = &tmpl["spec"]["containers"];
    }
    if (containers == nullptr || !containers->is_array() || containers->empty()) return;
    const nlohmann::json& env = (*containers)[0].value("env", nlohmann::json::array());
    if (!env.is_array()) return;
    for (const nlohmann::json& e : env) {
      if (!e.is_object() || e.value("name", "") != name || !e.contains("value") ||
          !e["value"].is_string()) {
        continue;
      }
      char* end = nullptr;
      const std::string v = e["value"].get<std::string>();
      const double secs = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end != '\0' || !(secs > 0) || secs > 86400) continue;
      const auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::ceil(secs * 1000)));
      if (!longest || ms > *longest) longest = ms;
    }
  };
  scan(spec.pod_template);
  for (const api::Role& r : spec.roles) scan(r.pod_template);
  return longest;
}

}  // namespace

PeerLossOptions LauncherTimings(const api::TrainingJobSpec& spec) {
  PeerLossOptions o;
  if (auto t = TemplateSeconds(spec, protocol::contract::kEnvPeerTimeout)) {
    o.peer_timeout = std::max(o.peer_timeout, *t);
  }
  if (auto t = TemplateSeconds(spec, protocol::contract::kEnvHeartbeatInterval)) {
    o.heartbeat_interval = std::max(o.heartbeat_interval, *t);
  }
  return o;
}

bool CoveredBySpare(const protocol::ControlStatus& status, const protocol::LostMember& m) {
  for (const protocol::SpareServing& s : status.serving) {
    if (s.node_rank == m.node_rank && s.round > m.round) return true;
  }
  return false;
}

std::vector<std::string> ReportedNodes(const std::vector<protocol::LostMember>& lost,
                                       const std::vector<kube::Pod>& pods) {
  std::unordered_set<std::string_view> named;
  for (const protocol::LostMember& m : lost) {
    if (!m.pod_name.empty()) named.insert(m.pod_name);
  }
  std::vector<std::string> nodes;
  std::unordered_set<std::string_view> seen;
  for (const kube::Pod& pod : pods) {
    if (pod.node_name.empty() || named.count(pod.meta.name) == 0) continue;
    if (seen.insert(pod.node_name).second) nodes.push_back(pod.node_name);
  }
  return nodes;
}

bool PlanPeerLoss(Pass& p) {
  // Not only while answered: node 0's launcher may have exited after the loss (the monitor keeps
  // the lost members it reported).
  if (!p.observed.launchers) return false;
  const LauncherObservation& obs = *p.observed.launchers;
  std::vector<std::pair<protocol::LostMember, LossVerdict>> corroborated;
  bool unresolved = false;
  const PeerLossOptions timings = LauncherTimings(p.job.spec);  // once per pass, not per report
  ReportIndex index(p);
  for (const protocol::LostMember& m : obs.status.lost) {
    // A server of an older attempt (its rounds start at that attempt) still answering at an
    // address the new worker-0 pod was given (kwok reuses pod IPs; node 0's launcher lingers
    // after a loss): its report is about pods that are gone.
    if (static_cast<int64_t>(m.round) < p.job.status.attempt) continue;
    // Hot spares: the server promotes a standby spare in the same step that records the loss
    // (rendezvous/server.cc CloseConn), so a covered loss is already in `serving`. The spare
    // serves that node-rank now; spare_plan.h deletes the lost pod. No gang restart.
    if (index.Covered(m)) continue;
    const LossEvidence e = Gather(p, index, obs, m);
    LossVerdict v = CorroborateLoss(e, timings);
    p.plan->peer_loss.push_back(
        {m.pod_name, m.lost_unix_ms, std::string(ToString(v.outcome)), v.evidence});
    if (v.outcome == LossOutcome::kCorroborated) {
      corroborated.emplace_back(m, std::move(v));
    } else if (v.outcome == LossOutcome::kWaiting) {
      unresolved = true;
      if (v.act_at) {
        p.RequeueIn(std::chrono::ceil<seconds>(*v.act_at - p.now));
      }
    }
  }
  if (unresolved) p.RequeueIn(kPeerLossPollInterval);
  if (corroborated.empty()) return false;
  Restart(p, corroborated);
  return true;
}

}  // namespace lockstep::controller
