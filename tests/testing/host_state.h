#pragma once
// Reading this host's state in test harnesses: whole files and the processes a test started.

#include <sys/types.h>

#include <string>
#include <vector>

namespace lockstep::testing {

// The whole file, or "" when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// Pids of the processes whose environment carries `marker` ("NAME=value"): what a test gave every
// process it started, so that it can prove none survived.
std::vector<pid_t> MarkedProcesses(const std::string& marker);

}  // namespace lockstep::testing
