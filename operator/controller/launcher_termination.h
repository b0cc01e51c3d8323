#pragma once
// The launchers' words for people: a trainer container's termination message
// (protocol/termination.h) and a failing rank's stderr tail, rendered for the Failed condition,
// lastRestart and the events. The failure policy renders a failed pod with it; the in-place
// records render the rendezvous server's last failure the same way.

#include <string>
#include <vector>

namespace lockstep::controller {

// The launcher's termination message as a sentence a user can read in `kubectl describe`: which
// rank failed and how, the in-place restarts before, then its last stderr lines. A message that is
// not the launcher's (another container's, a plain text) is kept verbatim.
std::string DescribeTermination(const std::string& message);

// A failing rank's last stderr lines (from the termination message or the rendezvous server's
// Status) for a condition message: "; last stderr lines:" and the last 8 lines, indented, cut to
// the last 1500 bytes; "" when there are none.
std::string StderrTailForPeople(const std::vector<std::string>& tail);

}  // namespace lockstep::controller
