#pragma once
// Starting child processes. Each child leads its own process group, so a signal sent to the group
// reaches its grandchildren too (shell wrappers, DataLoader workers), and gets PR_SET_PDEATHSIG =
// SIGKILL, so a rank never outlives a launcher that was killed (it would otherwise join the next
// attempt's world as a ghost). stdout and stderr are pipes the launcher reads and passes through.

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace lockstep::launcher::sys {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  std::vector<std::string> env;   // complete environment, "KEY=VALUE"
};

struct SpawnedChild {
  pid_t pid = -1;  // also its process group id
  UniqueFd stdout_fd;  // non-blocking read ends
  UniqueFd stderr_fd;
};

// Must be called from the thread that lives as long as the child (the death signal follows the
// parent thread).
StatusOr<SpawnedChild> Spawn(const SpawnSpec& spec);

// Sends `sig` to the child's process group; ESRCH (already gone) is not an error.
void SignalGroup(pid_t pgid, int sig);

// Exit status decoded from waitpid.
struct ExitInfo {
  int exit_code = 0;  // 128+n when killed by signal n
  int signal = 0;     // 0 when it exited normally
};
ExitInfo DecodeWaitStatus(int status);

}  // namespace lockstep::launcher::sys
