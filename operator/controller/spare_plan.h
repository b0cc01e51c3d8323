#pragma once
// Hot spares in ComputePlan (docs/failures.md "Hot spares"; spec.failurePolicy.spareReplicas).
// Spare pods ("<job>-spare-<k>", role label "spare") are created with the gang and placed with
// it; their launchers stand by at node 0's rendezvous server. When a gang pod other than node 0
// is lost, the server gives its node-rank to a spare in a new in-place round and says so in its
// Status answer (ControlStatus::serving). The operator then:
//   - records it (status.spares, a SparePromoted event, lockstep_spare_promotions_total);
//   - treats the spare pod as that node-rank's pod (SplitSpares: every other plan step sees the
//     gang as it runs now, so the lost pod is no reason to restart the gang);
//   - deletes the replaced pod (grace 0 on a lost node), never recreates it, and creates a
//     replacement spare with the next free spare index (placed by the gang scheduler alone);
//   - deletes a standby spare that failed or whose node was lost, and creates it again.
// A gang pod that failed or was lost while a spare stood by may be covered by a promotion the
// operator has not heard of yet (it polls node 0 every 10 s): the restart waits for a fresh
// answer, at most kSparePromotionWait after the failure (AwaitSparePromotion). With no spare
// standing by, or node 0 lost, today's restart path applies.
//
// SplitSpares, WantedSpareIndexes, RecordSpares and NeedsPromotionCheck are pure (table-tested in
// tests/unit/controller/spare_plan_test.cc); the Plan* steps apply them to a pass.

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/plan_pass.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

inline constexpr std::chrono::seconds kSparePromotionWait{30};

// The current attempt's pods as the plan sees them.
struct SpareView {
  // The gang: gang pods whose node-rank no spare serves, and the promoted spare pods labelled as
  // the node-rank's pod (role and replica index of the slot they serve; name and uid their own).
  std::vector<kube::Pod> gang;
  std::vector<kube::Pod> standby;   // spare pods serving no node-rank
  std::vector<kube::Pod> replaced;  // gang pods whose node-rank a spare serves now
  std::vector<api::SpareServing> serving;  // what the split was made by
};

// The node-ranks promoted spares serve in the current attempt: node 0's latest answer when it
// names any, else what status.spares recorded for this attempt.
std::vector<api::SpareServing> CurrentServing(const api::TrainingJob& job,
                                              const std::optional<LauncherObservation>& launchers);

// `pods`: the current attempt's. `spec`: with this attempt's replicas.
SpareView SplitSpares(const api::TrainingJobSpec& spec, const std::vector<kube::Pod>& pods,
                      const std::vector<api::SpareServing>& serving);

// The spare indexes to keep standing by: the `desired` lowest that serve no node-rank.
std::set<int32_t> WantedSpareIndexes(int32_t desired,
                                     const std::vector<api::SpareServing>& serving);

// status.spares after node 0's answer (if any): the attempt's serving list, ready spares, and
// promotions; `new_promotions` counts the ones not recorded before, `newly_serving` their
// entries. nullopt status: the job has no spares and never had.
struct SpareRecord {
  std::optional<api::SpareStatus> status;
  int new_promotions = 0;
  std::vector<api::SpareServing> newly_serving;
};
SpareRecord RecordSpares(const api::TrainingJob& job,
                         const std::optional<LauncherObservation>& launchers);

// True when a gang restart for these pods may be one a standby spare covers: a spare stood by
// (as last recorded), and every gang pod that failed, was disrupted or sits on a lost node has a
// node-rank other than 0, no more of them than spares stood by.
bool NeedsPromotionCheck(const api::TrainingJob& job, const std::vector<kube::Pod>& gang,
                         const std::map<std::string, NodeVerdict>& lost_nodes);

// Pass steps. PlanSpareRecord: status.spares, SparePromoted events, the metric's count.
void PlanSpareRecord(Pass& p);
// The restart that was decided waits for node 0's answer (a poll, requeued in 1 s); true when it
// waits. `failed_at`: the failure's time, when known (without it there is no wait).
bool AwaitSparePromotion(Pass& p, std::optional<api::Time> failed_at);
// Deletes the replaced pods and the standby spares that failed or were lost.
void PlanSpareDeletes(Pass& p);
// What PlanCreates builds besides the gang: the wanted standby spares, and no pod for a node-rank
// a spare serves. With a required topology key and the gang's domain known
// (Observed::spare_domain), spare pods get a nodeSelector for that domain on top of the workers'
// placement: a replacement spare is placed alone while the gang runs, and without it any domain
// with room would do, so a promotion could pull a rank out of the gang's rack.
void SpareCreateOptions(const Pass& p, api::ChildrenOptions* options);

// The node whose label names the gang's topology domain: the one the rendezvous pod (node-rank 0,
// never replaced by a spare) is bound to; empty for a job with no spares or no required key, or
// before that pod is bound. Pure; the reconciler looks the label up in its node caches.
std::string SpareDomainNode(const api::TrainingJob& job, const std::vector<kube::Pod>& pods);
// spec.placement.requiredTopologyKey, or "" when the job has none: the label SpareDomainNode's
// node is read by.
std::string RequiredTopologyKey(const api::TrainingJob& job);

}  // namespace lockstep::controller
