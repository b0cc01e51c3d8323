#pragma once
// Runs real lockstep-launcher processes on 127.0.0.1 for the multi-process tests.

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/control_client.h"
#include "tests/testing/free_port.h"
#include "tests/testing/host_state.h"

namespace lockstep::launcher::testing {

// A fresh directory under the test temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

using ::lockstep::testing::FreePort;  // tests/testing/free_port.h
// The NCCL library the tests use ("" when none); fails the test when LOCKSTEP_REQUIRE_NCCL=1
// and none is found.
std::string NcclLibraryForTests();

struct LauncherSpec {
  std::vector<std::string> args;             // flags, without the command
  std::vector<std::string> command;          // after "--"
  std::map<std::string, std::string> env;    // added to a clean base environment
};

class LauncherProcess {
 public:
  LauncherProcess(const LauncherSpec& spec, const std::string& log_path);
  ~LauncherProcess();  // SIGKILLs a launcher still running
  pid_t pid() const { return pid_; }
  void Signal(int sig) const;
  // Exit code (128+n for a signal) or nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  std::optional<int> exit_;
};

// env.<attempt>.<rank> files written by lockstep_test_child, parsed.
std::vector<std::map<std::string, std::string>> ReadEnvFiles(const std::string& dir,
                                                              const std::string& attempt);
bool WaitForFiles(const std::string& dir, const std::string& prefix, size_t count,
                  std::chrono::milliseconds timeout);
bool FileExists(const std::string& path);
using ::lockstep::testing::ReadWholeFile;  // tests/testing/host_state.h

// One Status request to node 0's server at `target` (1 s deadline); an answer without a status
// is DataLoss.
StatusOr<protocol::ControlStatus> GetControlStatus(const protocol::ControlTarget& target);
// Polls GetControlStatus every `every` until `done` holds or `timeout` passes; returns the last
// answer (or the last error).
StatusOr<protocol::ControlStatus> WaitForControlStatus(
    const protocol::ControlTarget& target,
    const std::function<bool(const protocol::ControlStatus&)>& done,
    std::chrono::seconds timeout, std::chrono::milliseconds every);

}  // namespace lockstep::launcher::testing
