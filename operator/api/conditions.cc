#include "operator/api/conditions.h"

#include <algorithm>
#include <chrono>

namespace lockstep::api {

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const Condition& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == ConditionStatus::kTrue;
}

bool SetCondition(std::vector<Condition>* conditions, Condition condition, Time now) {
  // The API stores whole seconds; truncating here keeps a decoded copy equal to this one.
  now = std::chrono::floor<std::chrono::seconds>(now);
  for (Condition& existing : *conditions) {
    if (existing.type != condition.type) continue;
    const bool status_changed = existing.status != condition.status;
    condition.last_transition_time = status_changed ? now : existing.last_transition_time;
    const bool changed = status_changed || existing.reason != condition.reason ||
                         existing.message != condition.message ||
                         existing.observed_generation != condition.observed_generation;
    existing = std::move(condition);
    return changed;
  }
  condition.last_transition_time = now;
  conditions->push_back(std::move(condition));
  return true;
}

std::string BoundedMessage(std::string message, size_t max_bytes) {
  if (message.size() <= max_bytes) return message;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  return message + "...";
}

bool RemoveCondition(std::vector<Condition>* conditions, std::string_view type) {
  const auto it = std::remove_if(conditions->begin(), conditions->end(),
                                 [type](const Condition& c) { return c.type == type; });
  const bool removed = it != conditions->end();
  conditions->erase(it, conditions->end());
  return removed;
}

}  // namespace lockstep::api
