#pragma once
// LauncherMonitor: the operator's asynchronous line to each running job's launchers. The
// reconciler never waits on the network: it asks for a poll (Status) or a Restart, and reads the
// latest answer when it plans (Observed::launchers). One thread carries the requests out through
// a LauncherControl, each bounded by the control's deadline (1 s), fetches the job's rendezvous
// token from its Secret once per job (kept in memory, never logged), and calls the changed
// handler (the controller enqueues the job) when an answer differs from the one before.
//
// Answers belong to one worker-0 pod (its uid): a new attempt's pod starts a new server with
// fresh counters, and Latest() only returns the answer for the pod the caller names. The lost
// members an answer reported (status.lost) are kept when a later poll gets no answer: the server
// goes with node 0's launcher, which exits when a loss leaves it no in-place restart.
//
// Cadence (SetWatchInterval; the controller sets kWatchInterval, off by default): a job the plan
// polls is watched: the monitor polls it again on its own every interval (more rarely with many
// jobs: one poll per kWatchSpacing at most, so a sweep of N jobs takes N x 10 ms and the thread's
// load stays bounded) until kWatchExpiry passes without the plan asking again, and wakes the job
// only when an answer changes. So a lost member the launchers report reaches the plan within about
// 2 s, not the plan's 10 s poll, while a quiet job costs no reconcile pass. Probes (Probe) of pods
// reported lost run on the same thread.
//
// Thread safety: every public method may be called from any thread.

#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "common/clock.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/plan_types.h"
#include "operator/kube/rest_client.h"

namespace lockstep::controller {

// Which launchers to ask: the job and its worker-0 (node rank 0) pod.
struct LauncherJob {
  std::string key;  // namespace/name
  std::string namespace_;
  std::string name;
  std::string uid;  // the rendezvous run id
  std::string pod_uid;
  std::string pod_ip;
  uint32_t attempt = 0;  // the pod's (lockstep.dev/attempt): control requests are keyed by it
};

inline constexpr std::chrono::seconds kWatchInterval{2};
inline constexpr std::chrono::milliseconds kWatchSpacing{10};
inline constexpr std::chrono::seconds kWatchExpiry{25};

class LauncherMonitor {
 public:
  LauncherMonitor(kube::RestClient& client, std::unique_ptr<LauncherControl> control,
                  const Clock& clock = RealClock::Get());
  ~LauncherMonitor();

  // Before Start().
  void SetChangedHandler(std::function<void(const std::string& job_key)> handler);
  void SetWatchInterval(std::chrono::milliseconds interval) { watch_interval_ = interval; }
  void Start();
  void Stop();

  // Queue a Status request (at most one queued per job), and watch the job (above).
  void Poll(const LauncherJob& job);
  // Probe `pod` at `ip` (the rendezvous port) for the report `report_lost_unix_ms`; the answer
  // lands in Latest(job)->probes[pod] (at most one queued per pod and report).
  void Probe(const LauncherJob& job, const std::string& pod, const std::string& ip,
             uint64_t report_lost_unix_ms);
  // Queue a Restart for `request` (the annotation value), then a Status request.
  void Restart(const LauncherJob& job, const std::string& request, const std::string& reason);
  // The latest answers for the job's pod `pod_uid`, if any.
  std::optional<LauncherObservation> Latest(const std::string& job_key,
                                            const std::string& pod_uid) const;
  void Forget(const std::string& job_key);

 private:
  struct Op {
    LauncherJob job;
    bool restart = false;
    std::string request;
    std::string reason;
    // A probe: the pod, its IP and the report it answers (probe_pod empty: not a probe).
    std::string probe_pod = {};
    std::string probe_ip = {};
    uint64_t probe_report = 0;
  };
  struct Watch {
    LauncherJob job;
    Clock::Steady next;
    Clock::Steady expires;
  };
  void Loop();
  void Run(const Op& op);
  void RunProbe(const Op& op);
  // Queues the polls of watched jobs that are due; returns when the next one is. Under mu_.
  Clock::Steady QueueDueWatches(Clock::Steady now);
  std::chrono::milliseconds WatchInterval() const;  // under mu_
  StatusOr<protocol::ControlTarget> Target(const LauncherJob& job);

  kube::RestClient& client_;
  std::unique_ptr<LauncherControl> control_;
  const Clock& clock_;
  std::function<void(const std::string&)> changed_;
  std::chrono::milliseconds watch_interval_{0};  // 0: no watch

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;                                 // guarded by mu_
  std::set<std::string> polls_queued_;                   // job keys; guarded by mu_
  std::map<std::string, LauncherObservation> latest_;    // by job key; guarded by mu_
  // By job key: the job's uid and its rendezvous token. Guarded by mu_ (Forget drops it).
  std::map<std::string, std::pair<std::string, std::string>> tokens_;
  std::map<std::string, Watch> watches_;                 // by job key; guarded by mu_
  std::set<std::string> probes_queued_;                  // job|pod|report; guarded by mu_
  bool stopping_ = false;                                // guarded by mu_
  std::thread thread_;
};

}  // namespace lockstep::controller
