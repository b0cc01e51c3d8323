#pragma once
// status.goodput: the job's wall time split by what it was spent on (docs/goodput.md). Pure.
//
//   ClassifyGoodput - the account a status charges the time it holds to: productive (Running),
//                     placement (no state yet, creating pods, waiting for the gang to be bound,
//                     queued by Kueue), startup (bound, containers starting; the first start),
//                     recovery by cause (Restarting: from status.lastRestart.time until the gang
//                     runs again), or none (suspended or finished: not charged)
//   NextGoodput     - the stored status, the pass's planned status and the clock -> the
//                     status.goodput to write
//   GoodputAt       - the stored accounts with the time since their updatedAt charged, for
//                     metrics read between writes
//
// Level-triggered: everything is computed from the stored status, so an operator restart or a
// failed write loses nothing and charges nothing twice. The status a pass reads has held since
// it was written, so the time since goodput.updatedAt belongs to the stored status's account;
// each pass that writes the status charges it and moves updatedAt to now. A pass folds only when
// the status changes anyway (its account, progress or lastRestart), so goodput adds no status
// write of its own: between writes, GoodputAt says the same thing live.
//
// Recomputed steps: when a pass records a new restart (lastRestart changed) or a spare promotion
// (spares.promotions grew), the steps since the
// last checkpoint (progress.step - progress.checkpointStep, as last written) times the step time
// last measured are moved from productive to recompute: that time trained steps the restart
// threw away. A trainer that does not report checkpointStep is charged no recompute (unknown).
// The step time is measured between two progress writes while the gang ran.
//
// A recovery the status never showed (LateRecovery): the gang kept Running in the status while
// it was not training: between a failure and its detection (a Recreate restart's failed_at), or
// through an in-place restart or a spare promotion the launchers report after the fact. The pass
// that records it moves [from, until] from productive to recovery of its cause, clamped to the
// time the stored status charged as productive since the gang last began running.
//
// Inputs come from the stored status, which anyone with the status subresource can write:
// negative seconds read as 0 and every sum saturates at INT64_MAX.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::controller {

enum class GoodputAccount { kNone, kProductive, kPlacement, kStartup, kRecovery };

struct GoodputCharge {
  GoodputAccount account = GoodputAccount::kNone;
  std::string cause;  // kRecovery only: lastRestart.reason ("Unknown" without one)

  friend bool operator==(const GoodputCharge&, const GoodputCharge&) = default;
};

// At most this many causes in recoveryByCause; later ones are charged to kOtherCause.
inline constexpr size_t kMaxGoodputCauses = 16;
inline constexpr std::string_view kOtherCause = "Other";

GoodputCharge ClassifyGoodput(const api::TrainingJobStatus& status);

// A recovery the pass learned of after it began (see above): `from` the failure's evidence,
// `until` the gang trained again (or the pass's time, when it does not yet).
struct LateRecovery {
  std::string cause;
  api::Time from{};
  api::Time until{};

  friend bool operator==(const LateRecovery&, const LateRecovery&) = default;
};

// Two late recoveries in one pass as one: the earliest start, the latest end, the first's cause.
void MergeLateRecovery(std::optional<LateRecovery>* into, LateRecovery add);

// `stored`: the status as read (its goodput is the account so far). `planned`: the status this
// pass will write. `created`: metadata.creationTimestamp, where a job never written starts its
// account (a job whose status predates goodput starts at its next change, never once finished).
// Returns stored.goodput when nothing in `planned` changes what is charged, so an idle pass
// writes nothing. `late`: a recovery this pass records (charged only when the stored status was
// Running). The recompute is charged by the pass that records the restart or the spare
// promotion (status.spares.promotions grew), not by the late recovery, which may come later.
std::optional<api::JobGoodput> NextGoodput(const api::TrainingJobStatus& stored,
                                           const api::TrainingJobStatus& planned,
                                           std::optional<api::Time> created, api::Time now,
                                           const std::optional<LateRecovery>& late = std::nullopt);

// `status.goodput` with the time since its updatedAt charged to ClassifyGoodput(status) and the
// ratio recomputed; nullopt without goodput.
std::optional<api::JobGoodput> GoodputAt(const api::TrainingJobStatus& status, api::Time now);

// Time `after` charges beyond `before` to an account other than productive, for the lost-time
// counters: account "placement", "startup", "recompute", or "recovery" with the restart's reason.
// Accounts that did not grow are left out. `before` absent: the whole of `after`.
struct GoodputLoss {
  std::string account;
  std::string reason;  // recovery only
  int64_t seconds = 0;

  friend bool operator==(const GoodputLoss&, const GoodputLoss&) = default;
};
std::vector<GoodputLoss> GoodputLosses(const std::optional<api::JobGoodput>& before,
                                       const api::JobGoodput& after);

// The GPUs (nvidia.com/gpu of the first container) of every pod the spec asks for, at
// `worker_replicas` workers (an elastic job's current size).
int64_t JobGpus(const api::TrainingJobSpec& spec, int32_t worker_replicas);

}  // namespace lockstep::controller
