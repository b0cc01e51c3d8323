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

std::string StderrTailForPeople(const std::vector<std::string>& tail) {
  if (tail.empty()) return "";
  // The last lines carry the error; keep the message short enough for a condition.
  constexpr size_t kMaxLines = 8, kMaxBytes = 1500;
  std::string lines;
  for (size_t i = tail.size() > kMaxLines ? tail.size() - kMaxLines : 0; i < tail.size(); ++i) {
    lines += "\n  " + tail[i];
  }
  if (lines.size() > kMaxBytes) lines = "\n  ..." + lines.substr(lines.size() - kMaxBytes);
  return "; last stderr lines:" + lines;
}

}  // namespace lockstep::controller
