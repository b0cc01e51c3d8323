#include "operator/controller/launcher_control.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/enum_names.h"
#include "common/unique_fd.h"

namespace lockstep::controller {

std::string_view ToString(ProbeResult r) {
  static constexpr NameTable<ProbeResult, 3> kNames = {
      {{ProbeResult::kUnknown, "unknown"},
       {ProbeResult::kReachable, "reachable"},
       {ProbeResult::kUnreachable, "unreachable"}}};
  return NameOf(kNames, r, "unknown");
}

StatusOr<protocol::ControlStatus> RdzvLauncherControl::GetStatus(
    const protocol::ControlTarget& target) {
  LS_ASSIGN_OR_RETURN(protocol::ControlReply reply,
                      protocol::ControlCall(target, protocol::ControlKind::kStatus, "", timeout_));
  if (!reply.status) return DataLossError("control: the server answered Status with no status");
  return std::move(*reply.status);
}

StatusOr<protocol::ControlAck> RdzvLauncherControl::Restart(const protocol::ControlTarget& target,
                                                            const std::string& reason) {
  LS_ASSIGN_OR_RETURN(
      protocol::ControlReply reply,
      protocol::ControlCall(target, protocol::ControlKind::kRestart, reason, timeout_));
  if (!reply.ack) return DataLossError("control: the server answered Restart with no ack");
  return std::move(*reply.ack);
}

namespace {

// What a connect's errno says about the peer: refused means its network stack answered (the
// pod is there; only nobody listens), no route or a timeout means nothing answered.
ProbeResult FromErrno(int err) {
  switch (err) {
    case 0:
    case ECONNREFUSED:
      return ProbeResult::kReachable;
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
      return ProbeResult::kUnreachable;
    default:
      return ProbeResult::kUnknown;
  }
}

ProbeAnswer Answer(int err, const std::string& target, std::chrono::milliseconds timeout) {
  ProbeAnswer a;
  a.result = FromErrno(err);
  if (err == 0) {
    a.detail = "connected to " + target;
  } else if (err == ETIMEDOUT) {
    a.detail =
        "connect to " + target + " timed out after " + std::to_string(timeout.count()) + "ms";
  } else {
    a.detail = "connect to " + target + ": " + std::strerror(err);
  }
  return a;
}

}  // namespace

ProbeAnswer RdzvLauncherControl::Probe(const std::string& host, uint16_t port) {
  const std::string target = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return ProbeAnswer{ProbeResult::kUnknown, "not an IPv4 address: " + host};
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Answer(errno, target, timeout_);  // unknown: says nothing of the pod
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return Answer(0, target, timeout_);
  }
  if (errno != EINPROGRESS) return Answer(errno, target, timeout_);
  pollfd p{fd.get(), POLLOUT, 0};
  const int n = ::poll(&p, 1, static_cast<int>(timeout_.count()));
  if (n == 0) return Answer(ETIMEDOUT, target, timeout_);
  if (n < 0) return Answer(errno, target, timeout_);
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  return Answer(err, target, timeout_);
}

}  // namespace lockstep::controller
