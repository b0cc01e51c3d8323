#include "operator/scheduler/cycle/assumed_pods.h"

namespace lockstep::scheduler {

void AssumedPods::Assume(const std::string& pod_key, const std::string& uid,
                         const std::string& node, const Resources& requests,
                         std::optional<BoundPod> bound) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry{uid, node, requests, false, {}, false, std::move(bound)};
  entries_[pod_key] = std::move(entry);
}

void AssumedPods::Confirm(const std::string& pod_key, Steady now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pod_key);
  if (it == entries_.end()) return;
  it->second.confirmed = true;
  it->second.confirmed_at = now;
}

void AssumedPods::Forget(const std::string& pod_key) {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.erase(pod_key);
}

void AssumedPods::AssumeCreate(const std::string& pod_key, const std::string& node,
                               const Resources& requests, std::optional<BoundPod> bound) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry entry{"", node, requests, false, {}, /*at_create=*/true, std::move(bound)};
  entries_[pod_key] = std::move(entry);
}

void AssumedPods::Created(const std::string& pod_key, const std::string& uid, Steady now) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pod_key);
  if (it == entries_.end() || !it->second.at_create) return;
  it->second.uid = uid;
  it->second.confirmed = true;
  it->second.confirmed_at = now;
}

void AssumedPods::Deleted(const std::string& pod_key, const std::string& uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pod_key);
  if (it != entries_.end() && it->second.at_create && it->second.uid == uid && !uid.empty()) {
    entries_.erase(it);
  }
}

void AssumedPods::ApplyTo(const std::unordered_map<std::string, PodPtr>& pods_by_key,
                          std::map<std::string, NodeInfo>& nodes, Steady now) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    auto pod = pods_by_key.find(it->first);
    if (it->second.at_create) {
      // Not yet created (no uid) or created and not yet seen: the pod list does not count it.
      const bool seen = !it->second.uid.empty() && pod != pods_by_key.end() &&
                        pod->second->meta.uid == it->second.uid;
      const bool expired = it->second.confirmed && now - it->second.confirmed_at > ttl_;
      if (seen || expired) {
        it = entries_.erase(it);
        continue;
      }
      if (auto node = nodes.find(it->second.node); node != nodes.end()) {
        AddBoundPod(node->second, it->second.requests);
        if (it->second.bound) node->second.pods.push_back(*it->second.bound);
      }
      ++it;
      continue;
    }
    // Gone, bound, or replaced by a new pod of the same name (then the assumed one is gone).
    const bool caught_up = pod == pods_by_key.end() || !pod->second->node_name.empty() ||
                           pod->second->meta.uid != it->second.uid;
    const bool expired = it->second.confirmed && now - it->second.confirmed_at > ttl_;
    // An entry still unconfirmed is in flight: the pod list may be older than the assume.
    if ((caught_up && it->second.confirmed) || expired) {
      it = entries_.erase(it);
      continue;
    }
    if (caught_up) {  // the pod list already counts it (or it is gone): do not count twice
      ++it;
      continue;
    }
    if (auto node = nodes.find(it->second.node); node != nodes.end()) {
      AddBoundPod(node->second, it->second.requests);
      if (it->second.bound) node->second.pods.push_back(*it->second.bound);
    }
    ++it;
  }
}

bool AssumedPods::Contains(const std::string& pod_key, const std::string& uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(pod_key);
  return it != entries_.end() && it->second.uid == uid;
}

size_t AssumedPods::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace lockstep::scheduler
