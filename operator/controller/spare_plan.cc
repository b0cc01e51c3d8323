#include "operator/controller/spare_plan.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "operator/api/children.h"
#include "operator/api/ranks.h"
#include "operator/controller/failure_policy.h"
#include "operator/controller/inplace_plan.h"
#include "operator/controller/inplace_policy.h"
#include "operator/controller/restart_plan.h"

namespace lockstep::controller {
namespace {

std::string Label(const kube::Pod& pod, std::string_view key) {
  auto it = pod.meta.labels.find(std::string(key));
  return it == pod.meta.labels.end() ? std::string() : it->second;
}

// The pod's replica index label, or -1.
int32_t IndexOf(const kube::Pod& pod) {
  const std::string text = Label(pod, api::kLabelReplicaIndex);
  int32_t value = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || value < 0) {
    return -1;
  }
  return value;
}

bool IsSparePod(const kube::Pod& pod) { return Label(pod, api::kLabelRole) == api::kSpareRole; }

// The recorded status.spares when it belongs to the current attempt.
const api::SpareStatus* RecordedForAttempt(const api::TrainingJob& job) {
  const std::optional<api::SpareStatus>& s = job.status.spares;
  return s && s->attempt == job.status.attempt ? &*s : nullptr;
}

bool OnLostNode(const kube::Pod& pod, const std::map<std::string, NodeVerdict>& lost_nodes) {
  if (pod.node_name.empty()) return false;
  auto it = lost_nodes.find(pod.node_name);
  return it != lost_nodes.end() && it->second.lost;
}

// Failed, disrupted, or unfinished on a lost node: a pod the gang has lost.
bool Lost(const kube::Pod& pod, const std::map<std::string, NodeVerdict>& lost_nodes) {
  if (pod.phase == "Failed") return true;
  if (pod.phase == "Succeeded") return false;
  return IsDisrupted(pod) || OnLostNode(pod, lost_nodes);
}

}  // namespace

std::vector<api::SpareServing> CurrentServing(
    const api::TrainingJob& job, const std::optional<LauncherObservation>& launchers) {
  std::vector<api::SpareServing> out;
  if (launchers && launchers->answered) {
    for (const protocol::SpareServing& s : launchers->status.serving) {
      const auto index = static_cast<int32_t>(s.spare_index);
      out.push_back(api::SpareServing{static_cast<int32_t>(s.node_rank), index,
                                      api::PodName(job.metadata.name, api::kSpareRole, index),
                                      static_cast<int32_t>(s.round)});
    }
    return out;
  }
  if (const api::SpareStatus* recorded = RecordedForAttempt(job)) out = recorded->serving;
  return out;
}

SpareView SplitSpares(const api::TrainingJobSpec& spec, const std::vector<kube::Pod>& pods,
                      const std::vector<api::SpareServing>& serving) {
  // (role, index) <-> node-rank of the gang's slots.
  std::map<std::pair<std::string, int32_t>, int32_t> rank_of;
  std::map<int32_t, const api::PodSlot*> slot_of;
  const std::vector<api::PodSlot> slots = api::PodSlots(spec, spec.replicas);
  for (const api::PodSlot& slot : slots) {
    rank_of[{slot.role, slot.index}] = slot.node_rank;
    slot_of[slot.node_rank] = &slot;
  }
  std::map<int32_t, int32_t> rank_of_spare;  // spare index -> node-rank it serves
  for (const api::SpareServing& s : serving) rank_of_spare[s.spare_index] = s.node_rank;
  std::set<int32_t> served;
  for (const api::SpareServing& s : serving) served.insert(s.node_rank);

  SpareView view;
  for (const kube::Pod& pod : pods) {
    const int32_t index = IndexOf(pod);
    if (IsSparePod(pod)) {
      auto it = rank_of_spare.find(index);
      auto slot = it == rank_of_spare.end() ? slot_of.end() : slot_of.find(it->second);
      if (slot == slot_of.end()) {
        view.standby.push_back(pod);
        continue;
      }
      // The node-rank's pod now: every other step counts it, judges it and waits for it as such.
      kube::Pod as_slot = pod;
      as_slot.meta.labels[std::string(api::kLabelRole)] = slot->second->role;
      as_slot.meta.labels[std::string(api::kLabelReplicaIndex)] =
          std::to_string(slot->second->index);
      view.gang.push_back(std::move(as_slot));
      continue;
    }
    auto rank = rank_of.find({Label(pod, api::kLabelRole), index});
    if (rank != rank_of.end() && served.count(rank->second) != 0) {
      view.replaced.push_back(pod);
    } else {
      view.gang.push_back(pod);
    }
  }
  view.serving = serving;
  return view;
}

std::set<int32_t> WantedSpareIndexes(int32_t desired,
                                     const std::vector<api::SpareServing>& serving) {
  std::set<int32_t> used;
  for (const api::SpareServing& s : serving) used.insert(s.spare_index);
  std::set<int32_t> out;
  for (int32_t index = 0; static_cast<int32_t>(out.size()) < desired; ++index) {
    if (used.count(index) == 0) out.insert(index);
  }
  return out;
}

