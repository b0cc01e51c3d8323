#pragma once
// GonePods: the last state of the job pods someone other than the controller deleted (the pod
// informer's delete, Expectations::DeletedByUs false), kept a short while so a pass can still
// read why a member of a running gang is missing. A pod the API server removes at once (a kwok
// node, `--grace-period=0`, a launcher that stops in milliseconds) may be gone from the cache
// before any pass saw it on a lost node or marked DisruptionTarget; without its last state the
// plan would refill the attempt under the same number and the scheduler would then undo the
// half-bound gang (docs/failures.md, "A member gone from a running gang").
//
// Only what the failure policy reads is kept (identity, labels, owner, node, phase, reasons,
// conditions, container statuses): a few hundred bytes a pod. Bounded: entries expire after
// `memory`, a job keeps at most kGonePerJob (the newest), all jobs together at most kGoneTotal
// (the oldest dropped first); each Record expires what is due in all jobs. Forgotten with the
// job. In memory only: after an operator restart the plan has no such evidence and refills, as
// before. Thread-safe: the informer records, the workers read.

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

inline constexpr std::chrono::minutes kGoneMemory{2};
inline constexpr size_t kGonePerJob = 256;
inline constexpr size_t kGoneTotal = 16384;

class GonePods {
 public:
  explicit GonePods(const Clock& clock = RealClock::Get(),
                    std::chrono::nanoseconds memory = kGoneMemory);

  // A pod of `job_key` was deleted; `last` is its final state as the informer held it. Pods that
  // held no node or had finished are not kept (no running member was lost with them).
  void Record(const std::string& job_key, const kube::Pod& last);
  // The pods of `job_key` deleted within the memory, oldest first; the caller filters by owner
  // and attempt.
  std::vector<kube::Pod> For(const std::string& job_key) const;
  void Forget(const std::string& job_key);
  size_t size() const;

 private:
  struct Entry {
    Clock::Steady at;
    kube::Pod pod;
  };
  // Drops the oldest entry of all jobs while it is older than the memory, or while more than
  // kGoneTotal are kept (mu_ held).
  void Expire(Clock::Steady now);

  const Clock& clock_;
  const std::chrono::nanoseconds memory_;
  mutable std::mutex mu_;
  std::map<std::string, std::deque<Entry>> by_job_;  // guarded by mu_
  // Every Record in time order: which job's front entry is the oldest of all.
  std::deque<std::pair<Clock::Steady, std::string>> order_;  // guarded by mu_
  size_t total_ = 0;                                         // guarded by mu_
};

// The parts of a pod the failure policy reads (exposed for the unit test).
kube::Pod FailureFacts(const kube::Pod& pod);

}  // namespace lockstep::controller
