#pragma once
// The head of an HTTP/1.1 request as the operator's HTTP server reads it (request line and header
// fields, RFC 9112), and the bearer token of its Authorization field. Pure functions over bytes a
// client sent: every input is untrusted (tests/fuzz/operator_http_head replays a corpus).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lockstep::app {

struct HttpRequest {
  std::string method;  // as sent ("GET", "HEAD", ...)
  std::string path;    // the target without its query string
  // In order; names lower-cased, values without surrounding spaces and tabs.
  std::vector<std::pair<std::string, std::string>> headers;

  // Every value of the field `lower_name`, in order.
  std::vector<std::string_view> Values(std::string_view lower_name) const;
};

// Parses a request head: the request line, then "name: value" lines, each ending in CRLF, up to
// an empty line (which may be missing at the end of `head`). INVALID_ARGUMENT when the request
// line is not "METHOD SP target SP HTTP/x.y", a field line has no colon, an empty or non-token
// name, a line folded onto the previous one (obsolete, refused as RFC 9112 allows), or a control
// character other than tab in a value.
StatusOr<HttpRequest> ParseRequestHead(std::string_view head);

// The token of exactly one "Authorization: Bearer <token>" field (the scheme in any case, as
// Kubernetes' bearer authenticator accepts it); nullopt without that field, with two of them,
// with another scheme, or with an empty token or one holding more than a single word.
std::optional<std::string> BearerToken(const HttpRequest& request);

}  // namespace lockstep::app
