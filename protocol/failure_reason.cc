#include "protocol/failure_reason.h"

#include <array>
#include <utility>

namespace lockstep::protocol {
namespace {

// The one table of names: ToString and ParseFailureReason both read it.
constexpr std::array<std::pair<FailureReason, std::string_view>, 15> kNames = {{
    {FailureReason::kUnknown, "unknown"},
    {FailureReason::kExit, "exit"},
    {FailureReason::kSignal, "signal"},
    {FailureReason::kHang, "hang"},
    {FailureReason::kPermanent, "permanent"},
    {FailureReason::kPeerLost, "peer-lost"},
    {FailureReason::kPeerFailed, "peer-failed"},
    {FailureReason::kRendezvous, "rendezvous"},
    {FailureReason::kRefused, "refused"},
    {FailureReason::kTimeout, "timeout"},
    {FailureReason::kLauncher, "launcher"},
    {FailureReason::kTerminated, "terminated"},
    {FailureReason::kRequested, "requested"},
    {FailureReason::kFinished, "finished"},
    {FailureReason::kSucceeded, "succeeded"},
}};

}  // namespace

std::string_view ToString(FailureReason reason) {
  for (const auto& [value, name] : kNames) {
    if (value == reason) return name;
  }
  return "unknown";  // unreachable: the table lists every enumerator
}

FailureReason ParseFailureReason(std::string_view name) {
  for (const auto& [value, n] : kNames) {
    if (n == name) return value;
  }
  return FailureReason::kUnknown;
}

}  // namespace lockstep::protocol
