#pragma once
// The termination message: a short JSON document the launcher writes where Kubernetes reads a
// container's termination message (default /dev/termination-log), so the operator can tell which
// rank failed first and why. Kubernetes keeps at most 4096 bytes: oldest stderr lines go first.

#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::launcher::supervisor {

inline constexpr size_t kMaxTerminationBytes = 4096;

struct TerminationReport {
  // "exit", "signal", "hang" (this pod's ranks); "peer-lost", "peer-failed" (another pod);
  // "refused", "timeout", "terminated", "launcher", "rendezvous".
  std::string reason;
  int attempt = 0;
  int restart_count = 0;       // in-place restarts charged to --max-restarts (failures)
  int requested_restarts = 0;  // in-place restarts the operator asked for (not charged)
  int node_rank = 0;
  int rank = -1;        // global rank of the first failing child; -1 when none
  int exit_code = 0;
  int signal = 0;
  std::string message;
  std::vector<std::string> stderr_tail;
};

// Compact JSON no longer than kMaxTerminationBytes.
std::string TerminationJson(const TerminationReport& report);

// Writes the JSON to `path`. Failure is reported, never fatal: outside Kubernetes the default
// path usually does not exist.
Status WriteTerminationLog(const std::string& path, const TerminationReport& report);

}  // namespace lockstep::launcher::supervisor
