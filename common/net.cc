#include "common/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/clock.h"

namespace lockstep::net {
namespace {

Status Errno(std::string_view what) {
  return UnavailableError(std::string(what) + ": " + std::strerror(errno));
}

StatusOr<UniqueFd> ConnectOne(const addrinfo* ai, std::chrono::steady_clock::time_point deadline) {
  UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                       ai->ai_protocol));
  if (!fd.valid()) return Errno("socket");
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) return Errno("connect");
    pollfd p{fd.get(), POLLOUT, 0};
    int n = ::poll(&p, 1, MillisUntil(deadline));
    if (n == 0) return DeadlineExceededError("connect timed out");
    if (n < 0) return Errno("poll");
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      errno = err;
      return Errno("connect");
    }
  }
  SetNoDelay(fd.get());
  return fd;
}

}  // namespace

StatusOr<HostPort> ParseHostPort(std::string_view text) {
  HostPort out;
  std::string_view port;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return InvalidArgumentError("bad endpoint '" + std::string(text) + "': want [v6]:port");
    }
    out.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0) {
      return InvalidArgumentError("bad endpoint '" + std::string(text) + "': want host:port");
    }
    out.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  unsigned value = 0;
  if (port.empty() || port.size() > 5) {
    return InvalidArgumentError("bad port in endpoint '" + std::string(text) + "'");
  }
  for (char c : port) {
    if (c < '0' || c > '9') {
      return InvalidArgumentError("bad port in endpoint '" + std::string(text) + "'");
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (value == 0 || value > 65535) {
    return InvalidArgumentError("port out of range in endpoint '" + std::string(text) + "'");
  }
  out.port = static_cast<uint16_t>(value);
  return out;
}

StatusOr<UniqueFd> ListenTcp(uint16_t port, int backlog) {
  UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  bool v6 = fd.valid();
  if (!v6) fd = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Errno("socket");
  int one = 1, zero = 0;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc;
  if (v6) {
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(port);
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(port);
    rc = ::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (rc != 0) return Errno("bind port " + std::to_string(port));
  // Linux copies TCP_NODELAY to every accepted socket: one setsockopt here instead of one per
  // accepted peer (8,192 syscalls on the rendezvous server's single thread).
  SetNoDelay(fd.get());
  if (::listen(fd.get(), backlog) != 0) return Errno("listen");
  return fd;
}

StatusOr<uint16_t> LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return Errno("getsockname");
  if (ss.ss_family == AF_INET6) return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
  return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
}

StatusOr<UniqueFd> ConnectTcp(const HostPort& target,
                              std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(target.port);
  int rc = ::getaddrinfo(target.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    return UnavailableError("resolve " + target.host + ": " + ::gai_strerror(rc));
  }
  Status last = UnavailableError("no address for " + target.host);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    StatusOr<UniqueFd> fd = ConnectOne(ai, deadline);
    if (fd.ok()) {
      ::freeaddrinfo(res);
      return fd;
    }
    last = fd.status();
  }
  ::freeaddrinfo(res);
  return last;
}

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Errno("fcntl");
  return Status::Ok();
}

void SetNoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

StatusOr<ReadResult> ReadAvailable(int fd, std::string* out, size_t max_bytes) {
  ReadResult r;
  char buf[65536];
  while (r.bytes < max_bytes) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      r.bytes += static_cast<size_t>(n);
      // A short read emptied the socket: stop instead of paying one more read(2) for EAGAIN.
      // Callers poll level-triggered, so data (or EOF) arriving later is reported again. At
      // 8,192 peers this is one syscall per message less on both sides of the rendezvous.
      if (static_cast<size_t>(n) < sizeof(buf)) break;
      continue;
    }
    if (n == 0) {
      r.eof = true;
      break;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) break;
    return Errno("read");
  }
  return r;
}

StatusOr<size_t> WriteSome(int fd, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    return Errno("send");
  }
  return done;
}

int MillisUntil(std::chrono::steady_clock::time_point deadline) {
  // Real time: the result is a poll(2) timeout.
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - RealClock::Get().Now())
                        .count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

Status WriteAll(int fd, std::string_view data, std::chrono::steady_clock::time_point deadline) {
  while (!data.empty()) {
    LS_ASSIGN_OR_RETURN(size_t n, WriteSome(fd, data));
    data.remove_prefix(n);
    if (data.empty()) break;
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, MillisUntil(deadline)) <= 0) return DeadlineExceededError("send timed out");
  }
  return Status::Ok();
}

void RaiseFileLimit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

std::string HostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

}  // namespace lockstep::net
