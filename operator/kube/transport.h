#pragma once
// Transport: the HTTP boundary of the Kubernetes client. RestClient builds requests and decodes
// responses; a Transport only moves bytes (and adds authentication). Implementations are
// thread-safe: many requests may be in flight at once from any threads.
//
// Error contract (the retry policy in RestClient depends on it):
//   UNAVAILABLE        the request never reached the server (resolve/connect/TLS handshake
//                      failed), so retrying is safe even for a non-idempotent create;
//   INTERNAL           the connection broke after the request may have been sent;
//   DEADLINE_EXCEEDED  the request timeout (or a watch's idle bound) expired;
//   CANCELLED          a stream was cancelled by its caller;
//   FAILED_PRECONDITION the request's fence was closed when it was about to be sent: it never
//                      left this process (see Request::fence).
// Any HTTP status, including 4xx/5xx, is a successful Response.

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::kube {

struct Request {
  std::string method = "GET";
  std::string path;  // absolute path with query string, e.g. /api/v1/namespaces?limit=500
  std::string body;
  std::string content_type;  // empty when there is no body
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // ignored by Stream()
  // When set, asked as late as the transport can (curl: once the connection is ready, just before
  // the request is written to it); false drops the request unsent. A leader's writes carry its
  // lease check here, so a request queued before the process was paused is not sent after the
  // lease was lost (RestOptions::write_fence). Called on the transport's thread.
  std::function<bool()> fence;
  // Do(): polled while the request is in flight; true aborts it with CANCELLED. May be null.
  const std::atomic<bool>* cancel = nullptr;
};

struct Response {
  long status = 0;
  std::string body;
  std::string retry_after;  // raw Retry-After header, empty when absent
};

struct StreamOptions {
  // A stream that delivers no byte at all for this long is considered dead and ends with
  // DEADLINE_EXCEEDED. Healthy watches are never cut by a total timeout.
  std::chrono::seconds idle_timeout{std::chrono::seconds(90)};
  // Polled about once per second (and on every chunk); true ends the stream with CANCELLED.
  const std::atomic<bool>* cancel = nullptr;
};

// Called with each complete line (without the newline) of a 2xx streaming response. Returning
// false ends the stream early (the call then returns CANCELLED).
using LineHandler = std::function<bool(std::string_view line)>;

class Transport {
 public:
  virtual ~Transport() = default;
  // Performs one request and returns the whole response.
  virtual StatusOr<Response> Do(const Request& request) = 0;
  // Performs a long-lived request. On a 2xx status the body is delivered line by line to
  // `on_line` and the returned Response has an empty body; on any other status the body is
  // collected and returned. Blocks the calling thread until the stream ends.
  virtual StatusOr<Response> Stream(const Request& request, const StreamOptions& options,
                                    const LineHandler& on_line) = 0;
  // "host:port" of the server, for metric labels.
  virtual std::string Host() const = 0;
};

}  // namespace lockstep::kube
