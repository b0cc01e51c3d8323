#pragma once
// Expectations: the writes this controller issued for a job and has not yet seen come back
// through its informers. While a job has outstanding expectations its cached pods are stale, so
// the reconciler must not create or delete pods for it (a stale cache would otherwise create a
// duplicate or delete twice). Creations are tracked by pod name (names are deterministic), and
// deletions by pod UID, so an unrelated event can never satisfy an expectation by accident.
//
// Expectations expire after a TTL (5 minutes, like the Kubernetes Job controller) so an event
// lost for good cannot wedge a job. Thread-safe.

#include <chrono>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace lockstep::controller {

inline constexpr std::chrono::minutes kExpectationsTtl{5};

class Expectations {
 public:
  explicit Expectations(const Clock& clock = RealClock::Get(),
                        std::chrono::nanoseconds ttl = kExpectationsTtl);

  // Raise BEFORE issuing the writes.
  void ExpectCreations(const std::string& job_key, const std::vector<std::string>& pod_names);
  void ExpectDeletions(const std::string& job_key, const std::vector<std::string>& pod_uids);
  // From informer events, or from a write that failed (it will never be observed).
  void CreationObserved(const std::string& job_key, const std::string& pod_name);
  void DeletionObserved(const std::string& job_key, const std::string& pod_uid);

  // True when nothing is outstanding for the job, or its expectations have expired.
  bool Satisfied(const std::string& job_key) const;
  // Drops the job's expectations (the job was deleted).
  void Forget(const std::string& job_key);
  // Whether this controller issued the deletion of the pod with `pod_uid` within the TTL, observed
  // or not: a pod it deleted itself is no news of a failure (gone_pods.h). Kept apart from the
  // pending deletions, which a deletionTimestamp already clears.
  bool DeletedByUs(const std::string& pod_uid) const;

 private:
  struct Pending {
    std::set<std::string> creations;
    std::set<std::string> deletions;
    Clock::Steady raised_at{};
  };

  const Clock& clock_;
  const std::chrono::nanoseconds ttl_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Pending> pending_;  // guarded by mu_
  // Every deletion issued within the TTL: uid -> when, and the same in issue order for pruning.
  std::unordered_map<std::string, Clock::Steady> issued_deletions_;  // guarded by mu_
  std::deque<std::pair<Clock::Steady, std::string>> issue_order_;    // guarded by mu_
};

}  // namespace lockstep::controller
