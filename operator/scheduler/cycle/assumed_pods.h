#pragma once
// Pods the scheduler has placed (phase 4) whose binding the informer has not shown yet. Each
// cycle adds them to the snapshot so a cycle that runs before the watch catches up does not
// hand the same capacity out twice. An entry is dropped when the pod list the cycle works from
// shows the pod bound or gone, when its bind failed (Forget), or `ttl` after the bind succeeded
// (a safety net should a watch event be lost; the informer's re-list repairs the cache). A pod
// recreated under the same name (a restart reuses pod names) is a different pod: entries carry
// the uid, and a pod with another uid neither is assumed nor keeps the old entry alive.
// Pods placed at create (create_placement.h) are assumed before they exist: such an entry
// (AssumeCreate) counts while the pod list does not show the pod, since the pod list cannot
// count a pod it has not seen; once the create succeeded (Created, with the new pod's uid) it is
// dropped when a pod list given to ApplyTo shows that uid, when the informer delivers the pod's
// deletion (Deleted), or `ttl` after the create (should a watch event be lost). The informer's
// add or update is not enough: a cycle's pod list is taken before its snapshot is built, and a
// pod the informer delivers in between is in neither the list nor, had its entry been dropped
// then, the assumed pods (under load the chaos tier saw a node hold 9 of 8 GPUs so).
// Thread-safe: bind workers confirm and forget, the cycle thread applies.

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "operator/scheduler/cycle/gangs.h"
#include "operator/scheduler/node_info.h"
#include "operator/scheduler/resources.h"

namespace lockstep::scheduler {

class AssumedPods {
 public:
  using Steady = std::chrono::steady_clock::time_point;

  explicit AssumedPods(std::chrono::steady_clock::duration ttl = std::chrono::seconds(30))
      : ttl_(ttl) {}

  // `bound`: what the pod means to inter-pod constraints (convert.h's ToBoundPod), counted on
  // its node like its requests.
  void Assume(const std::string& pod_key, const std::string& uid, const std::string& node,
              const Resources& requests, std::optional<BoundPod> bound = std::nullopt);
  void Confirm(const std::string& pod_key, Steady now);
  void Forget(const std::string& pod_key);
  // A pod about to be created already bound to `node` (no uid yet), and its successful create.
  void AssumeCreate(const std::string& pod_key, const std::string& node,
                    const Resources& requests, std::optional<BoundPod> bound = std::nullopt);
  void Created(const std::string& pod_key, const std::string& uid, Steady now);
  // The informer delivered this pod's deletion: an entry placed at create for this uid is done,
  // whatever a pod list shows (a pod deleted before any cycle listed it would otherwise count
  // until the TTL; a list that still shows it counts it itself).
  void Deleted(const std::string& pod_key, const std::string& uid);

  // Counts every still-assumed pod on its node in `nodes` (by name) and drops the entries the
  // cycle's pod list (`pods_by_key`) has caught up with.
  void ApplyTo(const std::unordered_map<std::string, PodPtr>& pods_by_key,
               std::map<std::string, NodeInfo>& nodes, Steady now);

  // Whether this pod (key and uid) is assumed.
  bool Contains(const std::string& pod_key, const std::string& uid) const;
  size_t size() const;

 private:
  struct Entry {
    std::string uid;
    std::string node;
    Resources requests;
    bool confirmed = false;
    Steady confirmed_at{};
    bool at_create = false;  // AssumeCreate: counts until the pod list shows the pod
    std::optional<BoundPod> bound;
  };

  const std::chrono::steady_clock::duration ttl_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // guarded by mu_
};

}  // namespace lockstep::scheduler
