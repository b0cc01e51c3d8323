#include "tests/testing/host_state.h"

#include <filesystem>
#include <fstream>
#include <iterator>

namespace lockstep::testing {

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<pid_t> MarkedProcesses(const std::string& marker) {
  namespace fs = std::filesystem;
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    // A process may exit between the listing and the read: an empty environment, skipped.
    const std::string env = ReadWholeFile("/proc/" + name + "/environ");
    if (env.find(marker) != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

}  // namespace lockstep::testing
