#include "launcher/net/connection_server.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/net.h"

namespace lockstep::net {
namespace {

// A buffer emptied after a large read gives its memory back: thousands of idle peers each keep
// only a small one.
constexpr size_t kKeptCapacity = 64u << 10;

void Shrink(std::string& buffer) {
  if (buffer.empty() && buffer.capacity() > kKeptCapacity) std::string().swap(buffer);
}

}  // namespace

struct ConnectionServer::Connection {
  ConnId id = 0;
  UniqueFd fd;
  std::string in;
  std::string out;
  size_t out_pos = 0;
  bool authenticated = false;
  bool lingering = false;
  bool half_close = false;    // shut down our side once `out` is written
  bool shut = false;          // ...done
  bool discard_done = false;  // lingering, and linger_discard_bytes were dropped
  bool close_after_flush = false;
  bool reading = true;  // EPOLLIN is in `interest`
  uint32_t interest = EPOLLIN;
  size_t discarded = 0;
  std::optional<Clock::Steady> deadline;
  const char* deadline_why = "";
  Clock::Steady last_write_progress{};

  size_t queued() const { return out.size() - out_pos; }
};

ConnectionServer::ConnectionServer(ConnectionHandler* handler, ConnectionLimits limits,
                                   std::string log_prefix, const Clock* clock)
    : handler_(handler), limits_(limits), log_prefix_(std::move(log_prefix)), clock_(clock) {}

ConnectionServer::~ConnectionServer() { Stop(); }

Status ConnectionServer::Listen(std::vector<UniqueFd> listeners) {
  if (!listeners_.empty()) return FailedPreconditionError(log_prefix_ + "already listening");
  if (listeners.empty()) return InvalidArgumentError(log_prefix_ + "no listening socket");
  epoll_fd_ = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  wake_fd_ = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !wake_fd_.valid()) {
    return InternalError(log_prefix_ + "epoll_create1/eventfd: " + std::strerror(errno));
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeId;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, wake_fd_.get(), &ev);
  for (size_t i = 0; i < listeners.size(); ++i) {
    ev.data.u64 = kFirstListenerId + i;
    ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listeners[i].get(), &ev);
  }
  LS_ASSIGN_OR_RETURN(port_, LocalPort(listeners.front().get()));
  listeners_ = std::move(listeners);
  return Status::Ok();
}

void ConnectionServer::Start() {
  if (thread_.joinable() || !epoll_fd_.valid()) return;
  thread_ = std::thread([this] { Loop(); });
}

void ConnectionServer::Stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(wake_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  conns_.clear();
  evictable_.clear();
  closed_.clear();
  to_resume_.clear();
  stats_.connections = 0;
  listeners_.clear();
  port_ = 0;
  epoll_fd_.Reset();
  wake_fd_.Reset();
}

void ConnectionServer::Loop() {
  std::vector<epoll_event> events(1024);
  handler_due_ = handler_->OnTimer(clock_->Now());
  for (;;) {
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                               WaitMillis(clock_->Now(), NextDue()));
    if (n < 0 && errno != EINTR) {
      log::Error(log_prefix_ + "epoll_wait failed", {{"error", std::strerror(errno)}});
      return;
    }
    for (int i = 0; i < n; ++i) {
      const ConnId id = events[static_cast<size_t>(i)].data.u64;
      if (id == kWakeId) return;
      if (id < kFirstConnId) {
        AcceptAll(listeners_[id - kFirstListenerId].get());
        continue;
      }
      OnEvent(id, events[static_cast<size_t>(i)].events);
    }
    Resume();
    ExpireDeadlines(clock_->Now());
    handler_due_ = handler_->OnTimer(clock_->Now());
    closed_.clear();
  }
}

std::optional<Clock::Steady> ConnectionServer::NextDue() const {
  if (handler_due_ && (!next_due_ || *handler_due_ < *next_due_)) return handler_due_;
  return next_due_;
}

