#include "operator/controller/goodput.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "operator/api/conditions.h"
#include "operator/api/defaults.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;

constexpr int64_t kMaxSeconds = std::numeric_limits<int64_t>::max();

int64_t SatAdd(int64_t a, int64_t b) {
  a = std::max<int64_t>(a, 0);
  b = std::max<int64_t>(b, 0);
  return a > kMaxSeconds - b ? kMaxSeconds : a + b;
}

api::Time Floor(api::Time t) { return std::chrono::floor<seconds>(t); }

// Whole seconds from `from` to `to`; 0 when `to` is not later (a clock that went back, or an
// updatedAt in the future).
int64_t Elapsed(api::Time from, api::Time to) {
  if (to <= from) return 0;
  return std::chrono::duration_cast<seconds>(to - from).count();
}

// The stored account as the core may trust it: what the status subresource holds is anyone's.
api::JobGoodput Sanitized(api::JobGoodput g) {
  for (int64_t* v : {&g.productive_seconds, &g.placement_seconds, &g.startup_seconds,
                     &g.recovery_seconds, &g.recompute_seconds}) {
    *v = std::max<int64_t>(*v, 0);
  }
  for (api::GoodputCause& c : g.recovery_by_cause) c.seconds = std::max<int64_t>(c.seconds, 0);
  if (g.recovery_by_cause.size() > kMaxGoodputCauses) {
    g.recovery_by_cause.resize(kMaxGoodputCauses);
  }
  if (g.step_seconds && (!std::isfinite(*g.step_seconds) || *g.step_seconds <= 0)) {
    g.step_seconds.reset();
  }
  return g;
}

void ChargeRecovery(api::JobGoodput* g, std::string cause, int64_t secs) {
  std::vector<api::GoodputCause>& causes = g->recovery_by_cause;
  auto find = [&causes](const std::string& c) {
    return std::find_if(causes.begin(), causes.end(),
                        [&c](const api::GoodputCause& x) { return x.cause == c; });
  };
  auto it = find(cause);
  // The last free slot is kept for kOtherCause, so the list never outgrows its bound.
  if (it == causes.end() && causes.size() + 1 >= kMaxGoodputCauses) {
    cause = std::string(kOtherCause);
    it = find(cause);
  }
  if (it == causes.end()) {
    // Only a stored list already at its bound (someone else's) lacks room: its tail goes (its
    // seconds stay in recovery_seconds).
    if (causes.size() >= kMaxGoodputCauses) causes.resize(kMaxGoodputCauses - 1);
    auto at = std::lower_bound(
        causes.begin(), causes.end(), cause,
        [](const api::GoodputCause& x, const std::string& c) { return x.cause < c; });
    it = causes.insert(at, api::GoodputCause{cause, 0});
  }
  it->seconds = SatAdd(it->seconds, secs);
  g->recovery_seconds = SatAdd(g->recovery_seconds, secs);
}

void Charge(api::JobGoodput* g, const GoodputCharge& charge, int64_t secs) {
  if (secs <= 0) return;
  switch (charge.account) {
    case GoodputAccount::kNone:
      return;
    case GoodputAccount::kProductive:
      g->productive_seconds = SatAdd(g->productive_seconds, secs);
      return;
    case GoodputAccount::kPlacement:
      g->placement_seconds = SatAdd(g->placement_seconds, secs);
      return;
    case GoodputAccount::kStartup:
      g->startup_seconds = SatAdd(g->startup_seconds, secs);
      return;
    case GoodputAccount::kRecovery:
      ChargeRecovery(g, charge.cause, secs);
      return;
  }
}

void SetRatio(api::JobGoodput* g) {
  int64_t total = 0;
  for (int64_t v : {g->productive_seconds, g->placement_seconds, g->startup_seconds,
                    g->recovery_seconds, g->recompute_seconds}) {
    total = SatAdd(total, v);
  }
  g->ratio =
      total > 0 ? static_cast<double>(g->productive_seconds) / static_cast<double>(total) : 0.0;
  g->ratio = std::clamp(g->ratio, 0.0, 1.0);
  g->percent = static_cast<int32_t>(std::floor(100.0 * g->ratio));
}

