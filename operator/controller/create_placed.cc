#include "operator/controller/create_placed.h"

#include "operator/api/children.h"

namespace lockstep::controller {
namespace {

CreatePathChoice Unplaced(std::string why) { return {CreatePath::kUnplaced, std::move(why)}; }

std::string AttemptLabel(const nlohmann::json& pod) {
  const nlohmann::json* labels = nullptr;
  if (pod.contains("metadata") && pod["metadata"].contains("labels")) {
    labels = &pod["metadata"]["labels"];
  }
  if (labels == nullptr || !labels->contains(std::string(api::kLabelAttempt))) return "";
  const nlohmann::json& v = (*labels)[std::string(api::kLabelAttempt)];
  return v.is_string() ? v.get<std::string>() : "";
}

}  // namespace

CreatePathChoice ChooseCreatePath(const api::TrainingJob& job,
                                  const std::vector<kube::Pod>& observed,
                                  const std::vector<nlohmann::json>& creates) {
  if (creates.empty()) return Unplaced("nothing to create");
  const std::string attempt = std::to_string(job.status.attempt);
  for (const kube::Pod& pod : observed) {
    // An older attempt's pods (terminating after a restart) still hold their nodes, and the
    // scheduler counts them; a pod without the label is of no known attempt: treated as this.
    auto it = pod.meta.labels.find(std::string(api::kLabelAttempt));
    if (it == pod.meta.labels.end() || it->second == attempt) {
      return Unplaced("pods of the current attempt exist (a refill, a resize or a spare)");
    }
  }
  for (const nlohmann::json& pod : creates) {
    if (AttemptLabel(pod) != attempt) return Unplaced("a pod of another attempt");
    if (!pod.contains("spec")) return Unplaced("a pod without a spec");
    const nlohmann::json& spec = pod["spec"];
    if (spec.contains("nodeName") && spec["nodeName"].is_string() &&
        !spec["nodeName"].get<std::string>().empty()) {
      return Unplaced("a pod placed already");
    }
    // The apiserver refuses a pod with both: gates are a scheduler's business (Kueue's TAS, a
    // user's own gate), and a gated pod waits for them to be lifted.
    if (spec.contains("schedulingGates") && spec["schedulingGates"].is_array() &&
        !spec["schedulingGates"].empty()) {
      return Unplaced("a pod with scheduling gates");
    }
  }
  return {CreatePath::kPlaced, ""};
}

}  // namespace lockstep::controller
