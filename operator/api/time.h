#pragma once
// RFC 3339 timestamps as Kubernetes writes them (metav1.Time: "2026-11-29T19:54:15Z", UTC, whole
// seconds). Parsing also accepts fractional seconds and numeric offsets, which other clients may
// write.

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::api {

// Formats `t` truncated to whole seconds, in UTC.
std::string FormatTime(std::chrono::system_clock::time_point t);
StatusOr<std::chrono::system_clock::time_point> ParseTime(std::string_view text);

}  // namespace lockstep::api