void ConnectionServer::AcceptAll(int listen_fd) {
  for (;;) {
    UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log::Warning(log_prefix_ + "accept failed", {{"error", std::strerror(errno)}});
      }
      return;
    }
    if (!MakeRoom()) {
      ++stats_.refused_over_cap;
      LogShed("closed a new connection: every connection is authenticated");
      continue;  // closed on scope exit
    }
    Admit(std::move(fd));
  }
}

bool ConnectionServer::MakeRoom() {
  switch (DecideAdmission(conns_.size(), evictable_.size(), limits_)) {
    case Admission::kAdmit:
      return true;
    case Admission::kEvictOldest:
      ++stats_.evicted;
      LogShed("closed the oldest unauthenticated connection for a newer one");
      CloseWith(*evictable_.begin(), {"closed for a newer connection", false});
      return true;
    case Admission::kRefuse:
      break;
  }
  return false;
}

void ConnectionServer::LogShed(const char* what) {
  // A flood could otherwise fill the log: the first and every 1000th.
  const uint64_t shed = stats_.refused_over_cap + stats_.evicted;
  if (shed % 1000 != 1) return;
  log::Warning(log_prefix_ + what,
               {{"closed_beyond_the_caps", std::to_string(shed)},
                {"max_connections", std::to_string(limits_.max_connections)},
                {"max_unauthenticated", std::to_string(limits_.max_unauthenticated)}});
}

void ConnectionServer::Admit(UniqueFd fd) {
  // TCP_NODELAY comes from the listening socket (Linux copies it to accepted ones).
  auto conn = std::make_unique<Connection>();
  Connection& c = *conn;
  c.id = next_id_++;
  c.fd = std::move(fd);
  c.authenticated = !limits_.require_authentication;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, c.fd.get(), &ev);
  if (!c.authenticated) {
    evictable_.insert(c.id);
    if (limits_.pre_auth_timeout.count() > 0) {
      c.deadline = clock_->Now() + limits_.pre_auth_timeout;
      c.deadline_why = "did not authenticate within the auth timeout";
      Due(*c.deadline);
    }
  }
  const ConnId id = c.id;
  conns_[id] = std::move(conn);
  stats_.connections = conns_.size();
  handler_->OnOpen(id);
}

ConnectionServer::Connection* ConnectionServer::Find(ConnId id) {
  auto it = conns_.find(id);
  return it == conns_.end() ? nullptr : it->second.get();
}

void ConnectionServer::OnEvent(ConnId id, uint32_t events) {
  Connection* c = Find(id);
  if (c == nullptr) return;  // closed earlier in this batch
  if (events & EPOLLOUT) Flush(*c);
  c = Find(id);
  if (c != nullptr && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) OnReadable(*c);
}

void ConnectionServer::OnReadable(Connection& c) {
  if (c.lingering) return Discard(c);
  if (!c.reading) return;  // paused: its hang-up is seen once its replies are written or fail
  const ConnId id = c.id;
  size_t budget = limits_.read_budget;
  if (!c.authenticated) {
    if (c.in.size() >= limits_.pre_auth_bytes) {
      return CloseWith(id, {"sent more than " + std::to_string(limits_.pre_auth_bytes) +
                                " bytes before authenticating",
                            false});
    }
    budget = limits_.pre_auth_bytes - c.in.size();
  }
  // Level-triggered: what is left unread raises the next event, after the other connections.
  StatusOr<ReadResult> r = ReadAvailable(c.fd.get(), &c.in, budget);
  if (!r.ok()) return CloseWith(id, {r.status().ToString(), true});
  // Complete requests are served even when the peer half-closed after sending them.
  Deliver(c);
  if (r->eof && Find(id) != nullptr) CloseWith(id, {"peer closed the connection", true});
}

