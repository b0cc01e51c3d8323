#include "launcher/supervisor/termination.h"

#include <fstream>
#include <nlohmann/json.hpp>

namespace lockstep::launcher::supervisor {

std::string TerminationJson(const TerminationReport& r) {
  std::vector<std::string> tail = r.stderr_tail;
  std::string message = r.message.substr(0, 1024);
  for (;;) {
    nlohmann::json j = {{"reason", r.reason},       {"attempt", r.attempt},
                        {"restartCount", r.restart_count}, {"nodeRank", r.node_rank},
                        {"rank", r.rank},           {"exitCode", r.exit_code},
                        {"signal", r.signal},       {"message", message},
                        {"stderrTail", tail}};
    if (r.requested_restarts > 0) j["requestedRestarts"] = r.requested_restarts;
    // Replace invalid UTF-8 (a child may write anything) instead of throwing.
    std::string out = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    if (out.size() <= kMaxTerminationBytes) return out;
    if (!tail.empty()) {
      tail.erase(tail.begin());
    } else {
      message.resize(message.size() / 2);
    }
  }
}

Status WriteTerminationLog(const std::string& path, const TerminationReport& report) {
  if (path.empty()) return Status::Ok();
  std::ofstream out(path, std::ios::trunc);
  if (!out) return UnavailableError("cannot open termination log " + path);
  out << TerminationJson(report);
  out.close();
  if (!out) return UnavailableError("cannot write termination log " + path);
  return Status::Ok();
}

}  // namespace lockstep::launcher::supervisor
