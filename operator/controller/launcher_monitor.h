#pragma once
// LauncherMonitor: the operator's asynchronous line to each running job's launchers. The
// reconciler never waits on the network: it asks for a poll (Status), a Restart or a Probe, and
// reads the latest answer when it plans (Observed::launchers). A fixed pool of kLauncherWorkers
// threads carries the requests out through a LauncherControl, each bounded by the control's
// deadline (1 s), fetches the job's rendezvous token from its Secret once per job (kept in
// memory, never logged), and calls the changed handler (the controller enqueues the job) when an
// answer differs from the one before.
//
// No head-of-line blocking (issue 44): which request runs next is LauncherDispatch's
// (launcher_dispatch.h, pure): at most one request in flight per job; the requests of jobs whose
// worker-0 missed its last deadline (accepts and never answers, or its node died) and the probes
// each hold at most kLauncherSilentSlots / kLauncherProbeSlots workers, so the rest always serve
// jobs that answer: a healthy job's Status, Restart and probe are never queued behind a silent
// job's requests, and a silent job holds a worker no longer than its own deadline. A request that
// ends in DeadlineExceeded or takes kSlowAnswer or more counts as silent.
//
// Answers belong to one worker-0 pod (its uid): a new attempt's pod starts a new server with
// fresh counters, and Latest() only returns the answer for the pod the caller names. The lost
// members an answer reported (status.lost) are kept when a later poll gets no answer: the server
// goes with node 0's launcher, which exits when a loss leaves it no in-place restart.
//
// Cadence (SetWatchInterval; the controller sets kWatchInterval, off by default): a job the plan
// polls is watched: the monitor's timer thread queues a poll of it again every interval (more
// rarely with many jobs: one poll per kWatchSpacing at most, so a sweep of N jobs takes N x 10 ms
// and the load stays bounded; a poll already queued is not queued twice) until kWatchExpiry
// passes without the plan asking again, and wakes the job only when an answer changes. So a lost
// member the launchers report reaches the plan within about 2 s, not the plan's 10 s poll, while
// a quiet job costs no reconcile pass. Silent jobs keep their cadence, in their own lane.
//
// Once per interval (issue 44): a watched job whose Status answer changed within the last
// interval is not asked again by Poll; the watch asks when due. Each changed answer wakes a pass,
// and every pass of a running gang asks for a poll, so a worker-0 whose answer changes every time
// (hostile, or broken) was otherwise asked back to back: about 2 requests/s per job instead of one
// per interval. Everything else asks at once: a Poll after an unchanged answer (the pass was woken
// by a pod or the job: a pod failing, a spare to promote), the first poll of a new worker-0 pod,
// and the first after a Restart (which forgets the old answer).
//
// Thread safety: every public method may be called from any thread; the changed handler is
// called from the workers, never under the monitor's lock.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/launcher_dispatch.h"
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
  // What the job's size lets its worker-0 report (LauncherBounds): an answer beyond it is
  // refused whole. Unset: only the protocol's own ranges apply.
  std::optional<protocol::ControlBounds> bounds = std::nullopt;
};

inline constexpr std::chrono::seconds kWatchInterval{2};
inline constexpr std::chrono::milliseconds kWatchSpacing{10};
inline constexpr std::chrono::seconds kWatchExpiry{25};

// The pool (launcher_dispatch.h "Lanes"): 32 threads, mostly asleep in poll(2); silent jobs and
// probes hold at most 8 each, so 16 always serve jobs that answer. A node's death costs each job
// whose worker-0 ran there one deadline in the responsive lane (its first unanswered request)
// before its requests move to the silent lane.
inline constexpr size_t kLauncherWorkers = 32;
inline constexpr size_t kLauncherSilentSlots = 8;
inline constexpr size_t kLauncherProbeSlots = 8;
// A control request this slow counts as unanswered (LauncherOutcome::kSilent) even if an answer
// came: a worker-0 that answers just inside the deadline costs a worker as much as a silent one.
inline constexpr std::chrono::milliseconds kSlowAnswer{500};

