#include "harness.h"
#include "tests/testing/host_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

namespace lockstep::launcher::testing {

TempDir::TempDir() {
  std::string tmpl = ::testing::TempDir() + "/lockstep-launcher-XXXXXX";
  char* made = ::mkdtemp(tmpl.data());
  path_ = made ? made : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string NcclLibraryForTests() {
  if (const char* p = std::getenv("LOCKSTEP_TEST_NCCL_LIBRARY"); p && *p) return p;
  const std::string pattern =
      std::string(LOCKSTEP_SOURCE_DIR) +
      "/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2";
  glob_t g{};
  std::string found;
  if (::glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) found = g.gl_pathv[0];
  ::globfree(&g);
  const char* require = std::getenv("LOCKSTEP_REQUIRE_NCCL");
  if (found.empty() && require && std::string(require) == "1") {
    ADD_FAILURE() << "LOCKSTEP_REQUIRE_NCCL=1 but no libnccl.so.2 (run hack/setup-nccl.sh)";
  }
  return found;
}

LauncherProcess::LauncherProcess(const LauncherSpec& spec, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<std::string> argv = {LOCKSTEP_LAUNCHER_BIN};
  argv.insert(argv.end(), spec.args.begin(), spec.args.end());
  argv.push_back("--");
  argv.insert(argv.end(), spec.command.begin(), spec.command.end());
  std::vector<std::string> env = {"PATH=/usr/bin:/bin", "LOCKSTEP_TERMINATION_LOG=" + log_path +
                                                            ".termination"};
  for (const auto& [k, v] : spec.env) env.push_back(k + "=" + v);
  pid_ = ::lockstep::testing::SpawnWithLog(std::move(argv), std::move(env), log_path);
}

LauncherProcess::~LauncherProcess() {
  if (pid_ > 0 && !exit_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
}

void LauncherProcess::Signal(int sig) const { ::kill(pid_, sig); }

std::optional<int> LauncherProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_) return exit_;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string LauncherProcess::Log() const { return ReadWholeFile(log_path_); }


bool FileExists(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0;
}

static std::vector<std::string> ListFiles(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.find(".tmp") == std::string::npos) out.push_back(name);
  }
  return out;
}

bool WaitForFiles(const std::string& dir, const std::string& prefix, size_t count,
                  std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (ListFiles(dir, prefix).size() >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

std::vector<std::map<std::string, std::string>> ReadEnvFiles(const std::string& dir,
                                                              const std::string& attempt) {
  std::vector<std::map<std::string, std::string>> out;
  for (const std::string& name : ListFiles(dir, "env." + attempt + ".")) {
    std::map<std::string, std::string> env;
    std::istringstream in(ReadWholeFile(dir + "/" + name));
    std::string line;
    while (std::getline(in, line)) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
    }
    out.push_back(std::move(env));
  }
  return out;
}

StatusOr<protocol::ControlStatus> GetControlStatus(const protocol::ControlTarget& target) {
  LS_ASSIGN_OR_RETURN(protocol::ControlReply r,
                      protocol::ControlCall(target, protocol::ControlKind::kStatus, "",
                                            std::chrono::seconds(1)));
  if (!r.status) return DataLossError("no status in the reply");
  return *r.status;
}

StatusOr<protocol::ControlStatus> WaitForControlStatus(
    const protocol::ControlTarget& target,
    const std::function<bool(const protocol::ControlStatus&)>& done,
    std::chrono::seconds timeout, std::chrono::milliseconds every) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  StatusOr<protocol::ControlStatus> last = UnavailableError("never asked");
  while (std::chrono::steady_clock::now() < until) {
    last = GetControlStatus(target);
    if (last.ok() && done(*last)) return last;
    std::this_thread::sleep_for(every);
  }
  return last;
}

}  // namespace lockstep::launcher::testing
