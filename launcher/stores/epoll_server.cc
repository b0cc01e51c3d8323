#include "launcher/stores/epoll_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "common/log.h"

namespace lockstep::launcher::stores {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

constexpr size_t kReadChunk = 64 * 1024;

std::string Errno(std::string_view what) { return std::string(what) + ": " + std::strerror(errno); }

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

// Binds and listens on one address (its port already set); the fd, or an error.
StatusOr<int> ListenOn(const sockaddr* addr, socklen_t len, bool dual_stack) {
  int fd = ::socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return UnavailableError(Errno("socket"));
  int one = 1;
  int zero = 0;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (addr->sa_family == AF_INET6) {
    // Dual-stack only for the wildcard; a named IPv6 address listens on itself alone.
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &zero : &one, sizeof(int));
  }
  if (::bind(fd, addr, len) != 0 || ::listen(fd, SOMAXCONN) != 0) {
    Status err = UnavailableError(Errno("bind/listen"));
    ::close(fd);
    return err;
  }
  return fd;
}

// Every interface: dual-stack first so IPv6-only pod networks work; IPv4 where the kernel has
// no IPv6.
StatusOr<int> ListenAny(int port) {
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  v6.sin6_addr = in6addr_any;
  v6.sin6_port = htons(static_cast<uint16_t>(port));
  StatusOr<int> fd = ListenOn(reinterpret_cast<sockaddr*>(&v6), sizeof(v6), true);
  if (fd.ok()) return fd;
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  v4.sin_addr.s_addr = htonl(INADDR_ANY);
  v4.sin_port = htons(static_cast<uint16_t>(port));
  return ListenOn(reinterpret_cast<sockaddr*>(&v4), sizeof(v4), false);
}

// Every distinct address `host` resolves to, each bound at the same port (the first picks it
// when `port` is 0). Addresses that are not this machine's fail to bind and are skipped.
StatusOr<std::vector<int>> ListenHost(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0) {
    return UnavailableError("cannot resolve " + host + ": " + ::gai_strerror(rc));
  }
  std::vector<int> fds;
  std::set<std::string> seen;
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    sockaddr_storage addr{};
    std::memcpy(&addr, a->ai_addr, a->ai_addrlen);
    auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
    if (addr.ss_family == AF_INET) v4->sin_port = htons(static_cast<uint16_t>(port));
    if (addr.ss_family == AF_INET6) v6->sin6_port = htons(static_cast<uint16_t>(port));
    const std::string key(reinterpret_cast<const char*>(&addr), a->ai_addrlen);
    if (!seen.insert(key).second) continue;
    StatusOr<int> fd = ListenOn(reinterpret_cast<sockaddr*>(&addr), a->ai_addrlen, false);
    if (!fd.ok()) {
      last_error = fd.status().message();
      continue;
    }
    fds.push_back(*fd);
    if (port == 0) {
      StatusOr<int> bound = BoundPort(*fd);
      if (bound.ok()) port = *bound;
    }
  }
  ::freeaddrinfo(found);
  if (fds.empty()) {
    return UnavailableError("cannot listen on " + host + " port " + std::to_string(port) + ": " +
                            last_error);
  }
  return fds;
}

}  // namespace

EpollServer::EpollServer(Service* service, ServerLimits limits)
    : service_(service), limits_(limits) {}

EpollServer::~EpollServer() { Stop(); }

StatusOr<int> EpollServer::Start(const std::string& host, int port) {
  if (running_.load()) return FailedPreconditionError("server already started");
  if (host.empty()) {
    LS_ASSIGN_OR_RETURN(int fd, ListenAny(port));
    listen_fds_ = {fd};
  } else {
    LS_ASSIGN_OR_RETURN(listen_fds_, ListenHost(host, port));
  }
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) {
    Status err = InternalError(Errno("epoll_create1/eventfd"));
    Stop();
    return err;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  for (size_t i = 0; i < listen_fds_.size(); ++i) {
    ev.data.u64 = kFirstListenerId + i;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fds_[i], &ev);
  }
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  StatusOr<int> bound = BoundPort(listen_fds_.front());
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
  stats_.connections = 0;
  for (int fd : listen_fds_) ::close(fd);
  listen_fds_.clear();
  for (int* fd : {&epoll_fd_, &wake_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void EpollServer::Run() {
  std::vector<epoll_event> events(128);
  int wait_ms = -1;
  while (running_.load()) {
    int n = ::epoll_wait(epoll_fd_, events.data(), static_cast<int>(events.size()), wait_ms);
    if (n < 0) {
      if (errno == EINTR) continue;
      log::Error("store event loop failed", {{"error", std::strerror(errno)}});
      return;
    }
    for (int i = 0; i < n; ++i) {
      const ConnId id = events[static_cast<size_t>(i)].data.u64;
      const uint32_t what = events[static_cast<size_t>(i)].events;
      if (id == kWakeId) return;
      if (id < kFirstConnId) {
        Accept(listen_fds_[id - kFirstListenerId]);
        continue;
      }
      if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) OnReadable(id);
      if (what & EPOLLOUT) Flush(id);
      ReapBroken();
    }
    Resume();
    wait_ms = ExpireConnections();
    ReapBroken();
  }
}

void EpollServer::Accept(int listen_fd) {
  while (true) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        log::Warning("store accept failed", {{"error", std::strerror(errno)}});
      }
      return;
    }
    if (conns_.size() >= limits_.max_connections) {
      // Closed at once: the backlog would otherwise fill and hide the cause from the client.
      if (stats_.refused_over_cap++ % 1000 == 0) {
        log::Warning("store connection refused: at the connection limit",
                     {{"limit", std::to_string(limits_.max_connections)}});
      }
      ::close(fd);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    const ConnId id = next_id_++;
    conns_[id].fd = fd;
    stats_.connections = conns_.size();
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev);
    service_->OnOpen(id);
  }
}

