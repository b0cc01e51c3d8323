#pragma once
// Phases 5 and 6 of the cycle for one placed gang: bind every pod concurrently (one pods/binding
// POST per pod on the bind pool), and when the last answer is in, either the gang is whole or
// it is undone: every pod that is, or may be, bound is deleted (the controller recreates them)
// so no partial gang survives to hold GPUs. A bind that failed with NotFound or Conflict left
// its pod unbound (gone, or bound by someone else / a different pod of that name); any other
// error is ambiguous, so that pod is deleted too. A gang with volume writes (volume_binding.h)
// gets them first, one after the other on one pool thread; when one fails no pod is bound, and
// the gang is only forgotten (its pods stay, unbound, and are placed again). Thread-safe.

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/assumed_pods.h"
#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/cycle/thread_pool.h"
#include "operator/scheduler/cycle/volume_binding.h"

namespace lockstep::scheduler {

struct GangBind {
  CollectedGang gang;
  std::vector<std::pair<PodPtr, std::string>> targets;  // pod -> node, gang order
  std::vector<VolumeWrite> volume_writes;               // made before any bind
  Clock::Steady queued_since{};
  std::string placed_message;  // the Scheduled=True message once every bind succeeded
  int64_t cycle = 0;           // the cycle that placed it (orders its condition write)
};

struct BindOutcome {
  Status error;      // the first failure; OK when every pod is bound
  int deleted = 0;   // pods deleted by the undo
};

class Binder {
 public:
  using Done = std::function<void(const GangBind&, const BindOutcome&)>;

  Binder(kube::RestClient& client, ThreadPool& pool, AssumedPods& assumed, const Clock& clock);

  // Returns at once; `done` runs on a pool thread after the gang's last bind (and any undo).
  void Bind(std::shared_ptr<const GangBind> gang, Done done);

  // The pods/binding body: target node, and the pod's uid as a precondition so a pod recreated
  // under the same name is never bound by a decision made for its predecessor.
  static nlohmann::json BindingBody(const kube::Pod& pod, const std::string& node);

 private:
  struct Pending;
  void BindAll(const std::shared_ptr<Pending>& pending);
  void BindOne(const std::shared_ptr<Pending>& pending, size_t i);
  void Finish(const Pending& pending);
  int Undo(const Pending& pending);

  kube::RestClient& client_;
  ThreadPool& pool_;
  AssumedPods& assumed_;
  const Clock& clock_;
};

}  // namespace lockstep::scheduler
