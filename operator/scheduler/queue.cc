#include "operator/scheduler/queue.h"

#include <algorithm>
#include <set>
#include <tuple>

namespace lockstep::scheduler {
namespace {

struct Reservation {
  const GangRequest* holder;
  Snapshot view;  // the assumed snapshot plus the holder's would-be placement
};

std::string Seconds(std::chrono::steady_clock::duration d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(d).count()) + "s";
}

std::vector<std::string> DistinctNodes(const Placement& p) {
  std::set<std::string> names;
  for (const PodAssignment& a : p.assignments) names.insert(a.node_name);
  return {names.begin(), names.end()};
}

// A gang that does not fit: reserve for it when it is the first to have waited long enough.
GangDecision DecideUnplaced(const PendingGang& pending, Placement failed, const Snapshot& assumed,
                            std::optional<Reservation>& reservation,
                            std::chrono::steady_clock::time_point now,
                            const CycleOptions& options) {
  GangDecision d{pending.gang, Outcome::kWaiting, std::move(failed), {}};
  const auto waited = now - pending.queued_since;
  if (reservation || waited < options.reserve_after) return d;
  const Placement would_be = PlaceGang(assumed, *pending.gang, {CapacityMode::kAllocatable});
  if (!would_be.placed()) return d;  // cannot fit even on empty nodes: holding would only waste
  Snapshot view = assumed;
  AssumePlacement(view, *pending.gang, would_be);
  reservation = Reservation{pending.gang, std::move(view)};
  d.outcome = Outcome::kReserved;
  d.reserved_nodes = DistinctNodes(would_be);
  d.placement.message += "; waited " + Seconds(waited) + ", capacity reserved on " +
                         std::to_string(d.reserved_nodes.size()) + " nodes";
  return d;
}

// The preemptor that does not fit yet holds the capacity its victims are giving back.
GangDecision HoldForPreemptor(const PendingGang& pending, Placement failed, const Snapshot& assumed,
                              const HeldCapacity& held, std::optional<Reservation>& reservation) {
  Snapshot view = assumed;
  std::set<std::string> nodes;
  for (const auto& [node, requests] : held.pods) {
    if (auto n = view.Find(node)) {
      view.Assume(*n, requests);
      nodes.insert(node);
    }
  }
  reservation = Reservation{pending.gang, std::move(view)};
  GangDecision d{pending.gang, Outcome::kReserved, std::move(failed), {nodes.begin(), nodes.end()}};
  d.placement.message += "; " + held.why + ", capacity held on " + std::to_string(nodes.size()) +
                         " nodes until it is placed";
  return d;
}

}  // namespace

bool QueueBefore(const GangRequest& a, const GangRequest& b) {
  return std::tie(b.priority, a.creation_time, a.job_key) <
         std::tie(a.priority, b.creation_time, b.job_key);
}

CyclePlan PlanCycle(const Snapshot& snapshot, std::vector<PendingGang> pending,
                    std::chrono::steady_clock::time_point now, const CycleOptions& options) {
  std::stable_sort(pending.begin(), pending.end(), [](const PendingGang& a, const PendingGang& b) {
    return QueueBefore(*a.gang, *b.gang);
  });
  CyclePlan plan{{}, snapshot};
  std::optional<Reservation> reservation;
  for (const PendingGang& p : pending) {
    const Snapshot& view = reservation ? reservation->view : plan.assumed;
    Placement placement = PlaceGang(view, *p.gang);
    if (placement.placed()) {
      AssumePlacement(plan.assumed, *p.gang, placement);
      if (reservation) AssumePlacement(reservation->view, *p.gang, placement);
      plan.decisions.push_back({p.gang, Outcome::kPlaced, std::move(placement), {}});
      continue;
    }
    if (reservation && PlaceGang(plan.assumed, *p.gang).placed()) {
      placement.message = "capacity is held for " + reservation->holder->job_key +
                          ", which waited longer (" + placement.message + ")";
      plan.decisions.push_back({p.gang, Outcome::kBlockedByReservation, std::move(placement), {}});
      continue;
    }
    if (options.held && !reservation && p.gang->job_key == options.held->job_key) {
      plan.decisions.push_back(
          HoldForPreemptor(p, std::move(placement), plan.assumed, *options.held, reservation));
      continue;
    }
    plan.decisions.push_back(
        DecideUnplaced(p, std::move(placement), plan.assumed, reservation, now, options));
  }
  return plan;
}

}  // namespace lockstep::scheduler
