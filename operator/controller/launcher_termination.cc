#include "operator/controller/launcher_termination.h"

#include <algorithm>

namespace lockstep::controller {

nlohmann::json ParseLauncherTermination(const std::string& message) {
  if (message.empty() || message.front() != '{') return nullptr;
  nlohmann::json m = nlohmann::json::parse(message, nullptr, /*allow_exceptions=*/false);
  return m.is_object() ? m : nlohmann::json();
}

int32_t TerminationCount(const std::string& message, const char* field) {
  const nlohmann::json m = ParseLauncherTermination(message);
  if (m.is_null()) return 0;
  auto it = m.find(field);
  if (it == m.end() || !it->is_number_integer()) return 0;
  return std::max(0, it->get<int32_t>());
}

}  // namespace lockstep::controller