// `planned` records a restart `stored` does not show.
bool NewRestart(const api::TrainingJobStatus& stored, const api::TrainingJobStatus& planned) {
  if (!planned.last_restart) return false;
  if (!stored.last_restart) return true;
  const api::LastRestart& a = *stored.last_restart;
  const api::LastRestart& b = *planned.last_restart;
  return a.time != b.time || a.attempt != b.attempt || a.reason != b.reason;
}

// `planned` records a spare promotion `stored` does not: the steps since the checkpoint are lost
// as at a restart, though no lastRestart says so.
bool NewPromotion(const api::TrainingJobStatus& stored, const api::TrainingJobStatus& planned) {
  const int32_t before = stored.spares ? stored.spares->promotions : 0;
  return planned.spares && planned.spares->promotions > before;
}

// The time the restart threw away: steps since the checkpoint, at the step time measured.
void ChargeRecompute(const std::optional<api::JobProgress>& progress, api::JobGoodput* g) {
  if (!progress || !progress->checkpoint_step || !g->step_seconds) return;
  const int64_t step = std::max<int64_t>(progress->step, 0);
  const int64_t checkpoint = std::max<int64_t>(*progress->checkpoint_step, 0);
  if (step <= checkpoint) return;
  const double lost = static_cast<double>(step - checkpoint) * *g->step_seconds;
  // Only time charged as productive can have trained those steps.
  const int64_t moved = lost >= static_cast<double>(g->productive_seconds)
                            ? g->productive_seconds
                            : static_cast<int64_t>(std::llround(lost));
  g->productive_seconds -= moved;
  g->recompute_seconds = SatAdd(g->recompute_seconds, moved);
}

std::optional<api::Time> RunningSince(const api::TrainingJobStatus& s) {
  const api::Condition* c = api::FindCondition(s.conditions, api::kConditionRunning);
  if (c == nullptr || c->status != api::ConditionStatus::kTrue) return std::nullopt;
  return c->last_transition_time;
}

// The step time between the progress written before and the one written now, when both were
// written while this gang ran (a rate across a restart would count its recovery as steps).
void MeasureStep(const api::TrainingJobStatus& stored, const api::TrainingJobStatus& planned,
                 api::JobGoodput* g) {
  const std::optional<api::Time> since = RunningSince(stored);
  if (!since || !stored.progress || !planned.progress) return;
  const api::JobProgress& a = *stored.progress;
  const api::JobProgress& b = *planned.progress;
  if (a.last_update < *since || b.step <= a.step || b.last_update <= a.last_update) return;
  const double dt = std::chrono::duration<double>(b.last_update - a.last_update).count();
  const double steps = static_cast<double>(b.step) - static_cast<double>(a.step);
  const double per_step = dt / steps;
  if (std::isfinite(per_step) && per_step > 0) g->step_seconds = per_step;
}

// Moves the late recovery's time from productive to its cause: only time the stored status
// charged as productive while this gang ran (since the Running condition's last turn), up to the
// pass's time, can have been it. Its ends come from the launchers (tenant code) or from node
// evidence: clamped here, whatever they say.
void ChargeLateRecovery(const api::TrainingJobStatus& stored, const LateRecovery& late,
                        api::Time now, api::JobGoodput* g) {
  const std::optional<api::Time> since = RunningSince(stored);
  if (!since) return;
  const api::Time from = std::max(late.from, *since);
  const api::Time until = std::min(late.until, now);
  const int64_t secs = std::min(Elapsed(from, until), g->productive_seconds);
  if (secs <= 0) return;
  g->productive_seconds -= secs;
  ChargeRecovery(g, late.cause.empty() ? std::string("Unknown") : late.cause, secs);
}

}  // namespace

GoodputCharge ClassifyGoodput(const api::TrainingJobStatus& s) {
  if (!s.state) return {GoodputAccount::kPlacement, ""};
  switch (*s.state) {
    case api::JobState::kSucceeded:
    case api::JobState::kFailed:
    case api::JobState::kSuspended:
      return {};
    case api::JobState::kQueued:
      return {GoodputAccount::kPlacement, ""};
    case api::JobState::kRunning:
      return {GoodputAccount::kProductive, ""};
    default:
      break;
  }
  if (*s.state == api::JobState::kRestarting ||
      api::IsConditionTrue(s.conditions, api::kConditionRestarting)) {
    return {GoodputAccount::kRecovery, s.last_restart && !s.last_restart->reason.empty()
                                           ? s.last_restart->reason
                                           : std::string("Unknown")};
  }
  if (s.reason == "StartingPods" ||
      api::IsConditionTrue(s.conditions, api::kConditionStartupFailing)) {
    return {GoodputAccount::kStartup, ""};
  }
  return {GoodputAccount::kPlacement, ""};
}

