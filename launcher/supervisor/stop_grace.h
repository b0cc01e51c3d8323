#pragma once
// How long the children get between SIGTERM and SIGKILL, by why they are stopped. Pure.
//
// A launcher stopped by a signal (the kubelet deleting its pod: suspend, preemption, eviction,
// drain) gives its children the whole --grace-period: the operator sets it to the pod's
// terminationGracePeriodSeconds - 1 (operator/api/children.h), so the trainers can finish their
// step and checkpoint, and the launcher still ends before the kubelet's SIGKILL. A stop the
// launcher decides itself (a peer lost, a rank failed or hung, the server's Abort) keeps a short
// cap: the gang is being restarted, and a long grace there only delays the restart.

#include <chrono>

namespace lockstep::launcher::supervisor {

enum class StopCause {
  kSignal,  // the launcher itself received SIGTERM/SIGINT/SIGHUP/SIGQUIT
  kGang,    // the launcher decided: a failure, a hang, the server lost, an Abort
};

// The most a stop the launcher decides itself waits before SIGKILL.
inline constexpr std::chrono::milliseconds kGangStopGraceCap{10000};

// `configured` is --grace-period (LOCKSTEP_GRACE_PERIOD). Negative values count as 0.
std::chrono::milliseconds StopGrace(StopCause cause, std::chrono::milliseconds configured);

// A launcher stopped by signal n exits 128+n, as a shell reports a process killed by it, whatever
// its children exited with (a trainer that checkpointed and exited 0 did not finish the job).
int SignalExitCode(int signal);

}  // namespace lockstep::launcher::supervisor
