#pragma once
// Listening sockets for the launcher's servers (connection_server.h takes them). Errors are
// Status values with errno text; nothing retries.

#include <string>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace lockstep::net {

// Listens at `port` (0 picks a free one) on `host`: every distinct address it resolves to (a
// name, or an IP literal), each at the same port (the first picks it when `port` is 0);
// addresses that are not this machine's fail to bind and are skipped. Empty `host`: every
// interface (IPv6 dual-stack where available, else IPv4). Sockets are non-blocking, and the
// connections accepted from them have TCP_NODELAY. Error when no address could be bound.
StatusOr<std::vector<UniqueFd>> ListenOnHost(const std::string& host, uint16_t port);

}  // namespace lockstep::net
