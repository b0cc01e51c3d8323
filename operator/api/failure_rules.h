#pragma once
// spec.failurePolicy.rules as functions: which rule an exit code matches, and which exit codes of
// the trainer end the job. The controller judges failed pods with the first; the launchers learn
// the second (LOCKSTEP_FAIL_EXIT_CODES) so they never restart a permanent error in place.

#include <string>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api {

// The rule of `rules` matching `exit_code` of `container` (first match wins), or null.
// `is_trainer`: the container is the pod's first (rules without containerName apply to it).
const FailureRule* MatchFailureRule(const std::vector<FailureRule>& rules,
                                    const std::string& container, bool is_trainer,
                                    int32_t exit_code);

// The trainer's exit codes 1..255 whose first matching rule is FailJob, as "2,3,10-12" ("" for
// none): the launcher's --fail-exit-codes.
std::string FailJobExitCodes(const std::vector<FailureRule>& rules, const std::string& trainer);

}  // namespace lockstep::api
