#pragma once
// A blocking HTTPS client for tests of the operator's TLS server: one request per connection,
// read until the server closes or `timeout` passes.

#include <chrono>
#include <string>

namespace lockstep::app::testing {

struct TlsReply {
  bool handshake = false;  // the TLS handshake completed (and verified, with trust_pem)
  std::string response;    // the raw HTTP response ("" when none came)
  std::string peer_pem;    // the server's certificate
  int status = -1;         // the HTTP status, -1 when no response came
  std::string body;
};

// Connects to 127.0.0.1:port, sends `request` over TLS. With `trust_pem`, the server's
// certificate must chain to it and name `host`; without, anything is accepted (curl -k).
TlsReply TlsExchange(int port, const std::string& request, const std::string& trust_pem = "",
                     const std::string& host = "localhost",
                     std::chrono::milliseconds timeout = std::chrono::seconds(5));

// GET `path` with an optional bearer token.
TlsReply TlsGet(int port, const std::string& path, const std::string& token = "",
                const std::string& trust_pem = "");

}  // namespace lockstep::app::testing
