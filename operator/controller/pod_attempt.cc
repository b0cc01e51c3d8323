#include "operator/controller/pod_attempt.h"

#include <charconv>
#include <string>

#include "operator/api/children.h"

namespace lockstep::controller {

int32_t PodAttempt(const kube::Pod& pod) {
  auto it = pod.meta.labels.find(std::string(api::kLabelAttempt));
  if (it == pod.meta.labels.end()) return 0;
  int32_t value = 0;
  const std::string& s = it->second;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() ? value : 0;
}

AttemptPods SplitByAttempt(const std::vector<kube::Pod>& pods, int32_t attempt) {
  AttemptPods out;
  for (const kube::Pod& pod : pods) {
    (PodAttempt(pod) == attempt ? out.current : out.stale).push_back(pod);
  }
  return out;
}

}  // namespace lockstep::controller