SpareRecord RecordSpares(const api::TrainingJob& job,
                         const std::optional<LauncherObservation>& launchers) {
  SpareRecord record;
  const int32_t desired = job.spec.failure_policy.spare_replicas;
  const std::optional<api::SpareStatus>& prior = job.status.spares;
  if (desired <= 0 && !prior) return record;
  api::SpareStatus s;
  s.desired = std::max(desired, 0);
  s.promotions = prior ? prior->promotions : 0;
  s.attempt = job.status.attempt;
  if (const api::SpareStatus* same = RecordedForAttempt(job)) {
    s.ready = same->ready;
    s.attempt_promotions = same->attempt_promotions;
    s.serving = same->serving;
  }
  if (launchers && launchers->answered) {
    const protocol::ControlStatus& st = launchers->status;
    s.ready = static_cast<int32_t>(st.standby_spares);
    const auto count = static_cast<int32_t>(st.promotions);
    if (count > s.attempt_promotions) {
      record.new_promotions = count - s.attempt_promotions;
      s.promotions = AddToCount(s.promotions, record.new_promotions);
      s.attempt_promotions = count;
    }
    std::vector<api::SpareServing> now = CurrentServing(job, launchers);
    for (const api::SpareServing& e : now) {
      if (std::find(s.serving.begin(), s.serving.end(), e) == s.serving.end()) {
        record.newly_serving.push_back(e);
      }
    }
    s.serving = std::move(now);
  }
  record.status = std::move(s);
  return record;
}

bool NeedsPromotionCheck(const api::TrainingJob& job, const std::vector<kube::Pod>& gang,
                         const std::map<std::string, NodeVerdict>& lost_nodes) {
  if (job.spec.failure_policy.spare_replicas <= 0) return false;
  const api::SpareStatus* recorded = RecordedForAttempt(job);
  if (recorded == nullptr || recorded->ready <= 0) return false;
  int32_t lost = 0;
  for (const kube::Pod& pod : gang) {
    if (!Lost(pod, lost_nodes)) continue;
    // Node 0 hosts the rendezvous: no spare replaces it.
    if (Label(pod, api::kLabelRole) != api::kWorkerRole || IndexOf(pod) <= 0) return false;
    ++lost;
  }
  return lost > 0 && lost <= recorded->ready;
}

void PlanSpareRecord(Pass& p) {
  SpareRecord record = RecordSpares(p.job, p.observed.launchers);
  if (!record.status) return;
  p.status().spares = std::move(record.status);
  p.plan->spare_promotions = record.new_promotions;
  for (const api::SpareServing& e : record.newly_serving) {
    p.Event("Normal", "SparePromoted",
            "spare pod " + e.pod + " took node rank " + std::to_string(e.node_rank) +
                " (pod " + api::PodName(p.job.metadata.name, api::kWorkerRole, e.node_rank) +
                " was lost) in the launchers' round " + std::to_string(e.round) +
                "; no gang restart; a replacement spare is placed");
  }
}

bool AwaitSparePromotion(Pass& p, std::optional<api::Time> failed_at) {
  if (!failed_at || p.now - *failed_at >= kSparePromotionWait) return false;
  if (!NeedsPromotionCheck(p.job, p.pods, p.observed.lost_nodes)) return false;
  const kube::Pod* rank0 = RendezvousPod(p.job, p.pods);
  if (rank0 == nullptr || rank0->pod_ip.empty()) return false;
  p.plan->launcher_poll = rank0->meta.name;
  p.RequeueIn(std::chrono::seconds(1));
  return true;
}

void PlanSpareDeletes(Pass& p) {
  if (p.spares == nullptr) return;
  std::vector<kube::Pod> gone = p.spares->replaced;
  for (const kube::Pod& pod : p.spares->standby) {
    if (Lost(pod, p.observed.lost_nodes)) gone.push_back(pod);
  }
  PlanStaleDeletes(p, gone);
}

void SpareCreateOptions(const Pass& p, api::ChildrenOptions* options) {
  if (p.spares == nullptr) return;
  options->spare_indexes =
      WantedSpareIndexes(p.job.spec.failure_policy.spare_replicas, p.spares->serving);
  for (const api::SpareServing& s : p.spares->serving) {
    options->served_node_ranks.insert(s.node_rank);
  }
  const std::string key = RequiredTopologyKey(p.job);
  if (key.empty() || !p.observed.spare_domain) return;
  // The workers' placement (a Kueue admission's), plus the gang's domain.
  api::RolePlacement spare;
  if (auto it = options->role_placement.find(std::string(api::kWorkerRole));
      it != options->role_placement.end()) {
    spare = it->second;
  }
  spare.node_selector[key] = *p.observed.spare_domain;
  options->role_placement[std::string(api::kSpareRole)] = std::move(spare);
}

std::string RequiredTopologyKey(const api::TrainingJob& job) {
  return job.spec.placement ? job.spec.placement->required_topology_key.value_or("") : "";
}

std::string SpareDomainNode(const api::TrainingJob& job, const std::vector<kube::Pod>& pods) {
  if (job.spec.failure_policy.spare_replicas <= 0 || RequiredTopologyKey(job).empty()) return "";
  const kube::Pod* rank0 = RendezvousPod(job, pods);
  return rank0 != nullptr ? rank0->node_name : std::string();
}

}  // namespace lockstep::controller
