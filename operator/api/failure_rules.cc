#include "operator/api/failure_rules.h"

#include <algorithm>

namespace lockstep::api {

const FailureRule* MatchFailureRule(const std::vector<FailureRule>& rules,
                                    const std::string& container, bool is_trainer,
                                    int32_t exit_code) {
  for (const FailureRule& rule : rules) {
    const ExitCodeMatcher& m = rule.on_exit_codes;
    const bool container_matches = m.container_name ? *m.container_name == container : is_trainer;
    if (!container_matches) continue;
    const bool listed = std::find(m.values.begin(), m.values.end(), exit_code) != m.values.end();
    if (listed == (m.op == ExitCodeOperator::kIn)) return &rule;
  }
  return nullptr;
}

std::string FailJobExitCodes(const std::vector<FailureRule>& rules, const std::string& trainer) {
  auto fails = [&](int32_t code) {
    const FailureRule* rule = MatchFailureRule(rules, trainer, /*is_trainer=*/true, code);
    return rule != nullptr && rule->action == RuleAction::kFailJob;
  };
  std::string out;
  for (int32_t code = 1; code <= 255; ++code) {
    if (!fails(code)) continue;
    int32_t last = code;
    while (last < 255 && fails(last + 1)) ++last;
    out += (out.empty() ? "" : ",") + std::to_string(code);
    if (last > code) out += "-" + std::to_string(last);
    code = last;
  }
  return out;
}

}  // namespace lockstep::api
