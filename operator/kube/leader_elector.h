#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, following client-go's algorithm with one
// refinement (docs/kube-client.md, "Leader election"):
//  - a candidate takes the Lease when it is free, or when its record (holder, renewTime) has not
//    changed for lease_duration on the candidate's own monotonic clock. client-go starts that
//    interval when the candidate *observed* the record, which is up to one poll late; here it
//    starts at the record's renewTime, moved onto the monotonic clock through the candidate's
//    wall clock, but never more than MaxBackdate() before the observation. So a SIGKILLed
//    leader's lease is taken when it expires, and whatever the wall clocks say, a candidate is
//    at most MaxBackdate() early, which the old leader's stop bound below leaves room for. A
//    candidate polls at least every MaxBackdate() (so it dates the last record exactly) and
//    sleeps until the computed expiry rather than to its next poll;
//  - the leader renews every retry_period; if no renewal succeeds within renew_deadline it stops
//    leading at once: OnStoppedLeading runs and IsLeader() turns false at most renew_deadline +
//    the request timeout after its last successful renewal began, before the Lease can expire
//    for others (renew_deadline + timeout + MaxBackdate() <= lease_duration);
//  - writes are optimistic (resourceVersion), so two candidates never both win one round;
//  - fencing: MayWrite() is true only while the lease is certainly still this process's, by its
//    own monotonic clock: less than renew_deadline since its last successful renewal began. A
//    leader that was paused (SIGSTOP, a frozen VM) past its lease wakes with MayWrite() false,
//    before its elector thread has noticed anything, and lockstep-operator sends none of its
//    writes while it is false (RestOptions::write_fence), so the new leader is never overwritten.
// leader_election_master_status{name} is 1 while leading, else 0.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/metrics.h"
#include "operator/kube/rest_client.h"

namespace lockstep::kube {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. "<pod name>_<random>"
  std::chrono::milliseconds lease_duration{std::chrono::seconds(15)};
  std::chrono::milliseconds renew_deadline{std::chrono::seconds(10)};
  std::chrono::milliseconds retry_period{std::chrono::seconds(2)};
  // On a requested stop, clear the holder so a standby takes over without waiting.
  bool release_on_cancel = true;
};

// client-go's rule: lease_duration > renew_deadline > 1.2 * retry_period, all positive.
Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

// The elector's per-request timeout: retry_period, at least 1 s.
std::chrono::milliseconds LeaderElectionRequestTimeout(const LeaderElectionConfig& config);

// How far before its observation a candidate may date an observed record: retry_period, but no
// more than lease_duration - renew_deadline - request timeout (the time by which the old leader
// has certainly stopped), and not negative. 2 s for client-go's 15/10/2 s timings.
std::chrono::milliseconds MaxBackdate(const LeaderElectionConfig& config);

// When, on the candidate's monotonic clock, the lease of a record began: `seen_at` (when the
// record was first seen, at `seen_wall` on the candidate's wall clock) moved back by the record's
// age seen_wall - renew_time, clamped to [0, max_backdate]. A renewTime from the future (the
// holder's clock ahead) therefore counts from the observation, like client-go, and one that looks
// too old (slow polling, or the candidate's clock ahead) counts from max_backdate earlier.
Clock::Steady LeaseRecordStart(Clock::Steady seen_at, Clock::Wall seen_wall,
                               Clock::Wall renew_time, std::chrono::milliseconds max_backdate);

struct LeaderCallbacks {
  // Run on the elector's thread; must return promptly (start workers, don't run them).
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& identity)> on_new_leader;  // optional
};

class LeaderElector {
 public:
  // Uses its own RestClient over `transport` without client-side throttling, without retries
  // and with a request timeout of retry_period (at least 1 s), so a hung request cannot hold
  // leadership much past the renew deadline.
  LeaderElector(std::shared_ptr<Transport> transport, LeaderElectionConfig config,
                LeaderCallbacks callbacks, KubeMetrics* metrics = nullptr,
                const Clock& clock = RealClock::Get());

  // Blocks: campaigns until it leads, leads until the lease is lost or Stop() is called, then
  // returns (after OnStoppedLeading if it led). Call at most once.
  void Run();
  // Makes Run() return soon; thread-safe.
  void Stop();

  bool IsLeader() const { return leader_.load(); }
  // True while leading and less than renew_deadline has passed since the start of the last
  // successful acquire or renewal (on the monotonic clock, which runs on while the process is
  // stopped). Thread-safe and cheap: checked before every write the operator sends.
  bool MayWrite() const;
  std::string ObservedLeader() const;

 private:
  // One acquire-or-renew round; true when this candidate holds the Lease afterwards. Writes
  // nothing once the steady clock has reached `no_write_after` (a leader's renew deadline), so a
  // round ends at most one request timeout after that.
  bool TryAcquireOrRenew(Clock::Steady no_write_after = Clock::Steady::max());
  StatusOr<bool> TryUpdate(nlohmann::json lease, bool ours);
  // Records holder and renewTime; on a change, restarts the lease interval (LeaseRecordStart).
  void Observe(const std::string& holder, const std::string& renew_time);
  void Release();
  bool SleepFor(std::chrono::milliseconds d);  // false when stopped
  // Renews until the lease is lost or Stop(); true when Stop() ended it. `acquired` is when the
  // acquiring attempt began.
  bool Lead(Clock::Steady acquired);
  // MayWrite() holds until renew_deadline after `renewed` (the start of a successful attempt).
  void ExtendWrites(Clock::Steady renewed);
  std::chrono::milliseconds CampaignDelay();
  void SetLeader(bool leading);

  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const Clock& clock_;
  RestClient client_;
  prometheus::Gauge* status_gauge_ = nullptr;
  const std::chrono::milliseconds max_backdate_;
  Backoff jitter_;

  std::atomic<bool> leader_{false};
  // Steady-clock ticks (time_since_epoch) until which MayWrite() holds.
  std::atomic<Clock::Steady::rep> writes_until_{0};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                  // guarded by mu_
  std::string observed_holder_;        // guarded by mu_
  std::string observed_renew_time_;    // guarded by mu_
  Clock::Steady record_start_{};       // guarded by mu_; LeaseRecordStart of the observed record
};

}  // namespace lockstep::kube