void EpollServer::OnReadable(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken || !it->second.reading) return;
  char buf[kReadChunk];
  bool eof = false;
  size_t budget = limits_.read_budget;
  // Level-triggered: what is left unread now raises the next event, after other connections.
  while (budget > 0) {
    ssize_t n = ::read(it->second.fd, buf, std::min(sizeof(buf), budget));
    if (n > 0) {
      it->second.in.append(buf, static_cast<size_t>(n));
      budget -= static_cast<size_t>(n);
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
  if (eof && again != conns_.end()) MarkBroken(id, again->second);
}

void EpollServer::Send(ConnId id, std::string_view bytes) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken) return;
  if (it->second.out.empty()) {
    it->second.last_write_progress = steady_clock::now();
    Due(it->second.last_write_progress + limits_.write_timeout);
  }
  it->second.out.append(bytes);
  Flush(id);
}

void EpollServer::CloseAfterFlush(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.close_after_flush = true;
  Flush(id);
}

void EpollServer::SetDeadline(ConnId id, std::optional<SteadyTime> when) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  it->second.deadline = when;
  if (when) Due(*when);
}

void EpollServer::Due(SteadyTime when) {
  if (!next_due_ || when < *next_due_) next_due_ = when;
}

void EpollServer::Flush(ConnId id) {
  auto it = conns_.find(id);
  if (it == conns_.end() || it->second.broken) return;
  Connection& c = it->second;
  size_t written = 0;
  while (written < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + written, c.out.size() - written, MSG_NOSIGNAL);
    if (n > 0) {
      written += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    MarkBroken(id, c);  // closed later: Flush may run inside another connection's OnData
    return;
  }
  if (written > 0) {
    c.out.erase(0, written);
    c.last_write_progress = steady_clock::now();
    if (!c.out.empty()) Due(c.last_write_progress + limits_.write_timeout);
  }
  if (c.out.empty() && c.close_after_flush) {
    MarkBroken(id, c);
    return;
  }
  UpdateInterest(id, c);
}

void EpollServer::UpdateInterest(ConnId id, Connection& c) {
  const bool reading = c.out.size() <= limits_.pause_reading_above;
  const bool was_reading = c.reading;
  c.reading = reading;
  epoll_event ev{};
  ev.events = (reading ? static_cast<uint32_t>(EPOLLIN) : 0u) |
              (c.out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
  ev.data.u64 = id;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c.fd, &ev);
  // Requests read before the pause wait in `in`: served by the loop (never re-entrantly:
  // this may run inside another connection's OnData).
  if (reading && !was_reading && !c.in.empty()) to_resume_.push_back(id);
}

void EpollServer::Resume() {
  while (!to_resume_.empty()) {
    std::vector<ConnId> batch;
    batch.swap(to_resume_);
    for (ConnId id : batch) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second.broken || !it->second.reading) continue;
      if (!it->second.in.empty() && !service_->OnData(id, &it->second.in)) {
        auto again = conns_.find(id);
        if (again != conns_.end()) MarkBroken(id, again->second);
      }
    }
  }
}

void EpollServer::MarkBroken(ConnId id, Connection& c) {
  if (c.broken) return;
  c.broken = true;
  to_close_.push_back(id);
}

int EpollServer::ExpireConnections() {
  const SteadyTime now = steady_clock::now();
  // Scanning every connection after every event would cost O(connections) per request.
  if (next_due_ && now < *next_due_) {
    const auto wait = std::chrono::ceil<milliseconds>(*next_due_ - now).count();
    return static_cast<int>(std::clamp<int64_t>(wait, 1, 60'000));
  }
  std::optional<SteadyTime> next;
  auto sooner = [&next](SteadyTime t) {
    if (!next || t < *next) next = t;
  };
  for (auto& [id, c] : conns_) {
    if (c.broken) continue;
    if (c.deadline && *c.deadline <= now) {
      ++stats_.closed_by_deadline;
      MarkBroken(id, c);
      continue;
    }
    if (!c.out.empty() && now - c.last_write_progress >= limits_.write_timeout) {
      ++stats_.closed_write_stalled;
      MarkBroken(id, c);
      continue;
    }
    if (c.deadline) sooner(*c.deadline);
    if (!c.out.empty()) sooner(c.last_write_progress + limits_.write_timeout);
  }
  next_due_ = next;
  if (!next) return -1;
  const auto wait = std::chrono::ceil<milliseconds>(*next - now).count();
  return static_cast<int>(std::clamp<int64_t>(wait, 1, 60'000));
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
  stats_.connections = conns_.size();
  service_->OnClose(id);
}

}  // namespace lockstep::launcher::stores
