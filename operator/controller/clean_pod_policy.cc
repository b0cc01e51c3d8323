#include "operator/controller/clean_pod_policy.h"

namespace lockstep::controller {

std::vector<PodDeletion> PodsToClean(api::CleanPodPolicy policy,
                                     const std::vector<kube::Pod>& pods) {
  std::vector<PodDeletion> out;
  if (policy == api::CleanPodPolicy::kNone) return out;
  for (const kube::Pod& pod : pods) {
    if (pod.meta.deletion_timestamp) continue;
    if (policy == api::CleanPodPolicy::kRunning && pod.IsTerminal()) continue;
    out.push_back({pod.meta.name, pod.meta.uid, std::nullopt});
  }
  return out;
}

std::vector<PodDeletion> ActivePods(const std::vector<kube::Pod>& pods) {
  return PodsToClean(api::CleanPodPolicy::kRunning, pods);
}

}  // namespace lockstep::controller
