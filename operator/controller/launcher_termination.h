#pragma once
// The launcher's termination message (launcher/supervisor/termination.cc): a JSON object in the
// trainer container's terminated state. The failure policy reads its restart count and renders it
// for people; the in-place records read the counts of a pod that ended.

#include <string>

#include <nlohmann/json.hpp>

namespace lockstep::controller {

// The message as a JSON object, or null when it is not one (another container's plain message).
nlohmann::json ParseLauncherTermination(const std::string& message);

// An integer field of it ("restartCount", "requestedRestarts"), or 0 when absent, mistyped or
// negative.
int32_t TerminationCount(const std::string& message, const char* field);

}  // namespace lockstep::controller
