#pragma once
// Status and StatusOr<T>: errors as values, shared by the operator and the launcher.
// Both are [[nodiscard]] so a fallible call cannot be silently ignored. Thread-compatible.

#include <cassert>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace lockstep {

enum class StatusCode {
  kOk = 0,
  kCancelled,
  kInvalidArgument,
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kPermissionDenied,
  kResourceExhausted,
  kFailedPrecondition,
  kAborted,  // e.g. an optimistic-concurrency conflict
  kOutOfRange,
  kUnimplemented,
  kInternal,
  kUnavailable,
  kDataLoss,
  kUnauthenticated,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "NOT_FOUND: pods \"x\" not found", or "OK".
  std::string ToString() const;
  // Returns a copy whose message is prefixed with `context: `.
  Status WithContext(std::string_view context) const;
  // Explicitly discards a status where ignoring it is the intent (say why at the call site).
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

Status CancelledError(std::string message);
Status InvalidArgumentError(std::string message);
Status DeadlineExceededError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status ResourceExhaustedError(std::string message);
Status FailedPreconditionError(std::string message);
Status AbortedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status UnauthenticatedError(std::string message);

inline bool IsNotFound(const Status& s) { return s.code() == StatusCode::kNotFound; }
inline bool IsAlreadyExists(const Status& s) { return s.code() == StatusCode::kAlreadyExists; }
inline bool IsInvalidArgument(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }
inline bool IsAborted(const Status& s) { return s.code() == StatusCode::kAborted; }
inline bool IsUnavailable(const Status& s) { return s.code() == StatusCode::kUnavailable; }
inline bool IsDeadlineExceeded(const Status& s) {
  return s.code() == StatusCode::kDeadlineExceeded;
}

// Holds either a value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const T& value) : value_(value) {}             // NOLINT: implicit by design
  StatusOr(T&& value) : value_(std::move(value)) {}       // NOLINT: implicit by design
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "StatusOr constructed from an OK Status without a value");
    if (status_.ok()) status_ = InternalError("StatusOr built from OK status without a value");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }
  T value_or(T fallback) const& { return value_ ? *value_ : std::move(fallback); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace lockstep

#define LS_STATUS_CONCAT_INNER(a, b) a##b
#define LS_STATUS_CONCAT(a, b) LS_STATUS_CONCAT_INNER(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
// The temporary's name carries the line number so nested uses (e.g. in a lambda inside another
// LS_RETURN_IF_ERROR) do not shadow each other.
#define LS_RETURN_IF_ERROR(expr) \
  LS_RETURN_IF_ERROR_IMPL(LS_STATUS_CONCAT(ls_status_tmp_, __LINE__), expr)
#define LS_RETURN_IF_ERROR_IMPL(tmp, expr) \
  do {                                     \
    ::lockstep::Status tmp = (expr);       \
    if (!tmp.ok()) return tmp;             \
  } while (0)

// LS_ASSIGN_OR_RETURN(auto x, Fallible()); declares/assigns the value or returns the error.
#define LS_ASSIGN_OR_RETURN(lhs, expr) \
  LS_ASSIGN_OR_RETURN_IMPL(LS_STATUS_CONCAT(ls_statusor_, __LINE__), lhs, expr)
#define LS_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
