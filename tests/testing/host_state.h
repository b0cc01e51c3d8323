#pragma once
// Reading this host's state in test harnesses: whole files and the processes a test started.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace lockstep::testing {

// The whole file, or "" when it cannot be read.
std::string ReadWholeFile(const std::string& path);

// The stdout of `command` run by /bin/sh (popen), and in *rc, when given, its wait status
// (pclose's: 0 for an exit of 0). "" and -1 when the shell cannot be started.
std::string ShellOutput(const std::string& command, int* rc = nullptr);

// Pids of the processes whose environment carries `marker` ("NAME=value"): what a test gave every
// process it started, so that it can prove none survived.
std::vector<pid_t> MarkedProcesses(const std::string& marker);

// Starts `argv` (argv[0] a path) with `env` ("NAME=value"; the caller's environment when empty),
// stdout and stderr appended to nothing but `log_path` (truncated). Returns the pid, or -1.
pid_t SpawnWithLog(std::vector<std::string> argv, std::vector<std::string> env,
                   const std::string& log_path);

// Starts `argv` with the caller's environment and stderr to `stderr_path`, and reads its stdout
// until a line equal to `ready_line` or `timeout`. *pid is set whenever the process started, so
// the caller can stop it either way. Returns whether the line came.
bool SpawnAndAwaitLine(std::vector<std::string> argv, const std::string& stderr_path,
                       const std::string& ready_line, std::chrono::seconds timeout, pid_t* pid);

// The lines of `text` that contain `needle`, each from the needle to its end.
std::vector<std::string> LinesFrom(const std::string& text, const std::string& needle);

}  // namespace lockstep::testing