void ConnectionServer::Deliver(Connection& c) {
  if (c.in.empty() || c.lingering) return;
  const ConnId id = c.id;
  // `c` stays valid through OnData even if it closes the connection (closed_ keeps it).
  const bool keep = handler_->OnData(id, &c.in);
  if (Find(id) == nullptr) return;
  if (!keep) return CloseWith(id, {"closed by the protocol handler", false});
  if (c.lingering) c.in.clear();  // refused or answered: the rest is dropped, not kept
  if (!c.authenticated && c.in.size() > limits_.pre_auth_bytes) {
    return CloseWith(id, {"sent more than " + std::to_string(limits_.pre_auth_bytes) +
                              " bytes before authenticating",
                          false});
  }
  Shrink(c.in);
}

void ConnectionServer::Discard(Connection& c) {
  const ConnId id = c.id;
  // No longer read: only a hang-up or an error wakes it.
  if (c.discard_done) return CloseWith(id, {"the peer closed the connection", false});
  scratch_.clear();
  StatusOr<ReadResult> r =
      ReadAvailable(c.fd.get(), &scratch_, limits_.linger_discard_bytes - c.discarded);
  if (!r.ok()) return CloseWith(id, {r.status().ToString(), false});
  if (r->eof) return CloseWith(id, {"the peer closed the connection", false});
  c.discarded += r->bytes;
  if (c.discarded >= limits_.linger_discard_bytes) {
    // It keeps sending after its answer: TCP's window stops it until the linger timeout.
    c.discard_done = true;
    UpdateInterest(c);
  }
}

void ConnectionServer::Send(ConnId id, std::string_view bytes) {
  Connection* c = Find(id);
  if (c == nullptr || bytes.empty()) return;
  if (c->queued() + bytes.size() > limits_.max_queued_bytes) {
    ++stats_.closed_queue_full;
    return CloseWith(id, {"the peer does not read what the server sends", false});
  }
  if (c->queued() == 0) {
    c->out.clear();
    c->out_pos = 0;
    c->last_write_progress = clock_->Now();
    // Nothing queued (the usual case): written straight from `bytes`; only what the socket did
    // not take is copied.
    StatusOr<size_t> n = WriteSome(c->fd.get(), bytes);
    if (!n.ok()) return CloseWith(id, {n.status().ToString(), true});
    bytes.remove_prefix(*n);
  }
  c->out.append(bytes);
  if (c->queued() > 0 && limits_.write_timeout.count() > 0) {
    Due(c->last_write_progress + limits_.write_timeout);
  }
  UpdateInterest(*c);
}

void ConnectionServer::Flush(Connection& c) {
  if (c.queued() > 0) {
    StatusOr<size_t> n = WriteSome(c.fd.get(), std::string_view(c.out).substr(c.out_pos));
    if (!n.ok()) return CloseWith(c.id, {n.status().ToString(), true});
    c.out_pos += *n;
    if (*n > 0) {
      c.last_write_progress = clock_->Now();
      if (c.queued() > 0 && limits_.write_timeout.count() > 0) {
        Due(c.last_write_progress + limits_.write_timeout);
      }
    }
    if (c.queued() == 0) {
      c.out.clear();
      c.out_pos = 0;
      Shrink(c.out);
    }
  }
  UpdateInterest(c);
}

