#include "tests/e2e/agent/image_map.h"

#include <filesystem>

namespace lockstep::e2e {

namespace fs = std::filesystem;

ImageMapper::ImageMapper(const AgentOptions& options) {
  for (const auto& r : options.image_rules) rules_.push_back({r.prefix, r.dir, {}});
  if (!options.launcher_binary.empty()) {
    rules_.push_back(
        {options.launcher_image, "", {{"/lockstep-launcher", options.launcher_binary}}});
  }
  if (!options.python.empty()) venv_bin_ = fs::path(options.python).parent_path().string();
}

const ImageMapper::Rule* ImageMapper::Match(const std::string& image) const {
  const Rule* best = nullptr;
  for (const auto& rule : rules_) {
    if (image.rfind(rule.prefix, 0) != 0) continue;
    if (best == nullptr || rule.prefix.size() > best->prefix.size()) best = &rule;
  }
  return best;
}

std::string ImageMapper::Rewrite(const Rule& rule, const std::string& arg) const {
  if (arg.empty() || arg[0] != '/') return arg;
  if (auto it = rule.files.find(arg); it != rule.files.end()) return it->second;
  if (rule.dir.empty()) return arg;
  const size_t slash = arg.find('/', 1);
  const std::string first = arg.substr(0, slash);  // "/x"
  std::error_code ec;
  if (first.size() > 1 && fs::exists(rule.dir + first, ec)) return rule.dir + arg;
  return arg;
}

StatusOr<ResolvedCommand> ImageMapper::Resolve(const std::string& image,
                                               const std::vector<std::string>& command,
                                               const std::vector<std::string>& args) const {
  if (command.empty()) {
    return InvalidArgumentError("image " + image +
                                ": no command (images are not pulled, so their entrypoint is "
                                "unknown to the test node agent)");
  }
  ResolvedCommand out;
  out.argv = command;
  out.argv.insert(out.argv.end(), args.begin(), args.end());
  if (const Rule* rule = Match(image)) {
    for (auto& arg : out.argv) arg = Rewrite(*rule, arg);
    std::error_code ec;
    if (!rule->dir.empty() && fs::is_directory(rule->dir + "/bin", ec)) {
      out.path_prefix.push_back(rule->dir + "/bin");
    }
  }
  if (!venv_bin_.empty()) out.path_prefix.push_back(venv_bin_);
  return out;
}

std::vector<std::string> ImageMapper::HostPaths() const {
  std::vector<std::string> paths;
  for (const auto& rule : rules_) {
    if (!rule.dir.empty()) paths.push_back(rule.dir);
    for (const auto& [in_image, host] : rule.files) paths.push_back(host);
  }
  if (!venv_bin_.empty()) paths.push_back(fs::path(venv_bin_).parent_path().string());
  return paths;
}

}  // namespace lockstep::e2e
