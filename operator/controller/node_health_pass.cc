#include "operator/controller/node_health_pass.h"

#include <algorithm>

#include "operator/controller/silence_guard.h"

namespace lockstep::controller {

LostChange RecordVerdict(LostNodes& lost, const std::string& node, const NodeVerdict& verdict) {
  if (!verdict.lost) {
    lost.erase(node);
    return LostChange::kNone;
  }
  auto [it, inserted] = lost.try_emplace(node, verdict.reason);
  if (inserted) return LostChange::kLost;
  if (it->second == verdict.reason) return LostChange::kNone;
  it->second = verdict.reason;
  return LostChange::kNewReason;
}

api::Time SilenceCountsFrom(api::Time leases_fresh_since, api::Time silence_released_at) {
  return std::max(leases_fresh_since, silence_released_at);
}

NodeCensus JudgeNodes(const KnownNodes& known, api::Time now, const NodeHealthOptions& options,
                      api::Time silence_counts_from) {
  NodeCensus census;
  census.verdicts.reserve(known.size());
  for (const auto& [name, k] : known) {
    if (k.lease != nullptr) {
      if (auto deadline = LeaseDeadline(*k.lease, options, silence_counts_from)) {
        census.lease_deadlines.push_back(*deadline);
      }
    }
    census.verdicts.emplace_back(
        name, AssessNode(name, k.node.get(), k.lease.get(), now, options, silence_counts_from));
    if (IsSilenceVerdict(census.verdicts.back().second)) ++census.silent;
  }
  return census;
}

void ForgetGoneNodes(LostNodes& lost, const KnownNodes& known) {
  for (auto it = lost.begin(); it != lost.end();) {
    it = known.count(it->first) != 0 ? std::next(it) : lost.erase(it);
  }
}

SilenceGuardStep StepSilenceGuard(bool was_held, int silent, int total, double fraction) {
  SilenceGuardStep step;
  step.held = HoldSilence(silent, total, fraction);
  step.changed = step.held != was_held;
  step.hold_verdicts = step.held || was_held;
  return step;
}

std::vector<LostNews> RecordVerdicts(LostNodes& lost,
                                     std::vector<std::pair<std::string, NodeVerdict>> verdicts,
                                     bool hold_silence) {
  std::vector<LostNews> news;
  for (auto& [name, raw] : verdicts) {
    NodeVerdict v = ApplySilenceHold(std::move(raw), hold_silence);
    const LostChange change = RecordVerdict(lost, name, v);
    if (change != LostChange::kNone) news.push_back(LostNews{name, std::move(v), change});
  }
  return news;
}

}  // namespace lockstep::controller
