#pragma once
// Leader election on a coordination.k8s.io/v1 Lease, following client-go's algorithm:
//  - a candidate takes the Lease when it is free, or when its record (holder, renewTime) has not
//    changed for lease_duration as observed on the candidate's own monotonic clock (no trust in
//    other machines' wall clocks);
//  - the leader renews every retry_period; if no renewal succeeds within renew_deadline it stops
//    leading at once: OnStoppedLeading runs and IsLeader() turns false before the Lease can
//    expire for others (renew_deadline < lease_duration);
//  - writes are optimistic (resourceVersion), so two candidates never both win one round.
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
  std::string ObservedLeader() const;

 private:
  // One acquire-or-renew round; true when this candidate holds the Lease afterwards.
  bool TryAcquireOrRenew();
  StatusOr<bool> TryUpdate(nlohmann::json lease, bool ours);
  void Observe(const std::string& holder, const std::string& renew_time);
  void Release();
  bool SleepFor(std::chrono::milliseconds d);  // false when stopped
  std::chrono::milliseconds CampaignDelay();
  void SetLeader(bool leading);

  const LeaderElectionConfig config_;
  const LeaderCallbacks callbacks_;
  const Clock& clock_;
  RestClient client_;
  prometheus::Gauge* status_gauge_ = nullptr;
  Backoff jitter_;

  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                  // guarded by mu_
  std::string observed_holder_;        // guarded by mu_
  std::string observed_renew_time_;    // guarded by mu_
  Clock::Steady observed_at_{};        // guarded by mu_
};

}  // namespace lockstep::kube
