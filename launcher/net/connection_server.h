#pragma once
// The launcher's one TCP server loop: one thread, one epoll set, every connection of a server
// that any pod reaching the port may open (node 0's rendezvous server, the TCPStore-compatible
// store, the Gloo KV server). It owns the transport and its bounds; a ConnectionHandler owns the
// protocol. What a peer costs is bounded here, whatever it sends (docs/launcher.md "Limits"; the
// knobs are ConnectionLimits, policy.h):
//   - at most `max_connections` at once, and at most `max_unauthenticated` of them not yet
//     authenticated or lingering: one more closes the oldest of those (by accept order: it had the
//     longest to authenticate; a real client closed so connects again), or, when every connection
//     is authenticated, is closed at once (the backlog would otherwise hide the cause);
//   - before Authenticate, a connection must authenticate within `pre_auth_timeout` of its accept
//     (bytes do not extend that) and holds at most `pre_auth_bytes` unconsumed;
//   - one readable event reads at most `read_budget` bytes of an authenticated connection, so a
//     busy peer cannot hold the loop from the others;
//   - a connection's queued output is bounded: past `max_queued_bytes` the connection is closed,
//     past `pause_reading_above` it is not read (no new replies pile up), and queued bytes that
//     make no progress for `write_timeout` close it;
//   - a lingering connection (Linger: refused or answered) keeps nothing it sends: up to
//     `linger_discard_bytes` are read and dropped (so a polite peer's close is seen), then reading
//     stops, and it is closed `linger_timeout` after Linger at the latest.
//
// Closing is synchronous: Close (and a failed Send) closes the socket and runs the handler's
// OnClose before it returns, so a handler re-checks its own state after calling either. The
// Connection object itself lives until the end of the loop iteration, so the `in` buffer OnData
// got stays valid while OnData runs.
//
// Time: every deadline is read from the injected Clock (a FakeClock in tests moves them), and the
// loop waits on epoll at most until the next one.
//
// Thread safety: Listen/Start/Stop/port from one owning thread. Every handler callback runs on the
// loop thread, and Send/Close/Authenticate/Linger/SetDeadline/clock are valid only there (from
// callbacks). stats() may be read from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "launcher/net/policy.h"

namespace lockstep::net {

// A connection's id: accept order, never reused while the server lives.
using ConnId = std::uint64_t;

// Counters for tests and logs; written by the loop thread.
struct ConnectionStats {
  std::atomic<size_t> connections{0};
  std::atomic<uint64_t> refused_over_cap{0};    // closed at accept: every slot authenticated
  std::atomic<uint64_t> evicted{0};             // closed for a newer connection
  std::atomic<uint64_t> closed_by_deadline{0};  // pre-auth, linger or handler deadline
  std::atomic<uint64_t> closed_write_stalled{0};
  std::atomic<uint64_t> closed_queue_full{0};
};

// Why a connection closed, as OnClose reports it.
struct CloseInfo {
  std::string why;
  // The peer closed or reset the connection (EOF, a read or write error), as opposed to one the
  // server gave up on (a deadline, a bound, the handler).
  bool disconnected = false;
};

// The protocol served on a ConnectionServer. Callbacks run on the loop thread; each may call the
// server's Send/Close/Authenticate/Linger/SetDeadline for any connection.
class ConnectionHandler {
 public:
  virtual ~ConnectionHandler() = default;
  virtual void OnOpen(ConnId /*conn*/) {}
  // `in` holds every byte received and not yet consumed; the handler erases what it consumed.
  // Returning false closes the connection at once (a protocol error the handler has logged).
  virtual bool OnData(ConnId conn, std::string* in) = 0;
  // The connection is gone (its socket closed); never called by Stop.
  virtual void OnClose(ConnId /*conn*/, const CloseInfo& /*info*/) {}
  // Called once per loop iteration, after the events of the iteration (and when the wait timed
  // out). Returns when it must run next at the latest (nullopt: only after the next events).
  virtual std::optional<Clock::Steady> OnTimer(Clock::Steady /*now*/) { return std::nullopt; }
};

class ConnectionServer {
 public:
  // `handler` and `clock` must outlive the server.
  ConnectionServer(ConnectionHandler* handler, ConnectionLimits limits, std::string log_prefix,
                   const Clock* clock = &RealClock::Get());
  ~ConnectionServer();
  ConnectionServer(const ConnectionServer&) = delete;
  ConnectionServer& operator=(const ConnectionServer&) = delete;

