#pragma once
// The bounds of the launcher's server loop (connection_server.h) and the decisions it makes from
// them that need no socket: pure functions, table-tested. Thread-compatible values.

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>

#include "common/clock.h"

namespace lockstep::net {

// Each bound is explained in connection_server.h; these are its knobs.
struct ConnectionLimits {
  size_t max_connections = 4096;
  // Connections not yet authenticated, or lingering, at once; 0: only max_connections counts.
  size_t max_unauthenticated = 0;
  // False: every connection is authenticated at accept (a protocol without authentication, whose
  // handler sets its own deadlines), so none is evicted for a newer one.
  bool require_authentication = true;
  // 0: no pre-auth deadline.
  std::chrono::milliseconds pre_auth_timeout{0};
  size_t pre_auth_bytes = 32u << 10;
  size_t read_budget = 1u << 20;
  size_t pause_reading_above = std::numeric_limits<size_t>::max();
  size_t max_queued_bytes = std::numeric_limits<size_t>::max();
  // 0: queued bytes may wait for as long as the peer stays connected.
  std::chrono::milliseconds write_timeout{0};
  size_t linger_discard_bytes = 64u << 10;
  std::chrono::milliseconds linger_timeout{2000};
};

// What a newly accepted connection gets, given `open` connections of which `evictable` are not
// yet authenticated or linger.
enum class Admission {
  kAdmit,
  // Full, and the oldest evictable one is closed to make room: it had the longest to
  // authenticate, and a real client closed there connects again.
  kEvictOldest,
  // Full of authenticated connections: the new one is closed at once (the backlog would
  // otherwise hide the cause from the client).
  kRefuse,
};
Admission DecideAdmission(size_t open, size_t evictable, const ConnectionLimits& limits);

// How long epoll_wait may sleep at `now` until `next` (nullopt: nothing is due): -1 (no timer),
// 0 when it is due, else whole milliseconds rounded up (never waking early), at most 60 s.
int WaitMillis(Clock::Steady now, std::optional<Clock::Steady> next);

}  // namespace lockstep::net
