#include "launcher/sys/signals.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace lockstep::launcher::sys {

StatusOr<SignalFd> SignalFd::Create() {
  ::signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, sig);
  if (::pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
    return InternalError("pthread_sigmask failed");
  }
  int fd = ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) return InternalError(std::string("signalfd: ") + std::strerror(errno));
  return SignalFd(UniqueFd(fd));
}

std::vector<int> SignalFd::Drain() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (::read(fd_.get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    out.push_back(static_cast<int>(info.ssi_signo));
  }
  return out;
}

}  // namespace lockstep::launcher::sys
