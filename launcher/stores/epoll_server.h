#pragma once
// A small single-threaded TCP server on one epoll loop, shared by the stores the launcher hosts
// (the TCPStore-compatible store and the Horovod Gloo KV server). One thread serves every
// connection, so a store with thousands of clients costs one thread, not thousands.
//
// Thread safety: Start/Stop may be called from any one thread. Every Service callback and every
// call to Send/CloseAfterFlush happens on the loop thread (Send is only valid from callbacks).

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"

namespace lockstep::launcher::stores {

using ConnId = std::uint64_t;

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

class EpollServer {
 public:
  // `service` must outlive the server.
  explicit EpollServer(Service* service);
  ~EpollServer();
  EpollServer(const EpollServer&) = delete;
  EpollServer& operator=(const EpollServer&) = delete;

  // Listens on every address (IPv6 dual-stack where available, else IPv4) at `port` (0 picks a
  // free one) and starts the loop thread. Returns the bound port.
  StatusOr<int> Start(int port);
  // Closes every connection and joins the loop thread. Idempotent.
  void Stop();

  // Loop thread only. Queues bytes for a connection; unknown or closed connections are ignored.
  void Send(ConnId conn, std::string_view bytes);
  // Loop thread only. Closes the connection once its queued bytes are written.
  void CloseAfterFlush(ConnId conn);

 private:
  struct Connection {
    int fd = -1;
    std::string in;
    std::string out;
    bool close_after_flush = false;
    bool broken = false;
  };

  void Run();
  void Accept();
  void OnReadable(ConnId conn);
  void Flush(ConnId conn);
  void UpdateInterest(ConnId conn, const Connection& c);
  void CloseNow(ConnId conn);
  void ReapBroken();

  Service* service_;
  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  std::thread loop_;
  std::atomic<bool> running_{false};
  ConnId next_id_ = 2;                  // 0 = listener, 1 = wake-up eventfd
  std::map<ConnId, Connection> conns_;  // loop thread only
  std::vector<ConnId> to_close_;        // closed after the current event, never re-entrantly
};

}  // namespace lockstep::launcher::stores