  // Takes listening sockets (non-blocking, bound, listening); peers may connect from now on and
  // are accepted once Start runs. Error when the epoll set cannot be made.
  Status Listen(std::vector<UniqueFd> listeners);
  // The first listener's port; 0 before Listen.
  uint16_t port() const { return port_; }
  // Runs the loop on its own thread.
  void Start();
  // Ends the loop, joins its thread and closes every connection (without OnClose: the handler may
  // be on its way out) and the listeners. Idempotent.
  void Stop();

  // Loop thread only, from here on. Unknown or closed connections are ignored.
  // Queues bytes (written at once as far as the socket takes them). Closes the connection when
  // the queue would pass max_queued_bytes or the write fails.
  void Send(ConnId conn, std::string_view bytes);
  void Close(ConnId conn, std::string why);
  // Closes the connection once its queued bytes are written.
  void CloseAfterFlush(ConnId conn);
  // The connection proved who it is: no pre-auth deadline or byte budget, no eviction.
  void Authenticate(ConnId conn);
  // Refused or answered: OnData is not called again, what the peer sends is dropped, and the
  // connection closes when the peer does or linger_timeout from now. `half_close`: once the queue
  // is written the server shuts its side down, so the peer sees the answer and then its end.
  void Linger(ConnId conn, bool half_close);
  // Closes the connection at `when` (nullopt clears it). Replaces a pre-auth deadline.
  void SetDeadline(ConnId conn, std::optional<Clock::Steady> when);
  const Clock& clock() const { return *clock_; }

  const ConnectionStats& stats() const { return stats_; }

 private:
  struct Connection;

  void Loop();
  void AcceptAll(int listen_fd);
  void Admit(UniqueFd fd);
  // Makes room for one more connection; false when there is none (all are authenticated).
  bool MakeRoom();
  void LogShed(const char* what);
  void OnEvent(ConnId id, uint32_t events);
  void OnReadable(Connection& c);
  void Discard(Connection& c);
  void Deliver(Connection& c);
  void Flush(Connection& c);
  void UpdateInterest(Connection& c);
  void Resume();
  void ExpireDeadlines(Clock::Steady now);
  void CloseWith(ConnId id, const CloseInfo& info);
  Connection* Find(ConnId id);
  // Makes ExpireDeadlines scan again no later than `when`.
  void Due(Clock::Steady when);
  // The earlier of the next deadline and what the handler's OnTimer asked for.
  std::optional<Clock::Steady> NextDue() const;

  ConnectionHandler* handler_;
  const ConnectionLimits limits_;
  const std::string log_prefix_;
  const Clock* clock_;
  std::vector<UniqueFd> listeners_;
  UniqueFd epoll_fd_;
  UniqueFd wake_fd_;
  uint16_t port_ = 0;
  std::thread thread_;

  // Loop thread only.
  ConnId next_id_ = kFirstConnId;
  std::unordered_map<ConnId, std::unique_ptr<Connection>> conns_;
  // Not yet authenticated, or lingering, oldest first: what max_unauthenticated counts and
  // eviction closes first.
  std::set<ConnId> evictable_;
  // Closed in this iteration: freed after it, so no callback's buffer vanishes under it.
  std::vector<std::unique_ptr<Connection>> closed_;
  std::vector<ConnId> to_resume_;             // reading again with bytes already in `in`
  std::optional<Clock::Steady> next_due_;     // the earliest deadline or write timeout
  std::optional<Clock::Steady> handler_due_;  // what OnTimer asked for
  std::string scratch_;                       // a lingering connection's dropped bytes
  ConnectionStats stats_;

  static constexpr ConnId kWakeId = 0;
  static constexpr ConnId kFirstListenerId = 1;  // listeners: 1 .. listeners_.size()
  static constexpr ConnId kFirstConnId = 64;
};

}  // namespace lockstep::net
