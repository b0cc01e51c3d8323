#include "operator/controller/peer_loss_plan.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "operator/api/ranks.h"
#include "operator/controller/peer_loss.h"
#include "operator/controller/restart_plan.h"
#include "protocol/contract.h"

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

bool PlanPeerLoss(Pass& p) {
  // Not only while answered: node 0's launcher may have exited after the loss (the monitor keeps
  // the lost members it reported).
  if (!p.observed.launchers) return false;
  const LauncherObservation& obs = *p.observed.launchers;
  std::vector<std::pair<protocol::LostMember, LossVerdict>> corroborated;
  bool unresolved = false;
  const PeerLossOptions timings = LauncherTimings(p.job.spec);  // once per pass, not per report
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
