#pragma once
// Images are never pulled: each container image is mapped to host files. A rule maps an image
// name prefix (longest prefix wins) either to a directory that stands for the image's root
// (`--image-map PREFIX=DIR`: an absolute argument `/x/...` becomes `DIR/x/...` when DIR/x exists,
// and DIR/bin, when present, goes first on PATH) or, for the launcher image, to the one file
// `/lockstep-launcher` (`--launcher-binary`). Everything else runs on the host's filesystem.
// The venv of `--python` is first on every container's PATH, so `python` is the repo's venv.

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/e2e/agent/options.h"

namespace lockstep::e2e {

struct ResolvedCommand {
  std::vector<std::string> argv;
  std::vector<std::string> path_prefix;  // directories to put before the host PATH, in order
};

class ImageMapper {
 public:
  explicit ImageMapper(const AgentOptions& options);

  // command + args of a container, rewritten for `image`. INVALID_ARGUMENT when the command is
  // empty (the image's entrypoint is unknown without the image).
  StatusOr<ResolvedCommand> Resolve(const std::string& image,
                                    const std::vector<std::string>& command,
                                    const std::vector<std::string>& args) const;

  // Every host path a resolved command may name: the image directories, the mapped files and
  // the venv (the parent of --python's bin/). A pod must see them at their own paths.
  std::vector<std::string> HostPaths() const;

 private:
  struct Rule {
    std::string prefix;
    std::string dir;                           // image root stand-in, or empty
    std::map<std::string, std::string> files;  // exact in-image path -> host path
  };
  const Rule* Match(const std::string& image) const;
  std::string Rewrite(const Rule& rule, const std::string& arg) const;

  std::vector<Rule> rules_;
  std::string venv_bin_;
};

}  // namespace lockstep::e2e
