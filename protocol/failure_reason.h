#pragma once
// Why a launcher's round, or the launcher itself, ended: the `reason` of the rendezvous messages
// Failure and Abort (messages.h), of the control reply's RoundFailure (control.h) and of the
// termination message (termination.h). One enum for all of them, so the launcher that writes a
// reason and the operator that reads it name the same value: renaming one fails to compile on
// both sides instead of breaking between two separately shipped images.
//
// On the wire and in the termination JSON a reason travels as its name (ToString). A name this
// version does not know reads as kUnknown, never as an error: a newer launcher's reason must not
// make an older reader drop the message (README.md, "Versions").

#include <string_view>

namespace lockstep::protocol {

enum class FailureReason {
  kUnknown,  // "unknown": a name this version does not define
  // A rank of this pod (Failure, Abort, RoundFailure, termination message).
  kExit,       // "exit": a rank exited non-zero
  kSignal,     // "signal": a rank was killed by a signal
  kHang,       // "hang": no progress for --hang-timeout seconds
  kPermanent,  // "permanent": a --fail-exit-codes exit code; the round is not restarted in place
  // Another pod, or the rendezvous.
  kPeerLost,    // "peer-lost": a launcher, or node 0's server, was lost (silent or gone)
  kPeerFailed,  // "peer-failed": another pod's rank failed (termination message)
  kRendezvous,  // "rendezvous": the round could not be formed or joined
  kRefused,     // "refused": the rendezvous refused this launcher (termination message)
  kTimeout,     // "timeout": the round did not complete within --join-timeout (termination)
  // The launcher itself.
  kLauncher,    // "launcher": the launcher failed (spawn, sockets, setup)
  kTerminated,  // "terminated": the launcher was stopped by a signal (termination message)
  // Ends that are not failures.
  kRequested,  // "requested": the operator asked for an in-place restart (Abort)
  kFinished,   // "finished": a member's success ended the job (Abort, termination message)
  kSucceeded,  // "succeeded": every local process succeeded (termination message)
};

std::string_view ToString(FailureReason reason);
// kUnknown for a name no enumerator has.
FailureReason ParseFailureReason(std::string_view name);

}  // namespace lockstep::protocol
