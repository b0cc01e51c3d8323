#include "operator/controller/launcher_dispatch.h"

#include <algorithm>
#include <limits>

namespace lockstep::controller {

LauncherDispatch::LauncherDispatch(DispatchLimits limits) : limits_(limits) {
  // Every lane gets a worker (a lane of none would never run), and the responsive lane at least
  // one the others cannot take.
  limits_.workers = std::max<size_t>(limits_.workers, 3);
  limits_.probe_slots = std::clamp<size_t>(limits_.probe_slots, 1, limits_.workers - 2);
  limits_.silent_slots =
      std::clamp<size_t>(limits_.silent_slots, 1, limits_.workers - 1 - limits_.probe_slots);
}

std::optional<LauncherDispatch::OpId> LauncherDispatch::Add(const std::string& job,
                                                            LauncherOpKind kind,
                                                            const std::string& probe_key) {
  Job& j = jobs_[job];
  j.forgotten = false;
  if (kind == LauncherOpKind::kStatus) {
    if (j.status_queued) return std::nullopt;
    j.status_queued = true;
  } else if (kind == LauncherOpKind::kProbe) {
    if (!j.probes_queued.insert(probe_key).second) return std::nullopt;
  }
  const OpId id = next_id_++;
  j.queue.push_back(Queued{id, kind, probe_key});
  ++queued_;
  if (!j.in_flight && !j.listed) List(job, j);
  return id;
}

LauncherLane LauncherDispatch::LaneOf(const Job& job) const {
  if (job.queue.front().kind == LauncherOpKind::kProbe) return LauncherLane::kProbe;
  return job.timeouts > 0 ? LauncherLane::kSilent : LauncherLane::kResponsive;
}

std::set<LauncherDispatch::Place>& LauncherDispatch::Ready(LauncherLane lane) {
  switch (lane) {
    case LauncherLane::kProbe:
      return probes_;
    case LauncherLane::kSilent:
      return silent_;
    case LauncherLane::kResponsive:
      break;
  }
  return responsive_;
}

void LauncherDispatch::List(const std::string& key, Job& job) {
  const LauncherLane lane = LaneOf(job);
  // Only the silent lane orders by timeouts; the others by turn alone.
  Place place{lane == LauncherLane::kSilent ? job.timeouts : 0, next_turn_++, key};
  Ready(lane).insert(place);
  job.listed = {lane, std::move(place)};
}

void LauncherDispatch::Unlist(Job& job) {
  if (!job.listed) return;
  Ready(job.listed->first).erase(job.listed->second);
  job.listed.reset();
}

bool LauncherDispatch::LaneHasRoom(LauncherLane lane) const {
  auto it = lane_in_flight_.find(lane);
  const size_t busy = it == lane_in_flight_.end() ? 0 : it->second;
  switch (lane) {
    case LauncherLane::kProbe:
      return busy < limits_.probe_slots;
    case LauncherLane::kSilent:
      return busy < limits_.silent_slots;
    case LauncherLane::kResponsive:
      break;
  }
  return true;
}

bool LauncherDispatch::Runnable() const {
  if (in_flight_ >= limits_.workers) return false;
  return !responsive_.empty() || (!probes_.empty() && LaneHasRoom(LauncherLane::kProbe)) ||
         (!silent_.empty() && LaneHasRoom(LauncherLane::kSilent));
}

std::optional<LauncherDispatch::Ticket> LauncherDispatch::Next() {
  if (in_flight_ >= limits_.workers) return std::nullopt;
  // The lanes with room; of their first jobs, the one whose turn came first.
  const Place* best = nullptr;
  for (LauncherLane lane :
       {LauncherLane::kResponsive, LauncherLane::kProbe, LauncherLane::kSilent}) {
    const std::set<Place>& ready = Ready(lane);
    if (ready.empty() || !LaneHasRoom(lane)) continue;
    if (best == nullptr || std::get<1>(*ready.begin()) < std::get<1>(*best)) {
      best = &*ready.begin();
    }
  }
  if (best == nullptr) return std::nullopt;
  const std::string key = std::get<2>(*best);
  Job& job = jobs_.at(key);
  const LauncherLane lane = job.listed->first;
  Unlist(job);
  Queued op = std::move(job.queue.front());
  job.queue.erase(job.queue.begin());
  --queued_;
  if (op.kind == LauncherOpKind::kStatus) job.status_queued = false;
  if (op.kind == LauncherOpKind::kProbe) job.probes_queued.erase(op.probe_key);
  job.in_flight = true;
  ++in_flight_;
  ++lane_in_flight_[lane];
  return Ticket{op.id, key, op.kind, lane};
}

void LauncherDispatch::Done(const Ticket& ticket, LauncherOutcome outcome) {
  auto it = jobs_.find(ticket.job);
  if (it == jobs_.end() || !it->second.in_flight) return;  // not a ticket of Next()
  Job& job = it->second;
  job.in_flight = false;
  --in_flight_;
  --lane_in_flight_[ticket.lane];
  if (ticket.kind != LauncherOpKind::kProbe) {
    if (outcome == LauncherOutcome::kInTime) {
      job.timeouts = 0;
    } else if (job.timeouts < std::numeric_limits<uint32_t>::max()) {
      ++job.timeouts;
    }
  }
  if (job.forgotten && job.queue.empty()) {
    jobs_.erase(it);
    return;
  }
  if (!job.queue.empty()) List(ticket.job, job);
}

std::vector<LauncherDispatch::OpId> LauncherDispatch::Forget(const std::string& key) {
  std::vector<OpId> dropped;
  auto it = jobs_.find(key);
  if (it == jobs_.end()) return dropped;
  Job& job = it->second;
  Unlist(job);
  for (const Queued& q : job.queue) dropped.push_back(q.id);
  queued_ -= job.queue.size();
  if (!job.in_flight) {
    jobs_.erase(it);
    return dropped;
  }
  job.queue.clear();
  job.status_queued = false;
  job.probes_queued.clear();
  job.timeouts = 0;
  job.forgotten = true;
  return dropped;
}

LauncherLane LauncherDispatch::ControlLane(const std::string& key) const {
  auto it = jobs_.find(key);
  return it != jobs_.end() && it->second.timeouts > 0 ? LauncherLane::kSilent
                                                      : LauncherLane::kResponsive;
}

}  // namespace lockstep::controller