class LauncherMonitor {
 public:
  LauncherMonitor(kube::RestClient& client, std::unique_ptr<LauncherControl> control,
                  const Clock& clock = RealClock::Get(),
                  DispatchLimits limits = {kLauncherWorkers, kLauncherSilentSlots,
                                           kLauncherProbeSlots});
  ~LauncherMonitor();

  // Before Start().
  void SetChangedHandler(std::function<void(const std::string& job_key)> handler);
  void SetWatchInterval(std::chrono::milliseconds interval) { watch_interval_ = interval; }
  void Start();
  void Stop();

  // Queue a Status request (at most one queued per job; none when the job's answer changed
  // within the watch interval, above), and watch the job (above).
  void Poll(const LauncherJob& job);
  // Probe `pod` at `ip` (the rendezvous port) for the report `report_lost_unix_ms`; the answer
  // lands in Latest(job)->probes[pod] (at most one queued per pod and report).
  void Probe(const LauncherJob& job, const std::string& pod, const std::string& ip,
             uint64_t report_lost_unix_ms);
  // Queue a Restart for `request` (the annotation value); the plan polls for what follows.
  void Restart(const LauncherJob& job, const std::string& request, const std::string& reason);
  // The latest answers for the job's pod `pod_uid`, if any.
  std::optional<LauncherObservation> Latest(const std::string& job_key,
                                            const std::string& pod_uid) const;
  void Forget(const std::string& job_key);

 private:
  struct Op {
    LauncherJob job;
    LauncherOpKind kind = LauncherOpKind::kStatus;
    std::string request;
    std::string reason;
    // A probe: the pod, its IP and the report it answers.
    std::string probe_pod = {};
    std::string probe_ip = {};
    uint64_t probe_report = 0;
  };
  struct Watch {
    LauncherJob job;
    Clock::Steady next;
    Clock::Steady expires;
    // When a Status answer from job.pod_uid last differed from the one before (it woke a pass).
    std::optional<Clock::Steady> changed = std::nullopt;
  };
  void Work();       // a worker: takes requests from dispatch_ until Stop
  void WatchLoop();  // the timer: queues the watched jobs' polls when due
  void Queue(Op op, const std::string& probe_key = "");  // under mu_
  // Runs the request; whether it ended in time (a probe always does).
  LauncherOutcome Run(const Op& op);
  void RunProbe(const Op& op);
  // Queues the polls of watched jobs that are due; returns when the next one is. Under mu_.
  Clock::Steady QueueDueWatches(Clock::Steady now);
  std::chrono::milliseconds WatchInterval() const;  // under mu_
  StatusOr<protocol::ControlTarget> Target(const LauncherJob& job);

  kube::RestClient& client_;
  std::unique_ptr<LauncherControl> control_;  // called from every worker at once
  const Clock& clock_;
  const DispatchLimits limits_;
  std::function<void(const std::string&)> changed_;
  std::chrono::milliseconds watch_interval_{0};  // 0: no watch

  mutable std::mutex mu_;
  std::condition_variable work_cv_;                    // a request may be runnable, or stopping_
  std::condition_variable watch_cv_;                   // a watch was added, or stopping_
  LauncherDispatch dispatch_;                          // guarded by mu_
  std::map<LauncherDispatch::OpId, Op> ops_;           // queued requests; guarded by mu_
  std::map<std::string, LauncherObservation> latest_;  // by job key; guarded by mu_
  // By job key: the job's uid and its rendezvous token. Guarded by mu_ (Forget drops it).
  std::map<std::string, std::pair<std::string, std::string>> tokens_;
  std::map<std::string, Watch> watches_;  // by job key; guarded by mu_
  bool stopping_ = false;                 // guarded by mu_
  std::vector<std::thread> workers_;
  std::thread watcher_;
};

}  // namespace lockstep::controller
