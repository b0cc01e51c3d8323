#include "launcher/supervisor/termination_log.h"

#include <fstream>

namespace lockstep::launcher::supervisor {

Status WriteTerminationLog(const std::string& path, const protocol::TerminationMessage& message) {
  if (path.empty()) return Status::Ok();
  std::ofstream out(path, std::ios::trunc);
  if (!out) return UnavailableError("cannot open termination log " + path);
  out << protocol::EncodeTermination(message);
  out.close();
  if (!out) return UnavailableError("cannot write termination log " + path);
  return Status::Ok();
}

}  // namespace lockstep::launcher::supervisor
