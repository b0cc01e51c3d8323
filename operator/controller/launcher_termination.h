#pragma once
// The launcher's termination message (launcher/supervisor/termination.cc): a JSON object in the
// trainer container's terminated state. The failure policy reads its restart count and renders it
// for people; the in-place records read the counts of a pod that ended. Both render a failing
// rank's stderr tail the same way.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::controller {

// The message as a JSON object, or null when it is not one (another container's plain message).
nlohmann::json ParseLauncherTermination(const std::string& message);

// An integer field of it ("restartCount", "requestedRestarts"), or 0 when absent, mistyped or
// negative.
int32_t TerminationCount(const std::string& message, const char* field);

// A failing rank's last stderr lines (from the termination message or the rendezvous server's
// Status) for a condition message: "; last stderr lines:" and the last 8 lines, indented, cut to
// the last 1500 bytes; "" when there are none.
std::string StderrTailForPeople(const std::vector<std::string>& tail);

}  // namespace lockstep::controller
