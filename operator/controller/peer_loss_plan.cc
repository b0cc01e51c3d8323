#include "operator/controller/peer_loss_plan.h"

#include <algorithm>

#include "operator/api/ranks.h"
#include "operator/controller/peer_loss.h"
#include "operator/controller/restart_plan.h"

namespace lockstep::controller {
namespace {

using LossOutcome = LossVerdict::Outcome;
using std::chrono::seconds;

// P: the current attempt's pod the report names (by its name, else by its node rank's slot).
const kube::Pod* ReportedPod(const Pass& p, const protocol::LostMember& m) {
  std::string name = m.pod_name;
  if (name.empty()) {
    const std::vector<api::PodSlot> slots = api::PodSlots(p.spec, p.spec.replicas);
    if (m.node_rank >= slots.size()) return nullptr;
    const api::PodSlot& slot = slots[m.node_rank];
    name = api::PodName(p.job.metadata.name, slot.role, slot.index);
  }
  for (const kube::Pod& pod : p.pods) {
    if (pod.meta.name == name) return &pod;
  }
  return nullptr;
}

// The evidence CorroborateLoss judges; asks for a probe when this report has none yet.
LossEvidence Gather(Pass& p, const LauncherObservation& obs, const protocol::LostMember& m) {
  LossEvidence e;
  e.report = m;
  e.pod = ReportedPod(p, m);
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
  for (const auto& [m, v] : lost) {
    r.message += (r.message.empty() ? "" : "; ") + v.evidence;
    if (std::find(r.lost_nodes.begin(), r.lost_nodes.end(), v.node) == r.lost_nodes.end()) {
      r.lost_nodes.push_back(v.node);
    }
    const api::Time heard = FromUnixMs(m.last_heard_unix_ms);
    if (!r.failed_at || heard < *r.failed_at) r.failed_at = heard;
  }
  std::sort(r.lost_nodes.begin(), r.lost_nodes.end());
  PlanRestart(p, r, p.pods);
}

}  // namespace

bool CoveredBySpare(const protocol::ControlStatus& status, const protocol::LostMember& m) {
  for (const protocol::SpareServing& s : status.serving) {
    if (s.node_rank == m.node_rank && s.round > m.round) return true;
  }
  return false;
}

bool PlanPeerLoss(Pass& p) {
  // Not only while answered: node 0's launcher may have exited after the loss (the monitor keeps
  // the lost members it reported).
  if (!p.observed.launchers) return false;
  const LauncherObservation& obs = *p.observed.launchers;
  std::vector<std::pair<protocol::LostMember, LossVerdict>> corroborated;
  bool unresolved = false;
  for (const protocol::LostMember& m : obs.status.lost) {
    // A server of an older attempt (its rounds start at that attempt) still answering at an
    // address the new worker-0 pod was given (kwok reuses pod IPs; node 0's launcher lingers
    // after a loss): its report is about pods that are gone.
    if (static_cast<int64_t>(m.round) < p.job.status.attempt) continue;
    // Hot spares: the server promotes a standby spare in the same step that records the loss
    // (rendezvous/server.cc CloseConn), so a covered loss is already in `serving`. The spare
    // serves that node-rank now; spare_plan.h deletes the lost pod. No gang restart.
    if (CoveredBySpare(obs.status, m)) continue;
    const LossEvidence e = Gather(p, obs, m);
    LossVerdict v = CorroborateLoss(e);
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
