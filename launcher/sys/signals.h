#pragma once
// Signals as file-descriptor events (signalfd), so the launcher's single event loop handles
// SIGTERM/SIGINT/SIGHUP/SIGQUIT and SIGCHLD without async handlers. Create it before starting
// any thread: the mask it sets is inherited by threads created later.

#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace lockstep::launcher::sys {

class SignalFd {
 public:
  static StatusOr<SignalFd> Create();
  int fd() const { return fd_.get(); }
  // Signals received since the last call (non-blocking).
  std::vector<int> Drain();

 private:
  explicit SignalFd(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace lockstep::launcher::sys
