#include "operator/controller/launcher_termination.h"

#include <optional>

#include "protocol/termination.h"

namespace lockstep::controller {

std::string DescribeTermination(const std::string& message) {
  const std::optional<protocol::TerminationMessage> m = protocol::DecodeTermination(message);
  if (!m) return message;
  // The launcher's own message already says "rank R exited with code C"; build it only when absent.
  std::string out = m->message;
  if (out.empty()) {
    if (m->rank >= 0) out = "rank " + std::to_string(m->rank) + " ";
    if (m->signal > 0) {
      out += "killed by signal " + std::to_string(m->signal);
    } else {
      out += "exited with code " + std::to_string(m->exit_code);
    }
  }
  if (m->restart_count > 0) {
    out += ", after " + std::to_string(m->restart_count) + " in-place restart" +
           (m->restart_count == 1 ? "" : "s");
  }
  return out + StderrTailForPeople(m->stderr_tail);
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
