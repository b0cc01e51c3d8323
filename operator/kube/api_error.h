#pragma once
// Typed errors from the API server's Status object (metav1.Status).
//
// Every non-2xx response becomes a lockstep::Status whose code encodes the Kubernetes reason:
//   NotFound -> NOT_FOUND            AlreadyExists -> ALREADY_EXISTS   Conflict -> ABORTED
//   Invalid, BadRequest -> INVALID_ARGUMENT                            Forbidden -> PERMISSION_DENIED
//   Unauthorized -> UNAUTHENTICATED  TooManyRequests -> RESOURCE_EXHAUSTED
//   Gone/Expired (410) -> OUT_OF_RANGE (the resourceVersion is out of the retained history)
//   Timeout/ServerTimeout/504 -> DEADLINE_EXCEEDED   other 5xx -> UNAVAILABLE
// The message keeps the server's text (for Invalid it names every field path) and ends with
// "[reason=<Reason> code=<http>]" (plus " cause=NamespaceTerminating" when the apiserver refused
// to create in a namespace being deleted). ApiError keeps the structured fields for callers that
// need them (causes, Retry-After).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "operator/kube/transport.h"

namespace lockstep::kube {

struct StatusCause {
  std::string reason;   // e.g. FieldValueRequired
  std::string message;  // e.g. Required value
  std::string field;    // e.g. spec.containers[0].image
};

struct ApiError {
  long http_code = 0;
  std::string reason;  // metav1.StatusReason, e.g. "Conflict"; empty if the body was not a Status
  std::string message;
  std::vector<StatusCause> causes;
  std::optional<std::chrono::seconds> retry_after;  // header, else details.retryAfterSeconds

  Status ToStatus() const;
};

// Decodes a non-2xx response. Never fails: a body that is not a Status yields the HTTP code and
// the (truncated) body text as the message.
ApiError ParseApiError(const Response& response);
// Decodes a Status object delivered inside a watch ERROR event.
ApiError ApiErrorFromStatusJson(const std::string& status_json);

inline bool IsConflict(const Status& s) { return s.code() == StatusCode::kAborted; }
inline bool IsInvalid(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }
inline bool IsGone(const Status& s) { return s.code() == StatusCode::kOutOfRange; }
inline bool IsForbidden(const Status& s) { return s.code() == StatusCode::kPermissionDenied; }
inline bool IsUnauthorized(const Status& s) { return s.code() == StatusCode::kUnauthenticated; }
inline bool IsTooManyRequests(const Status& s) {
  return s.code() == StatusCode::kResourceExhausted;
}
inline bool IsTimeout(const Status& s) { return s.code() == StatusCode::kDeadlineExceeded; }
// A create refused because its namespace is being deleted (403 with the NamespaceTerminating
// cause): not an RBAC problem, and retrying cannot succeed; the object is about to go too.
bool IsNamespaceTerminating(const Status& s);
// IsNotFound and IsAlreadyExists come from common/status.h.
using ::lockstep::IsAlreadyExists;
using ::lockstep::IsNotFound;

}  // namespace lockstep::kube
