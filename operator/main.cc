// lockstep-operator: flags and wiring only (operator/app/ does the work).
#include <csignal>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/malloc_arenas.h"
#include "operator/app/app.h"
#include "operator/app/options.h"

int main(int argc, char** argv) {
  using lockstep::app::OperatorApp;
  // Before any thread exists (common/malloc_arenas.h: why two).
  const std::string arenas = lockstep::CapMallocArenas(2);
  std::vector<std::string> args(argv + 1, argv + argc);
  auto options = lockstep::app::ParseFlags(args);
  if (!options.ok()) {
    std::fprintf(stderr, "lockstep-operator: %s (see --help)\n",
                 options.status().message().c_str());
    return 2;
  }
  if (options->help) {
    std::cout << lockstep::app::Usage();
    return 0;
  }
  lockstep::log::SetFormat(options->log_format);
  lockstep::log::SetComponent("operator");
  lockstep::log::Info("malloc arenas", {{"max", arenas}});

  // Every thread inherits this mask, so SIGTERM/SIGINT reach only the sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  OperatorApp app(*options);
  std::thread waiter([&app, signals] {
    int sig = 0;
    sigwait(&signals, &sig);
    app.Shutdown();
  });
  waiter.detach();
  return app.Run();
}
