#include "launcher/supervisor/stop_grace.h"

#include <algorithm>

namespace lockstep::launcher::supervisor {

std::chrono::milliseconds StopGrace(StopCause cause, std::chrono::milliseconds configured) {
  const std::chrono::milliseconds grace = std::max(configured, std::chrono::milliseconds(0));
  return cause == StopCause::kSignal ? grace : std::min(grace, kGangStopGraceCap);
}

int SignalExitCode(int signal) { return 128 + signal; }

}  // namespace lockstep::launcher::supervisor
