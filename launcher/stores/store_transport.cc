#include "launcher/stores/store_transport.h"

#include "launcher/net/listen.h"

namespace lockstep::launcher::stores {

StatusOr<int> ServeOn(net::ConnectionServer& server, const std::string& host, int port) {
  if (port < 0 || port > 65535) return InvalidArgumentError("port out of range");
  if (server.port() != 0) return FailedPreconditionError("server already started");
  LS_ASSIGN_OR_RETURN(std::vector<UniqueFd> listeners,
                      net::ListenOnHost(host, static_cast<uint16_t>(port)));
  LS_RETURN_IF_ERROR(server.Listen(std::move(listeners)));
  server.Start();
  return static_cast<int>(server.port());
}

}  // namespace lockstep::launcher::stores
