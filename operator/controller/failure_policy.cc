#include "operator/controller/failure_policy.h"

#include <algorithm>

#include "operator/api/enums.h"

namespace lockstep::controller {
namespace {

// The container whose termination explains the pod's failure: the first that exited non-zero,
// else the first that terminated at all.
const kube::ContainerStatus* CulpritContainer(const kube::Pod& pod, bool* is_trainer) {
  const kube::ContainerStatus* first_terminated = nullptr;
  for (size_t i = 0; i < pod.container_statuses.size(); ++i) {
    const kube::ContainerStatus& c = pod.container_statuses[i];
    if (c.state != "terminated") continue;
    if (c.exit_code.value_or(0) != 0) {
      *is_trainer = i == 0;
      return &c;
    }
    if (first_terminated == nullptr) {
      first_terminated = &c;
      *is_trainer = i == 0;
    }
  }
  return first_terminated;
}

std::string Describe(const kube::Pod& pod, const kube::ContainerStatus* c) {
  std::string out = "pod " + pod.meta.name + " failed";
  if (c != nullptr) {
    out += ": container " + c->name;
    if (c->exit_code) out += " exited with code " + std::to_string(*c->exit_code);
    if (c->signal) out += " (signal " + std::to_string(*c->signal) + ")";
    if (!c->reason.empty()) out += " (" + c->reason + ")";
    if (!c->message.empty()) out += ": " + c->message;
  } else if (!pod.reason.empty() || !pod.message.empty()) {
    out += ": " + pod.reason + (pod.message.empty() ? "" : ": " + pod.message);
  }
  return out;
}

}  // namespace

const api::FailureRule* MatchFailureRule(const std::vector<api::FailureRule>& rules,
                                         const std::string& container, bool is_trainer,
                                         int32_t exit_code) {
  for (const api::FailureRule& rule : rules) {
    const api::ExitCodeMatcher& m = rule.on_exit_codes;
    const bool container_matches =
        m.container_name ? *m.container_name == container : is_trainer;
    if (!container_matches) continue;
    const bool listed = std::find(m.values.begin(), m.values.end(), exit_code) != m.values.end();
    if (listed == (m.op == api::ExitCodeOperator::kIn)) return &rule;
  }
  return nullptr;
}

FailureDecision DecideFailure(const api::TrainingJobSpec& spec,
                              const std::vector<kube::Pod>& pods) {
  for (const kube::Pod& pod : pods) {
    if (pod.phase != "Failed" || pod.meta.deletion_timestamp) continue;
    bool is_trainer = false;
    const kube::ContainerStatus* c = CulpritContainer(pod, &is_trainer);
    FailureDecision d{FailureAction::kFailJob, "PodFailed", Describe(pod, c)};
    if (!pod.reason.empty() && c == nullptr) d.reason = "Pod" + pod.reason;  // e.g. PodEvicted
    if (c != nullptr && c->exit_code) {
      const api::FailureRule* rule =
          MatchFailureRule(spec.failure_policy.rules, c->name, is_trainer, *c->exit_code);
      if (rule != nullptr && rule->action == api::RuleAction::kFailJob) {
        d.reason = "FailJobRule";
        d.message += "; failure rule " + (rule->name.empty() ? "#" : rule->name) +
                     " says FailJob";
      } else {
        d.message += "; restarts are not implemented yet, so the job fails";
      }
    }
    return d;
  }
  return {};
}

}  // namespace lockstep::controller
