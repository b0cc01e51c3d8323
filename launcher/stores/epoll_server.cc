#include "launcher/stores/epoll_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace lockstep::launcher::stores {
namespace {

constexpr ConnId kListenerId = 0;
constexpr ConnId kWakeId = 1;
constexpr size_t kReadChunk = 64 * 1024;

std::string Errno(std::string_view what) { return std::string(what) + ": " + std::strerror(errno); }

// Dual-stack first so IPv6-only pod networks work; IPv4 where the kernel has no IPv6.
StatusOr<int> Listen(int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const bool v6 = fd >= 0;
  if (!v6) fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(Errno("socket"));
  int one = 1;
  int zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = 0;
  if (v6) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    sockaddr_in6 addr{};
    addr.sin6_family = AF_INET6;
    addr.sin6_addr = in6addr_any;
    addr.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  } else {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  }
  if (rc != 0 || ::listen(fd, SOMAXCONN) != 0) {
    Status err = UnavailableError(Errno("bind/listen on port " + std::to_string(port)));
    ::close(fd);
    return err;
  }
  return fd;
}

StatusOr<int> BoundPort(int fd) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return InternalError(Errno("getsockname"));
  }
  if (addr.ss_family == AF_INET6) {
    return static_cast<int>(ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port));
  }
  return static_cast<int>(ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port));
}

}  // namespace

EpollServer::EpollServer(Service* service) : service_(service) {}

EpollServer::~EpollServer() { Stop(); }

StatusOr<int> EpollServer::Start(int port) {
  if (running_.load()) return FailedPreconditionError("server already started");
  LS_ASSIGN_OR_RETURN(listen_fd_, Listen(port));
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    Status err = InternalError(Errno("epoll_create1/eventfd"));
    Stop();
    return err;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  StatusOr<int> bound = BoundPort(listen_fd_);
  if (!bound.ok()) {
    Stop();
    return bound.status();
  }
  running_.store(true);
  loop_ = std::thread([this] { Run(); });
  return *bound;
}

void EpollServer::Stop() {
  if (running_.exchange(false)) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof(one));
  }
  if (loop_.joinable()) loop_.join();
  for (auto& [id, conn] : conns_) {
    service_->OnClose(id);
    ::close(conn.fd);
  }
  conns_.clear();
  for (int* fd : {&listen_fd_, &epoll_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void EpollServer::Run() {
  std::vector<epoll_event> events(128);
  while (running_.load()) {
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      log::Error("store event loop failed", {{"error", std::strerror(errno)}});
      return;
    }
    for (int i = 0; i < n; ++i) {
      const ConnId id = events[static_cast<size_t>(i)].data.u64;
      const uint32_t what = events[static_cast<size_t>(i)].events;
      if (id == kWakeId) return;
      if (id == kListenerId) {
        Accept();
        continue;
      }
      if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) OnReadable(id);
      if (what & EPOLLOUT) Flush(id);
      ReapBroken();
    }
  }
}

void EpollServer::Accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        log::Warning("store accept failed", {{"error", std::strerror(errno)}});
      }
      return;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const ConnId id = next_id_++;
    conns_[id].fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    service_->OnOpen(id);
  }
}

void EpollServer::OnReadable(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken) return;
  char buf[kReadChunk];
  bool eof = false;
  while (true) {
    ssize_t n = ::read(it->second.fd, buf, sizeof(buf));
    if (n > 0) {
      it->second.in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) eof = true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) eof = true;
    break;
  }
  // Serve complete requests even when the peer half-closed after sending them.
  if (!it->second.in.empty() && !service_->OnData(id, &it->second.in)) eof = true;
  auto again = conns_.find(id);  // OnData may have queued closes but never erases
  if (eof && again != conns_.end()) {
    again->second.broken = true;
    to_close_.push_back(id);
  }
}

void EpollServer::Send(ConnId id, std::string_view bytes) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken) return;
  it->second.out.append(bytes);
  Flush(id);
}

void EpollServer::CloseAfterFlush(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.close_after_flush = true;
  Flush(id);
}

void EpollServer::Flush(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken) return;
  Connection& c = it->second;
  while (!c.out.empty()) {
    ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    c.broken = true;  // closed later: Flush may run inside another connection's OnData
    to_close_.push_back(id);
    return;
  }
  if (c.out.empty() && c.close_after_flush) {
    c.broken = true;
    to_close_.push_back(id);
    return;
  }
  UpdateInterest(id, c);
}

void EpollServer::UpdateInterest(ConnId id, const Connection& c) {
  epoll_event ev{};
  ev.events = EPOLLIN | (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.u64 = id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
}

void EpollServer::ReapBroken() {
  while (!to_close_.empty()) {
    std::vector<ConnId> batch;
    batch.swap(to_close_);
    for (ConnId id : batch) CloseNow(id);
  }
}

void EpollServer::CloseNow(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
  ::close(it->second.fd);
  conns_.erase(it);
  service_->OnClose(id);
}

}  // namespace lockstep::launcher::stores
