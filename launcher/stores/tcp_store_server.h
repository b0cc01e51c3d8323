#pragma once
// A store that speaks torch.distributed.TCPStore's wire protocol, hosted by node 0's launcher at
// MASTER_ADDR:MASTER_PORT. Workers started with TORCHELASTIC_USE_AGENT_STORE=True connect to it
// as clients (is_master=False), so no Python process has to host the store and a restarted rank 0
// finds the store still there. One epoll thread serves every client.
//
// Thread safety: Start and Stop from one thread; the store state lives on the loop thread.

#include <memory>

#include "common/status.h"
#include "launcher/stores/epoll_server.h"
#include "launcher/stores/tcpstore_state.h"

namespace lockstep::launcher::stores {

class TcpStoreServer final : private Service {
 public:
  TcpStoreServer();
  ~TcpStoreServer() override;

  // Listens on `port` on every address (0 picks a free port); returns the bound port.
  StatusOr<int> Start(int port);
  void Stop();

 private:
  bool OnData(ConnId conn, std::string* in) override;
  void OnClose(ConnId conn) override;

  TcpStoreState state_;  // loop thread only
  EpollServer server_;
};

}  // namespace lockstep::launcher::stores
