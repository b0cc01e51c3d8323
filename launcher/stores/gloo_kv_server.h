#pragma once
// Horovod's Gloo rendezvous HTTP key-value server, hosted by node 0's launcher at
// HOROVOD_GLOO_RENDEZVOUS_ADDR:HOROVOD_GLOO_RENDEZVOUS_PORT, so Horovod jobs need no horovodrun,
// mpirun or ssh. One epoll thread serves every client.
//
// Bounded like the TCPStore (issue 18): the connection cap, read budget and write timeout of its
// server loop (store_transport.h); one request per connection, which must arrive whole within
// `request_timeout` of the connect; a body over kMaxHttpBodyBytes is refused from its
// Content-Length, before it is sent;
// the bytes of requests still arriving, across every connection, stay under
// `max_pending_bytes`; what the KV holds is bounded by GlooKvState.
//
// Thread safety: Start and Stop from one thread.

#include <chrono>
#include <map>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "launcher/net/connection_server.h"
#include "launcher/stores/gloo_kv_state.h"
#include "launcher/stores/http_codec.h"
#include "launcher/stores/store_transport.h"

namespace lockstep::launcher::stores {

struct GlooKvOptions {
  ServerLimits server;
  std::chrono::milliseconds request_timeout{10'000};
  size_t max_pending_bytes = 64 * 1024 * 1024;
  size_t max_stored_bytes = 256 * 1024 * 1024;
  // Times the request timeout; must outlive the server.
  const Clock* clock = &RealClock::Get();
};

class GlooKvServer final : private net::ConnectionHandler {
 public:
  // `scope_sizes`: member count of each Horovod scope (see frameworks::HorovodScopeSizes).
  explicit GlooKvServer(std::map<std::string, int> scope_sizes, GlooKvOptions options = {});
  ~GlooKvServer() override;

  // Listens at `port` on `host` (net::ListenOnHost: empty is every interface; 0 picks a free
  // port) and starts the loop thread; returns the bound port.
  StatusOr<int> Start(const std::string& host, int port);
  void Stop();

  const ServerStats& stats() const { return server_.stats(); }

 private:
  struct Client {
    HttpRequestReader reader;
    size_t counted = 0;  // what this client adds to pending_bytes_
  };

  void OnOpen(ConnId conn) override;
  bool OnData(ConnId conn, std::string* in) override;
  void OnClose(ConnId conn, const net::CloseInfo& info) override;
  void Answer(ConnId conn, int code, std::string_view body);

  const GlooKvOptions options_;
  GlooKvState state_;                 // loop thread only
  std::map<ConnId, Client> clients_;  // loop thread only
  size_t pending_bytes_ = 0;
  net::ConnectionServer server_;
};

}  // namespace lockstep::launcher::stores
