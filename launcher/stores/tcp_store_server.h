#pragma once
// A store that speaks torch.distributed.TCPStore's wire protocol, hosted by node 0's launcher at
// MASTER_ADDR:MASTER_PORT. Workers started with TORCHELASTIC_USE_AGENT_STORE=True connect to it
// as clients (is_master=False), so no Python process has to host the store and a restarted rank 0
// finds the store still there. One epoll thread serves every client.
//
// torch's store has no authentication, so every bound is the server's own (issue 18): the
// connection cap, read budget and write timeout of its server loop (store_transport.h); a
// connection must VALIDATE within `handshake_timeout` (its first byte must be VALIDATE's) and
// finish every request it starts within `request_timeout` (a validated client idle between
// requests is kept: torch's clients hold one connection for the whole job); requests are parsed
// incrementally and refused past kMaxRequestBytes; the bytes of unfinished requests across all
// connections stay under `max_pending_bytes`; what the store holds is bounded by StoreLimits.
//
// Thread safety: Start and Stop from one thread; the store state lives on the loop thread.

#include <chrono>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/net/connection_server.h"
#include "launcher/stores/store_transport.h"
#include "launcher/stores/tcpstore_codec.h"
#include "launcher/stores/tcpstore_state.h"

namespace lockstep::launcher::stores {

struct TcpStoreOptions {
  ServerLimits server;
  StoreLimits store;
  std::chrono::milliseconds handshake_timeout{10'000};
  std::chrono::milliseconds request_timeout{30'000};
  size_t max_pending_bytes = 256 * 1024 * 1024;
  // Times the deadlines above; must outlive the server.
  const Clock* clock = &RealClock::Get();
};

class TcpStoreServer final : private net::ConnectionHandler {
 public:
  explicit TcpStoreServer(TcpStoreOptions options = {});
  ~TcpStoreServer() override;

  // Listens at `port` on `host` (net::ListenOnHost: empty is every interface; 0 picks a free
  // port) and starts the loop thread; returns the bound port.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();

  const ServerStats& stats() const { return server_.stats(); }

 private:
  struct Client {
    RequestParser parser;
    bool mid_request = false;
  };

  void OnOpen(ConnId conn) override;
  bool OnData(ConnId conn, std::string* in) override;
  void OnClose(ConnId conn, const net::CloseInfo& info) override;
  // Parses and applies what `in` holds; false closes the connection.
  bool Serve(ConnId conn, Client& client, std::string_view in, std::vector<Reply>* replies);
  void UpdateDeadline(ConnId conn, Client& client);
  bool Refuse(ConnId conn, const std::string& why);

  const TcpStoreOptions options_;
  TcpStoreState state_;                 // loop thread only
  std::map<ConnId, Client> clients_;    // loop thread only
  uint64_t pending_bytes_ = 0;          // sum of the clients' request_bytes()
  uint64_t refusals_ = 0;
  net::ConnectionServer server_;
};

}  // namespace lockstep::launcher::stores
