#pragma once
// LauncherMonitor: the operator's asynchronous line to each running job's launchers. The
// reconciler never waits on the network: it asks for a poll (Status) or a Restart, and reads the
// latest answer when it plans (Observed::launchers). One thread carries the requests out through
// a LauncherControl, each bounded by the control's deadline (1 s), fetches the job's rendezvous
// token from its Secret once per job (kept in memory, never logged), and calls the changed
// handler (the controller enqueues the job) when an answer differs from the one before.
//
// Answers belong to one worker-0 pod (its uid): a new attempt's pod starts a new server with
// fresh counters, and Latest() only returns the answer for the pod the caller names.
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
};

class LauncherMonitor {
 public:
  LauncherMonitor(kube::RestClient& client, std::unique_ptr<LauncherControl> control,
                  const Clock& clock = RealClock::Get());
  ~LauncherMonitor();

  // Before Start().
  void SetChangedHandler(std::function<void(const std::string& job_key)> handler);
  void Start();
  void Stop();

  // Queue a Status request (at most one queued per job).
  void Poll(const LauncherJob& job);
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
  };
  void Loop();
  void Run(const Op& op);
  StatusOr<protocol::ControlTarget> Target(const LauncherJob& job);

  kube::RestClient& client_;
  std::unique_ptr<LauncherControl> control_;
  const Clock& clock_;
  std::function<void(const std::string&)> changed_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;                                 // guarded by mu_
  std::set<std::string> polls_queued_;                   // job keys; guarded by mu_
  std::map<std::string, LauncherObservation> latest_;    // by job key; guarded by mu_
  // By job key: the job's uid and its rendezvous token. Guarded by mu_ (Forget drops it).
  std::map<std::string, std::pair<std::string, std::string>> tokens_;
  bool stopping_ = false;                                // guarded by mu_
  std::thread thread_;
};

}  // namespace lockstep::controller
