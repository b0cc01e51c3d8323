#pragma once
// What to do about failed pods: the seam where the restart machinery (failurePolicy.maxRestarts,
// restartMode, backoff; a later issue) plugs in. Today every pod failure fails the job; the
// decision still evaluates spec.failurePolicy.rules (first match wins) so the message names the
// rule a restart would have followed, and the exit code, signal and reason of the failed pod.

#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

enum class FailureAction {
  kNone,     // no pod failed
  kFailJob,  // the job ends Failed
};

struct FailureDecision {
  FailureAction action = FailureAction::kNone;
  std::string reason;   // CamelCase, for the Failed condition and the event
  std::string message;  // names the pod, container, exit code or signal
};

FailureDecision DecideFailure(const api::TrainingJobSpec& spec,
                              const std::vector<kube::Pod>& pods);

// The rule of `rules` matching `exit_code` of `container` (first match wins), or null.
const api::FailureRule* MatchFailureRule(const std::vector<api::FailureRule>& rules,
                                         const std::string& container, bool is_trainer,
                                         int32_t exit_code);

}  // namespace lockstep::controller
