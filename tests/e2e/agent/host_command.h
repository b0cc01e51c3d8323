#pragma once
// Runs host tools (`ip`) for the agent's network plumbing, and finds processes by namespace.

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

// Runs argv[0] (looked up on PATH) and waits. Returns its stdout; a non-zero exit becomes
// INTERNAL with the command line and its stderr.
StatusOr<std::string> RunHostCommand(const std::vector<std::string>& argv);

// Pids of every process whose network namespace is the one bound at `netns_path`
// (e.g. /run/netns/x). Empty when the path does not exist.
std::vector<pid_t> PidsInNetns(const std::string& netns_path);

// Sends `sig` to every process in the network namespace; returns how many were signalled.
int SignalNetns(const std::string& netns_path, int sig);

// The process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or -1 if
// the process does not exist. Pid plus start time identifies a process across pid reuse.
int64_t ProcessStartTime(pid_t pid);

}  // namespace lockstep::e2e
