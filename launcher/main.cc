// lockstep-launcher: flags and wiring only (see launcher.h).
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "common/log.h"
#include "launcher/config/config.h"
#include "launcher/launcher.h"
#include "protocol/contract.h"

extern char** environ;

int main(int argc, char** argv) {
  using namespace lockstep;
  std::vector<std::string> args(argv + 1, argv + argc);
  StatusOr<launcher::LauncherConfig> config = launcher::ParseConfig(args, launcher::ProcessEnv);
  if (!config.ok()) {
    std::fprintf(stderr, "lockstep-launcher: %s\n", config.status().message().c_str());
    return protocol::contract::kExitUsage;
  }
  if (config->help) {
    std::fputs(launcher::HelpText().c_str(), stdout);
    return 0;
  }
  log::Format format = log::Format::kText;
  log::ParseFormat(config->log_format, &format);
  log::SetFormat(format);
  log::SetComponent(config->spare ? "launcher[spare-" + std::to_string(config->role_index) + "]"
                                  : "launcher[" + std::to_string(config->node_rank) + "]");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  launcher::Launcher launcher(std::move(*config), std::move(env));
  return launcher.Run();
}
