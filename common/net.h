#pragma once
// TCP helpers: listening, connecting with a deadline, non-blocking I/O. Errors are Status values
// carrying errno text; nothing here retries on its own except where stated. Both binaries use
// them: the launcher's rendezvous (server and client) and the operator's control client
// (protocol/control_client.h).

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/unique_fd.h"

namespace lockstep::net {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// "host:port" or "[v6]:port".
StatusOr<HostPort> ParseHostPort(std::string_view text);

// Listens on all addresses (IPv6 dual-stack when available, else IPv4) at `port` (0 = any) with
// SO_REUSEADDR; the socket is non-blocking, and sockets accepted from it inherit TCP_NODELAY.
StatusOr<UniqueFd> ListenTcp(uint16_t port, int backlog = 65535);
StatusOr<uint16_t> LocalPort(int fd);

// Resolves `host` (DNS may not know a new pod yet) and connects to the first address that
// accepts, waiting at most until `deadline`. One attempt per address; the caller retries.
// The returned socket is non-blocking with TCP_NODELAY.
StatusOr<UniqueFd> ConnectTcp(const HostPort& target,
                              std::chrono::steady_clock::time_point deadline);

Status SetNonBlocking(int fd);
void SetNoDelay(int fd);

// Result of a non-blocking read: bytes appended to `out`; eof when the peer closed.
struct ReadResult {
  size_t bytes = 0;
  bool eof = false;
};
// Reads what is queued (until a short read, EAGAIN, EOF or `max_bytes`), appending to `out`.
// Meant for level-triggered polling: data or EOF that arrives after a short read is reported
// by the next poll, so a caller must not assume EOF was seen just because bytes were read.
StatusOr<ReadResult> ReadAvailable(int fd, std::string* out, size_t max_bytes = 1u << 20);
// Writes as much of `data` as the socket takes; returns bytes written (0 on EAGAIN).
StatusOr<size_t> WriteSome(int fd, std::string_view data);
// Writes all of `data` to a non-blocking socket, waiting for room until `deadline`
// (DeadlineExceeded "send timed out" then).
Status WriteAll(int fd, std::string_view data, std::chrono::steady_clock::time_point deadline);

// Milliseconds from now until `deadline`, for poll(2): 0 once it has passed.
int MillisUntil(std::chrono::steady_clock::time_point deadline);

// Raises RLIMIT_NOFILE's soft limit to the hard limit (servers with thousands of peers).
void RaiseFileLimit();

// This machine's host name (the default advertised address).
std::string HostName();

}  // namespace lockstep::net
