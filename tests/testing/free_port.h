#pragma once
// A loopback TCP port that was free a moment ago (bind to port 0, read it, close), never the
// same one twice in a process: for tests that start servers (operators, launchers, stores) on
// 127.0.0.1. And a blocking TCP connection to such a server.

namespace lockstep::testing {

int FreePort();

// A connected TCP socket to `ip` (IPv4, dotted) at `port`, or -1.
int ConnectTcp(int port, const char* ip = "127.0.0.1");

}  // namespace lockstep::testing