std::optional<api::JobGoodput> NextGoodput(const api::TrainingJobStatus& stored,
                                           const api::TrainingJobStatus& planned,
                                           std::optional<api::Time> created, api::Time now,
                                           const std::optional<LateRecovery>& late) {
  const GoodputCharge before = ClassifyGoodput(stored);
  const bool restart = NewRestart(stored, planned) || NewPromotion(stored, planned);
  const bool changes = before != ClassifyGoodput(planned) || restart ||
                       stored.progress != planned.progress || late.has_value();
  // Nothing this pass writes changes what is charged: no write for goodput alone. A status
  // written before goodput existed opens its account with its next change (a finished one never
  // does: all zero, it would read as a job that never trained).
  if (!changes && (stored.goodput || stored.state)) return stored.goodput;
  now = Floor(now);
  api::JobGoodput g;
  if (stored.goodput) {
    g = Sanitized(*stored.goodput);
  } else {
    // A job never written waited since its creation; one written before goodput existed starts
    // its account now (how its earlier time was spent is not known).
    g.updated_at = !stored.state && created ? std::min(Floor(*created), now) : now;
  }
  Charge(&g, before, Elapsed(g.updated_at, now));
  if (late && before.account == GoodputAccount::kProductive) {
    ChargeLateRecovery(stored, *late, now, &g);
  }
  if (restart) {
    ChargeRecompute(stored.progress, &g);
  } else if (before.account == GoodputAccount::kProductive) {
    MeasureStep(stored, planned, &g);
  }
  g.updated_at = now;
  SetRatio(&g);
  return g;
}

std::optional<api::JobGoodput> GoodputAt(const api::TrainingJobStatus& status, api::Time now) {
  if (!status.goodput) return std::nullopt;
  now = Floor(now);
  api::JobGoodput g = Sanitized(*status.goodput);
  Charge(&g, ClassifyGoodput(status), Elapsed(g.updated_at, now));
  g.updated_at = std::max(g.updated_at, now);
  SetRatio(&g);
  return g;
}

std::vector<GoodputLoss> GoodputLosses(const std::optional<api::JobGoodput>& before,
                                       const api::JobGoodput& after) {
  const api::JobGoodput b = before ? Sanitized(*before) : api::JobGoodput{};
  const api::JobGoodput a = Sanitized(after);
  std::vector<GoodputLoss> out;
  auto add = [&out](std::string account, std::string reason, int64_t was, int64_t is) {
    if (is > was) out.push_back({std::move(account), std::move(reason), is - was});
  };
  add("placement", "", b.placement_seconds, a.placement_seconds);
  add("startup", "", b.startup_seconds, a.startup_seconds);
  for (const api::GoodputCause& c : a.recovery_by_cause) {
    int64_t was = 0;
    for (const api::GoodputCause& o : b.recovery_by_cause) {
      if (o.cause == c.cause) was = o.seconds;
    }
    add("recovery", c.cause, was, c.seconds);
  }
  add("recompute", "", b.recompute_seconds, a.recompute_seconds);
  return out;
}

int64_t JobGpus(const api::TrainingJobSpec& spec, int32_t worker_replicas) {
  int64_t gpus = int64_t{std::max(worker_replicas, 0)} * api::TrainerGpuCount(spec.pod_template);
  for (const api::Role& r : spec.roles) {
    gpus += int64_t{std::max(r.replicas, 0)} * api::TrainerGpuCount(r.pod_template);
  }
  return gpus;
}

void MergeLateRecovery(std::optional<LateRecovery>* into, LateRecovery add) {
  if (!*into) {
    *into = std::move(add);
    return;
  }
  (*into)->from = std::min((*into)->from, add.from);
  (*into)->until = std::max((*into)->until, add.until);
}

}  // namespace lockstep::controller
