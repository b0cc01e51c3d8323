#pragma once
// A small single-threaded TCP server on one epoll loop, shared by the stores the launcher hosts
// (the TCPStore-compatible store and the Horovod Gloo KV server). One thread serves every
// connection, so a store with thousands of clients costs one thread, not thousands.
//
// Bounded, because any pod that can reach the port is a client (torch's store has no
// authentication; the job's NetworkPolicy keeps other pods out, docs/reliability.md):
//   - at most `max_connections` at once; one more is accepted and closed at once;
//   - one readable event reads at most `read_budget` bytes, so `in` grows only by what the
//     service leaves unconsumed (its own request limits bound that);
//   - a connection whose reply bytes are not read stops being read (no new replies pile up)
//     and is closed when no byte of them leaves for `write_timeout`;
//   - a deadline per connection set by the service (SetDeadline): the connection is closed when
//     it passes, so silent and dripping clients cannot hold a connection.
//
// Thread safety: Start/Stop may be called from any one thread. Every Service callback and every
// call to Send/CloseAfterFlush/SetDeadline happens on the loop thread (only valid from
// callbacks). stats() may be called from any thread.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"

namespace lockstep::launcher::stores {

using ConnId = std::uint64_t;
using SteadyTime = std::chrono::steady_clock::time_point;

// The protocol served on an EpollServer.
class Service {
 public:
  virtual ~Service() = default;
  virtual void OnOpen(ConnId /*conn*/) {}
  // `in` holds every byte received and not yet consumed; the service erases what it consumed.
  // Returning false closes the connection at once (a protocol error).
  virtual bool OnData(ConnId conn, std::string* in) = 0;
  virtual void OnClose(ConnId /*conn*/) {}
};

struct ServerLimits {
  size_t max_connections = 4096;
  size_t read_budget = 1024 * 1024;
  // Reading pauses while this many reply bytes wait for the client.
  size_t pause_reading_above = 4 * 1024 * 1024;
  std::chrono::milliseconds write_timeout{30'000};
};

// Counters for tests and logs; updated by the loop thread.
struct ServerStats {
  std::atomic<size_t> connections{0};
  std::atomic<uint64_t> refused_over_cap{0};
  std::atomic<uint64_t> closed_by_deadline{0};
  std::atomic<uint64_t> closed_write_stalled{0};
};

class EpollServer {
 public:
  // `service` must outlive the server.
  explicit EpollServer(Service* service, ServerLimits limits = {});
  ~EpollServer();
  EpollServer(const EpollServer&) = delete;
  EpollServer& operator=(const EpollServer&) = delete;

  // Listens at `port` (0 picks a free one) on `host`: every address it resolves to (a name, or
  // an IP literal), or every interface when empty (IPv6 dual-stack where available, else IPv4).
  // Starts the loop thread and returns the bound port.
  StatusOr<int> Start(const std::string& host, int port);
  // Closes every connection and joins the loop thread. Idempotent.
  void Stop();

  // Loop thread only. Queues bytes for a connection; unknown or closed connections are ignored.
  void Send(ConnId conn, std::string_view bytes);
  // Loop thread only. Closes the connection once its queued bytes are written.
  void CloseAfterFlush(ConnId conn);
  // Loop thread only. Closes the connection at `when` unless changed; nullopt clears it.
  void SetDeadline(ConnId conn, std::optional<SteadyTime> when);

  const ServerStats& stats() const { return stats_; }

 private:
  struct Connection {
    int fd = -1;
    std::string in;
    std::string out;
    bool close_after_flush = false;
    bool broken = false;
    bool reading = true;
    std::optional<SteadyTime> deadline;
    SteadyTime last_write_progress{};
  };

  void Run();
  void Accept(int listen_fd);
  void OnReadable(ConnId conn);
  void Flush(ConnId conn);
  void UpdateInterest(ConnId conn, Connection& c);
  void CloseNow(ConnId conn);
  void ReapBroken();
  // Closes connections past their deadline or stalled writing; returns the wait until the next.
  int ExpireConnections();
  void MarkBroken(ConnId id, Connection& c);
  // Serves what paused connections read before their pause (see UpdateInterest).
  void Resume();
  // Makes ExpireConnections scan again no later than `when`.
  void Due(SteadyTime when);

  Service* service_;
  const ServerLimits limits_;
  std::vector<int> listen_fds_;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread loop_;
  std::atomic<bool> running_{false};
  ConnId next_id_ = kFirstConnId;
  std::map<ConnId, Connection> conns_;  // loop thread only
  std::vector<ConnId> to_close_;        // closed after the current event, never re-entrantly
  std::vector<ConnId> to_resume_;       // reading again with requests already in `in`
  std::optional<SteadyTime> next_due_;  // the earliest deadline or write timeout, if any
  ServerStats stats_;

  static constexpr ConnId kWakeId = 0;
  static constexpr ConnId kFirstListenerId = 1;  // listeners: 1 .. 1 + listen_fds_.size()
  static constexpr ConnId kFirstConnId = 64;
};

}  // namespace lockstep::launcher::stores
