#pragma once
// The transport bounds of the stores node 0's launcher hosts, on the launcher's one server loop
// (launcher/net/connection_server.h). torch's store and Horovod's KV server have no
// authentication, so every connection counts as authenticated at accept (none is evicted for a
// newer one: one past the cap is closed at once) and each store sets its own deadlines; the job's
// NetworkPolicy keeps other pods out (docs/reliability.md).

#include <chrono>
#include <cstddef>
#include <string>

#include "common/status.h"
#include "launcher/net/connection_server.h"

namespace lockstep::launcher::stores {

using ConnId = net::ConnId;
using ServerStats = net::ConnectionStats;

struct ServerLimits {
  size_t max_connections = 4096;
  // One readable event reads at most this, so `in` grows only by what the store leaves
  // unconsumed (its own request limits bound that).
  size_t read_budget = 1024 * 1024;
  // Reading pauses while this many reply bytes wait for the client.
  size_t pause_reading_above = 4 * 1024 * 1024;
  // A connection whose replies make no progress for this long is closed.
  std::chrono::milliseconds write_timeout{30'000};

  net::ConnectionLimits ToConnectionLimits() const {
    net::ConnectionLimits limits;
    limits.max_connections = max_connections;
    limits.require_authentication = false;
    limits.read_budget = read_budget;
    limits.pause_reading_above = pause_reading_above;
    limits.write_timeout = write_timeout;
    return limits;
  }
};

// Listens at `port` on `host` (net::ListenOnHost: empty is every interface, 0 picks a free port)
// and starts `server`'s loop; the bound port.
StatusOr<int> ServeOn(net::ConnectionServer& server, const std::string& host, int port);

}  // namespace lockstep::launcher::stores
