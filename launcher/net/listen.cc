#include "launcher/net/listen.h"

#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>
#include <set>

#include "common/net.h"

namespace lockstep::net {
namespace {

// Binds and listens on one address (its port already set); a named IPv6 address listens on
// itself alone.
StatusOr<UniqueFd> ListenOn(const sockaddr* addr, socklen_t len) {
  UniqueFd fd(::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return UnavailableError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (addr->sa_family == AF_INET6) {
    ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  }
  if (::bind(fd.get(), addr, len) != 0 || ::listen(fd.get(), SOMAXCONN) != 0) {
    return UnavailableError(std::string("bind/listen: ") + std::strerror(errno));
  }
  // Linux copies TCP_NODELAY to every accepted socket: one setsockopt instead of one per peer.
  SetNoDelay(fd.get());
  return fd;
}

void SetPort(sockaddr_storage* addr, uint16_t port) {
  if (addr->ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(addr)->sin_port = htons(port);
  if (addr->ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(addr)->sin6_port = htons(port);
}

}  // namespace

StatusOr<std::vector<UniqueFd>> ListenOnHost(const std::string& host, uint16_t port) {
  std::vector<UniqueFd> fds;
  if (host.empty()) {
    LS_ASSIGN_OR_RETURN(UniqueFd fd, ListenTcp(port, SOMAXCONN));
    fds.push_back(std::move(fd));
    return fds;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return UnavailableError("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::set<std::string> seen;
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage addr{};
    std::memcpy(&addr, a->ai_addr, a->ai_addrlen);
    SetPort(&addr, port);
    const std::string key(reinterpret_cast<const char*>(&addr), a->ai_addrlen);
    if (!seen.insert(key).second) continue;
    StatusOr<UniqueFd> fd = ListenOn(reinterpret_cast<sockaddr*>(&addr), a->ai_addrlen);
    if (!fd.ok()) {
      last_error = fd.status().message();
      continue;
    }
    if (port == 0) {
      StatusOr<uint16_t> bound = LocalPort(fd->get());
      if (bound.ok()) port = *bound;
    }
    fds.push_back(std::move(*fd));
  }
  ::freeaddrinfo(found);
  if (fds.empty()) {
    return UnavailableError("cannot listen on " + host + " port " + std::to_string(port) + ": " +
                            last_error);
  }
  return fds;
}

}  // namespace lockstep::net
