#pragma once
// Horovod's Gloo rendezvous HTTP key-value server, hosted by node 0's launcher at
// HOROVOD_GLOO_RENDEZVOUS_ADDR:HOROVOD_GLOO_RENDEZVOUS_PORT, so Horovod jobs need no horovodrun,
// mpirun or ssh. One epoll thread serves every client.
//
// Thread safety: Start and Stop from one thread.

#include <map>
#include <string>

#include "common/status.h"
#include "launcher/stores/epoll_server.h"
#include "launcher/stores/gloo_kv_state.h"

namespace lockstep::launcher::stores {

class GlooKvServer final : private Service {
 public:
  // `scope_sizes`: member count of each Horovod scope (see frameworks::HorovodScopeSizes).
  explicit GlooKvServer(std::map<std::string, int> scope_sizes);
  ~GlooKvServer() override;

  // Listens on `port` on every address (0 picks a free port); returns the bound port.
  StatusOr<int> Start(int port);
  void Stop();

 private:
  bool OnData(ConnId conn, std::string* in) override;

  GlooKvState state_;  // loop thread only
  EpollServer server_;
};

}  // namespace lockstep::launcher::stores
