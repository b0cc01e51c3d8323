#include "tests/e2e/agent/pod_binder.h"

#include <algorithm>

#include "common/log.h"
#include "tests/e2e/agent/agent.h"
#include "tests/e2e/agent/pod_json.h"

namespace lockstep::e2e {

using nlohmann::json;

std::optional<std::string> ChooseNode(const json& pod, const std::vector<NodeChoice>& nodes) {
  const json selector = pod.value("spec", json::object()).value("nodeSelector", json::object());
  const NodeChoice* best = nullptr;
  for (const NodeChoice& node : nodes) {
    bool fits = true;
    for (auto it = selector.begin(); it != selector.end() && fits; ++it) {
      auto label = node.labels.find(it.key());
      fits = label != node.labels.end() && it.value().is_string() &&
             label->second == it.value().get<std::string>();
    }
    if (!fits) continue;
    if (best == nullptr || node.pods < best->pods ||
        (node.pods == best->pods && node.name < best->name)) {
      best = &node;
    }
  }
  if (best == nullptr) return std::nullopt;
  return best->name;
}

PodBinder::PodBinder(kube::RestClient& client, const std::vector<std::string>& namespaces)
    : client_(client) {
  for (const std::string& ns : namespaces) {
    kube::ReflectorOptions reflector;
    // Unbound pods for the default scheduler; a bound pod leaves the selection.
    reflector.field_selector = "spec.nodeName=,spec.schedulerName=default-scheduler";
    informers_.push_back(std::make_unique<kube::Informer<PodItem>>(client_, kube::resources::Pods(),
                                                                   ns, DecodePodItem, reflector));
  }
}

PodBinder::~PodBinder() {
  // Every watch is asked to end before any is waited for.
  for (const auto& informer : informers_) informer->RequestStop();
  for (const auto& informer : informers_) informer->Stop();
}

void PodBinder::Start() {
  for (const auto& informer : informers_) informer->Start();
}

void PodBinder::Tick(std::vector<NodeChoice> nodes) {
  for (const auto& informer : informers_) {
    for (const auto& pod : informer->store().List()) {
      const json& object = pod->object;
      if (!Str(object, "/spec/nodeName").empty() || pod->meta.deletion_timestamp) {
        continue;
      }
      std::optional<std::string> node = ChooseNode(object, nodes);
      if (!node) continue;  // nothing fits; a later Tick tries again
      const json binding = {{"apiVersion", "v1"},
                            {"kind", "Binding"},
                            {"metadata", {{"name", pod->meta.name}, {"uid", pod->meta.uid}}},
                            {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", *node}}}};
      StatusOr<json> bound = client_.CreateSubresource(
          kube::resources::Pods(), pod->meta.namespace_, pod->meta.name, "binding", binding);
      if (!bound.ok()) {
        // Already bound (a stale cache), or deleted meanwhile: the next Tick sees the truth.
        log::Warning(
            "cannot bind pod",
            {{"pod", pod->meta.Key()}, {"node", *node}, {"error", bound.status().ToString()}});
        continue;
      }
      log::Info("pod bound (as the default scheduler)",
                {{"pod", pod->meta.Key()}, {"node", *node}});
      for (NodeChoice& n : nodes) {
        if (n.name == *node) ++n.pods;
      }
    }
  }
}

}  // namespace lockstep::e2e
