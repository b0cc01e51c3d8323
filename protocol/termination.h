#pragma once
// The termination message: a short JSON document the launcher writes where Kubernetes reads a
// container's termination message (default /dev/termination-log), and the operator reads back
// from the trainer container's terminated state. It says which rank failed first and how, its
// last stderr lines, and how many in-place restarts the launchers made (charged to the budget,
// and requested by the operator), so the operator learns them even after node 0's rendezvous
// server is gone. Written on success too (reason "succeeded").
//
// Versions (README.md): `version` is the kTerminationVersion of the launcher that wrote it. Keys
// are only ever added, never renamed or retyped; a reader takes the keys it knows and leaves the
// rest at their defaults, so an operator reads the messages of older and newer launchers. A
// message without `version` (launchers before the field existed) has version 1's keys.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/failure_reason.h"
#include "protocol/messages.h"

namespace lockstep::protocol {

// 2: `progress`, the trainers' last progress report (messages.h TrainingProgress).
// 3: `progress.checkpointStep`, when the trainers reported one.
inline constexpr int kTerminationVersion = 3;
// Kubernetes keeps at most this much of a termination message.
inline constexpr size_t kMaxTerminationBytes = 4096;

struct TerminationMessage {
  int version = kTerminationVersion;
  // exit, signal, hang (this pod's ranks); peer-lost, peer-failed (another pod); refused,
  // timeout, rendezvous (the round); terminated, launcher; succeeded, finished.
  FailureReason reason = FailureReason::kUnknown;
  int attempt = 0;
  int restart_count = 0;       // in-place restarts charged to --max-restarts (failures)
  int requested_restarts = 0;  // in-place restarts the operator asked for (not charged)
  int node_rank = 0;
  int rank = -1;  // global rank of the first failing child; -1 when none
  int exit_code = 0;
  int signal = 0;
  std::string message;
  std::vector<std::string> stderr_tail;  // the failing child's last lines, oldest first
  // The last line this pod's trainers appended to LOCKSTEP_PROGRESS_FILE, read at exit (version
  // 2; malformed_lines is not carried): node 0's gives the operator the final step.
  std::optional<TrainingProgress> progress = std::nullopt;

  friend bool operator==(const TerminationMessage&, const TerminationMessage&) = default;
};

// Compact JSON of at most kMaxTerminationBytes: the oldest stderr lines are dropped first, then
// the message is shortened. Invalid UTF-8 (a child may write anything) is replaced, never thrown.
std::string EncodeTermination(const TerminationMessage& message);

// The launcher's message, or nullopt when `text` is not one (another container's plain or JSON
// message): a launcher's is a JSON object with a `stderrTail` member, which every version writes.
// Members of the wrong type, and integers beyond int's range, keep their defaults; restart counts
// saturate to [0, kMaxCounter] (messages.h); a `progress` without a non-negative integer `step`
// is left out (its numbers are u64: consumers saturate them, training_progress.h).
std::optional<TerminationMessage> DecodeTermination(std::string_view text);

}  // namespace lockstep::protocol
