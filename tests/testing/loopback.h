#pragma once
// Talking to a server a test started on 127.0.0.1 (operators' /metrics, the launcher's stores,
// the HTTP server): one connection per request, read until the server closes.

#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::testing {

// Sends `request` on a new connection to 127.0.0.1:`port` and returns every byte the server sends
// back until it closes. Unavailable when nothing accepts there or the send fails.
StatusOr<std::string> LoopbackExchange(int port, std::string_view request);

// One HTTP/1.1 request (a Content-Length body, no keep-alive) to a server that closes after its
// response: the status code and the body; status -1 when no HTTP response came.
struct HttpReply {
  int status = -1;
  std::string body;
};
HttpReply LoopbackHttp(int port, std::string_view method, std::string_view path,
                       std::string_view body = "");

}  // namespace lockstep::testing
