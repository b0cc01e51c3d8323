#include "operator/controller/startup_policy.h"

#include <algorithm>
#include <tuple>

#include "operator/api/conditions.h"

namespace lockstep::controller {
namespace {

struct Waiting {
  const kube::Pod* pod;
  const kube::ContainerStatus* container;
};

bool Active(const kube::Pod& pod) { return !pod.IsTerminal() && !pod.meta.deletion_timestamp; }

// The first failing container of `pod`, or null.
const kube::ContainerStatus* FailingContainer(const kube::Pod& pod) {
  auto failing = [](const kube::ContainerStatus& c) {
    return c.state == "waiting" && IsStartupFailureReason(c.reason);
  };
  if (pod.phase != "Running") {
    auto it = std::find_if(pod.init_container_statuses.begin(), pod.init_container_statuses.end(),
                           failing);
    if (it != pod.init_container_statuses.end()) return &*it;
  }
  auto it = std::find_if(pod.container_statuses.begin(), pod.container_statuses.end(), failing);
  return it == pod.container_statuses.end() ? nullptr : &*it;
}

bool NamedBefore(const kube::Pod& a, const kube::Pod& b) {
  return std::forward_as_tuple(a.meta.name.size(), a.meta.name) <
         std::forward_as_tuple(b.meta.name.size(), b.meta.name);
}

// One line, at most kMaxWaitingMessageBytes (then "..."): a newline or a tab from the cluster
// would break `kubectl get`'s table and the event's one-line message.
std::string OneLine(std::string text) {
  for (char& ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (u < 0x20 || u == 0x7f) ch = ' ';
  }
  return api::BoundedMessage(std::move(text), kMaxWaitingMessageBytes);
}

std::string Describe(const Waiting& w, size_t others) {
  std::string out = w.pod->meta.name + ": " + w.container->reason;
  if (!w.container->message.empty()) out += ": " + OneLine(w.container->message);
  out += " (container " + w.container->name + ")";
  if (others > 0) {
    out += "; " + std::to_string(others) + " more pod" + (others > 1 ? "s" : "") +
           " failing to start";
  }
  // Names are bounded by the API's validation of specs, not of pod status: a cap all the same.
  return api::BoundedMessage(std::move(out), kMaxStartupMessageBytes);
}

// A crash loop between two waits: a Pending pod with a container that restarted.
bool CrashLoopBetweenWaits(const std::vector<kube::Pod>& pods) {
  auto restarted = [](const std::vector<kube::ContainerStatus>& statuses) {
    return std::any_of(statuses.begin(), statuses.end(),
                       [](const kube::ContainerStatus& c) { return c.restart_count > 0; });
  };
  return std::any_of(pods.begin(), pods.end(), [&](const kube::Pod& pod) {
    return Active(pod) && (pod.phase.empty() || pod.phase == "Pending") &&
           (restarted(pod.init_container_statuses) || restarted(pod.container_statuses));
  });
}

}  // namespace

bool IsStartupFailureReason(std::string_view reason) {
  return std::find(std::begin(kStartupFailureReasons), std::end(kStartupFailureReasons),
                   reason) != std::end(kStartupFailureReasons);
}

std::optional<StartupFailure> FindStartupFailure(const std::vector<kube::Pod>& pods,
                                                 const api::Condition* previous) {
  std::optional<Waiting> first;
  size_t failing = 0;
  for (const kube::Pod& pod : pods) {
    if (!Active(pod)) continue;
    const kube::ContainerStatus* c = FailingContainer(pod);
    if (c == nullptr) continue;
    ++failing;
    if (!first || NamedBefore(pod, *first->pod)) first = Waiting{&pod, c};
  }
  if (first) return StartupFailure{first->container->reason, Describe(*first, failing - 1)};
  if (previous != nullptr && previous->status == api::ConditionStatus::kTrue &&
      CrashLoopBetweenWaits(pods)) {
    return StartupFailure{previous->reason, previous->message};
  }
  return std::nullopt;
}

}  // namespace lockstep::controller