void ConnectionServer::UpdateInterest(Connection& c) {
  if (c.queued() == 0) {
    if (c.close_after_flush) return CloseWith(c.id, {"closed after its reply", false});
    if (c.half_close && !c.shut) {
      // The answer is out: the peer reads it, then its end.
      ::shutdown(c.fd.get(), SHUT_WR);
      c.shut = true;
    }
  }
  const bool paused = c.queued() > limits_.pause_reading_above;
  const bool reading = !paused && !(c.lingering && c.discard_done);
  // Bytes read before a pause wait in `in`: served by the loop, never re-entrantly (this may run
  // inside another connection's OnData).
  if (reading && !c.reading && !c.in.empty()) to_resume_.push_back(c.id);
  c.reading = reading;
  const uint32_t interest = (reading ? static_cast<uint32_t>(EPOLLIN) : 0u) |
                            (c.queued() > 0 ? static_cast<uint32_t>(EPOLLOUT) : 0u);
  if (interest == c.interest) return;
  c.interest = interest;
  epoll_event ev{};
  ev.events = interest;
  ev.data.u64 = c.id;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void ConnectionServer::Resume() {
  while (!to_resume_.empty()) {
    std::vector<ConnId> batch;
    batch.swap(to_resume_);
    for (ConnId id : batch) {
      Connection* c = Find(id);
      if (c != nullptr && c->reading) Deliver(*c);
    }
  }
}

void ConnectionServer::Close(ConnId id, std::string why) { CloseWith(id, {std::move(why), false}); }

void ConnectionServer::CloseAfterFlush(ConnId id) {
  Connection* c = Find(id);
  if (c == nullptr) return;
  c->close_after_flush = true;
  UpdateInterest(*c);
}

void ConnectionServer::Authenticate(ConnId id) {
  Connection* c = Find(id);
  if (c == nullptr || c->authenticated) return;
  c->authenticated = true;
  evictable_.erase(id);
  if (!c->lingering) c->deadline.reset();
}

void ConnectionServer::Linger(ConnId id, bool half_close) {
  Connection* c = Find(id);
  if (c == nullptr) return;
  if (!c->lingering) {
    c->lingering = true;
    c->in.clear();
    Shrink(c->in);
    evictable_.insert(id);  // by accept order, like the connections still to authenticate
    c->deadline = clock_->Now() + limits_.linger_timeout;
    c->deadline_why = "closing timeout";
    Due(*c->deadline);
  }
  c->half_close = c->half_close || half_close;
  UpdateInterest(*c);
}

void ConnectionServer::SetDeadline(ConnId id, std::optional<Clock::Steady> when) {
  Connection* c = Find(id);
  if (c == nullptr) return;
  c->deadline = when;
  c->deadline_why = "deadline passed";
  if (when) Due(*when);
}

void ConnectionServer::Due(Clock::Steady when) {
  if (!next_due_ || when < *next_due_) next_due_ = when;
}

void ConnectionServer::ExpireDeadlines(Clock::Steady now) {
  // Scanning every connection after every event would cost O(connections) per request.
  if (next_due_ && now < *next_due_) return;
  std::optional<Clock::Steady> next;
  std::vector<std::pair<ConnId, CloseInfo>> expired;
  for (const auto& [id, conn] : conns_) {
    const Connection& c = *conn;
    const bool stalled = c.queued() > 0 && limits_.write_timeout.count() > 0;
    if (c.deadline && *c.deadline <= now) {
      ++stats_.closed_by_deadline;
      expired.push_back({id, {c.deadline_why, false}});
    } else if (stalled && now - c.last_write_progress >= limits_.write_timeout) {
      ++stats_.closed_write_stalled;
      expired.push_back({id, {"no byte of the reply left within the write timeout", false}});
    } else {
      if (c.deadline && (!next || *c.deadline < *next)) next = c.deadline;
      const Clock::Steady write_due = c.last_write_progress + limits_.write_timeout;
      if (stalled && (!next || write_due < *next)) next = write_due;
    }
  }
  next_due_ = next;
  for (const auto& [id, info] : expired) CloseWith(id, info);
}

void ConnectionServer::CloseWith(ConnId id, const CloseInfo& info) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  std::unique_ptr<Connection> c = std::move(it->second);
  conns_.erase(it);
  evictable_.erase(id);
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, c->fd.get(), nullptr);
  c->fd.Reset();
  stats_.connections = conns_.size();
  closed_.push_back(std::move(c));
  handler_->OnClose(id, info);
}

}  // namespace lockstep::net
