#include "operator/kube/api_error.h"

#include <nlohmann/json.hpp>

namespace lockstep::kube {
namespace {

// The metav1.StatusCause type NamespaceLifecycle admission sets (v1.NamespaceTerminatingCause).
constexpr char kNamespaceTerminatingCause[] = "NamespaceTerminating";


StatusCode CodeFor(long http, const std::string& reason) {
  if (reason == "NotFound") return StatusCode::kNotFound;
  if (reason == "AlreadyExists") return StatusCode::kAlreadyExists;
  if (reason == "Conflict") return StatusCode::kAborted;
  if (reason == "Invalid" || reason == "BadRequest") return StatusCode::kInvalidArgument;
  if (reason == "Forbidden") return StatusCode::kPermissionDenied;
  if (reason == "Unauthorized") return StatusCode::kUnauthenticated;
  if (reason == "TooManyRequests") return StatusCode::kResourceExhausted;
  if (reason == "Gone" || reason == "Expired") return StatusCode::kOutOfRange;
  if (reason == "Timeout" || reason == "ServerTimeout") return StatusCode::kDeadlineExceeded;
  if (reason == "MethodNotAllowed" || reason == "NotAcceptable" ||
      reason == "UnsupportedMediaType") {
    return StatusCode::kUnimplemented;
  }
  switch (http) {
    case 400: return StatusCode::kInvalidArgument;
    case 401: return StatusCode::kUnauthenticated;
    case 403: return StatusCode::kPermissionDenied;
    case 404: return StatusCode::kNotFound;
    case 409: return StatusCode::kAborted;
    case 410: return StatusCode::kOutOfRange;
    case 422: return StatusCode::kInvalidArgument;
    case 429: return StatusCode::kResourceExhausted;
    case 504: return StatusCode::kDeadlineExceeded;
    default: break;
  }
  if (http >= 500) return StatusCode::kUnavailable;
  return StatusCode::kInternal;
}

std::optional<std::chrono::seconds> ParseRetryAfter(const std::string& header) {
  if (header.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const long v = std::stol(header, &used);
    if (used == header.size() && v >= 0) return std::chrono::seconds(v);
  } catch (const std::exception&) {
    // An HTTP-date form: the server never sends it; ignore.
  }
  return std::nullopt;
}

void FillFromStatus(const nlohmann::json& j, ApiError* e) {
  if (!j.is_object() || j.value("kind", "") != "Status") return;
  e->reason = j.value("reason", "");
  e->message = j.value("message", "");
  if (e->http_code == 0) e->http_code = j.value("code", 0L);
  const auto details = j.find("details");
  if (details == j.end() || !details->is_object()) return;
  if (auto ra = details->find("retryAfterSeconds"); ra != details->end() && ra->is_number()) {
    if (!e->retry_after) e->retry_after = std::chrono::seconds(ra->get<long>());
  }
  if (auto causes = details->find("causes"); causes != details->end() && causes->is_array()) {
    for (const auto& c : *causes) {
      if (!c.is_object()) continue;
      e->causes.push_back({c.value("reason", ""), c.value("message", ""), c.value("field", "")});
    }
  }
}

}  // namespace

Status ApiError::ToStatus() const {
  std::string msg = message.empty() ? "HTTP " + std::to_string(http_code) : message;
  // The apiserver's Invalid message already lists causes; add any field it left out so a caller
  // always sees every path.
  for (const auto& c : causes) {
    if (!c.field.empty() && msg.find(c.field) == std::string::npos) {
      msg += "; " + c.field + ": " + c.message;
    }
  }
  msg += " [reason=" + (reason.empty() ? std::string("Unknown") : reason) +
         " code=" + std::to_string(http_code);
  for (const auto& c : causes) {
    if (c.reason == kNamespaceTerminatingCause) msg += std::string(" cause=") + c.reason;
  }
  msg += "]";
  return Status(CodeFor(http_code, reason), std::move(msg));
}

bool IsNamespaceTerminating(const Status& s) {
  return IsForbidden(s) && s.message().find(std::string(" cause=") + kNamespaceTerminatingCause +
                                            "]") != std::string::npos;
}

ApiError ParseApiError(const Response& response) {
  ApiError e;
  e.http_code = response.status;
  e.retry_after = ParseRetryAfter(response.retry_after);
  const nlohmann::json j = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  FillFromStatus(j, &e);
  if (e.reason.empty() && e.message.empty()) e.message = response.body.substr(0, 512);
  return e;
}

ApiError ApiErrorFromStatusJson(const std::string& status_json) {
  ApiError e;
  const nlohmann::json j = nlohmann::json::parse(status_json, nullptr, false);
  FillFromStatus(j, &e);
  return e;
}

}  // namespace lockstep::kube
