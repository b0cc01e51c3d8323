#pragma once
// RFC 3339 timestamps as Kubernetes writes them: metav1.Time ("2026-11-29T19:54:15Z", UTC, whole
// seconds) and metav1.MicroTime ("2026-11-29T19:54:15.123456Z", Leases and events). Parsing
// keeps up to microseconds of a fraction and accepts numeric offsets ("+02:00"), which other
// clients may write; anything else after the seconds is an error. Strict as RFC 3339 section 5.6
// is: digits only where digits go, every field in range, the day within its month (found by
// tests/fuzz/rfc3339). An instant beyond what system_clock holds (libstdc++: 1678-2261)
// saturates at its first or last whole second rather than overflowing.

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep {

StatusOr<std::chrono::system_clock::time_point> ParseTime(std::string_view text);
// metav1.Time: truncated to whole seconds, UTC.
std::string FormatTime(std::chrono::system_clock::time_point t);
// metav1.MicroTime: microseconds, UTC.
std::string FormatMicroTime(std::chrono::system_clock::time_point t);

}  // namespace lockstep
