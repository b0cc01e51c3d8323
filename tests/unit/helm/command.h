#pragma once
// Runs a program (helm, bash) as a child process with an argv vector (no shell, no quoting) and
// collects its standard output and standard error separately, for tests that drive command-line
// tools.

#include <string>
#include <vector>

namespace lockstep::helmtest {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
  bool ok() const { return exit_code == 0; }
};

// argv[0] is looked up in PATH unless it contains a '/'.
CommandResult RunCommand(const std::vector<std::string>& argv);

// The helm binary: $LOCKSTEP_HELM, else ${LOCKSTEP_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/lockstep}
// /tools/bin/helm (where hack/build-tools.sh puts it), else "helm" from PATH.
std::string HelmBinary();

// An absolute path into the source tree.
std::string SourcePath(const std::string& relative);

std::string ReadFile(const std::string& path);

}  // namespace lockstep::helmtest
