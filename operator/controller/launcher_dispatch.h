#pragma once
// LauncherDispatch: the launcher monitor's run queue (launcher_monitor.h): which queued request
// a free worker runs next. Pure (no threads, clock or network), so its order is table-tested
// (tests/unit/controller/launcher_dispatch_test.cc); the monitor holds its lock around every call.
//
// Per job: requests run in the order asked, at most one in flight (worker-0's server gets one
// control connection from the operator at a time; a probe waits for it too). Coalesced: at most
// one Status queued per job, one Probe per job and probe key (pod and report); a Restart is never
// dropped. A request leaves the queue when a worker takes it, so the next may queue meanwhile.
//
// Lanes: what a request is expected to cost a worker, which blocks in it up to the control's
// deadline (1 s).
// - responsive: a Status or Restart of a job whose last control request ended in time (answered,
//   refused, or no connection), or that was never asked. Costs milliseconds.
// - probe: a connect to a pod the launchers reported lost. Often the whole deadline by design
//   (an unreachable pod is the answer the plan waits for).
// - silent: a Status or Restart of a job whose last control request got no answer in time
//   (worker-0 accepts and never answers, or its node died and connects hang).
// At most `probe_slots` workers run probes and at most `silent_slots` run silent jobs' requests,
// so at least workers - probe_slots - silent_slots always serve responsive jobs: a healthy job's
// Status and Restart wait only behind other healthy jobs' requests, its probes only behind other
// probes, never behind a silent job. A silent job that answers in time is responsive again.
//
// Order (fairness between jobs): among the lanes with a free slot, the job whose next request
// became runnable first; a job re-queues behind the others after each request (round-robin).
// In the silent lane, the job with the fewest consecutive timeouts first, so a job that missed
// one deadline goes ahead of those silent for minutes. Each call is O(log jobs).

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace lockstep::controller {

enum class LauncherOpKind { kStatus, kRestart, kProbe };
enum class LauncherLane { kResponsive, kProbe, kSilent };

// How a control request (Status, Restart) ended; a probe's ending changes nothing.
enum class LauncherOutcome {
  kInTime,  // an answer, a refusal, a refused connection, no token: the worker was free at once
  kSilent,  // no answer within the deadline (or slower than the monitor's kSlowAnswer)
};

struct DispatchLimits {
  size_t workers = 32;
  size_t silent_slots = 8;
  size_t probe_slots = 8;
};

class LauncherDispatch {
 public:
  using OpId = uint64_t;
  struct Ticket {
    OpId id = 0;
    std::string job;
    LauncherOpKind kind = LauncherOpKind::kStatus;
    LauncherLane lane = LauncherLane::kResponsive;
  };

  // Clamped: at least 3 workers, each of the probe and silent lanes 1 or more, and at least one
  // worker the responsive lane always has.
  explicit LauncherDispatch(DispatchLimits limits);

  // Queues a request of `job` (its key); the op's id, or nullopt when coalesced with one
  // already queued (a Status of the job; a Probe of the job with the same `probe_key`).
  std::optional<OpId> Add(const std::string& job, LauncherOpKind kind,
                          const std::string& probe_key = "");
  // The request a free worker runs next (it is in flight until Done), or nullopt when none may
  // run now: nothing queued, every job with requests has one in flight, or their lanes are full.
  std::optional<Ticket> Next();
  void Done(const Ticket& ticket, LauncherOutcome outcome);
  // Drops the job's queued requests (not the one in flight) and its history; their ids.
  std::vector<OpId> Forget(const std::string& job);

  bool Runnable() const;  // Next() would return a request
  size_t in_flight() const { return in_flight_; }
  size_t queued() const { return queued_; }
  // The lane the job's next control request goes to (kSilent once it missed a deadline).
  LauncherLane ControlLane(const std::string& job) const;

 private:
  struct Queued {
    OpId id;
    LauncherOpKind kind;
    std::string probe_key;
  };
  // A job's place among the runnable: (consecutive timeouts, for the silent lane only; the
  // order it became runnable in; the job).
  using Place = std::tuple<uint32_t, uint64_t, std::string>;
  struct Job {
    std::vector<Queued> queue;  // front first (short: a Status, a Restart, a few probes)
    bool in_flight = false;
    bool status_queued = false;
    std::set<std::string> probes_queued;
    uint32_t timeouts = 0;   // consecutive control requests with no answer in time
    bool forgotten = false;  // Forget while in flight: dropped when that request is Done
    std::optional<std::pair<LauncherLane, Place>> listed;  // when runnable
  };
  LauncherLane LaneOf(const Job& job) const;
  void List(const std::string& key, Job& job);  // runnable: in its lane's order
  void Unlist(Job& job);
  std::set<Place>& Ready(LauncherLane lane);
  bool LaneHasRoom(LauncherLane lane) const;

  DispatchLimits limits_;
  OpId next_id_ = 1;
  uint64_t next_turn_ = 0;
  size_t in_flight_ = 0;
  size_t queued_ = 0;
  std::map<LauncherLane, size_t> lane_in_flight_;
  std::map<std::string, Job> jobs_;
  std::set<Place> responsive_, probes_, silent_;
};

}  // namespace lockstep::controller
