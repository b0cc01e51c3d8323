#include "operator/controller/training_progress.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "operator/controller/inplace_plan.h"
#include "operator/controller/plan_pass.h"
#include "protocol/termination.h"

namespace lockstep::controller {
namespace {

int64_t ToInt64(uint64_t v) {
  return static_cast<int64_t>(std::min<uint64_t>(v, std::numeric_limits<int64_t>::max()));
}

// The report as status.progress fields, without etaSeconds and lastUpdate (integers saturate).
api::JobProgress FromReport(const protocol::TrainingProgress& r) {
  api::JobProgress p;
  p.step = ToInt64(r.step);
  if (r.total_steps > 0) {
    p.total_steps = ToInt64(r.total_steps);
    const double pct = 100.0 * static_cast<double>(r.step) / static_cast<double>(r.total_steps);
    p.percent = static_cast<int32_t>(std::min(100.0, std::floor(pct)));
  }
  if (r.samples_per_second_milli > 0) {
    p.samples_per_second = static_cast<double>(r.samples_per_second_milli) / 1000.0;
  }
  if (r.checkpoint_step) p.checkpoint_step = ToInt64(*r.checkpoint_step);
  return p;
}

bool SameReport(const api::JobProgress& a, const api::JobProgress& b) {
  return a.step == b.step && a.total_steps == b.total_steps &&
         a.samples_per_second == b.samples_per_second && a.checkpoint_step == b.checkpoint_step;
}

// Seconds to go at the rate from `before` to `now`'s step, when there is one.
std::optional<int64_t> Eta(const api::JobProgress& now_p,
                           const std::optional<api::JobProgress>& before, api::Time now) {
  if (!now_p.total_steps) return std::nullopt;
  if (now_p.step >= *now_p.total_steps) return 0;
  if (!before || before->step >= now_p.step) return std::nullopt;
  const double elapsed = std::chrono::duration<double>(now - before->last_update).count();
  if (elapsed <= 0) return std::nullopt;
  const double rate = static_cast<double>(now_p.step - before->step) / elapsed;  // steps/s
  const double left = static_cast<double>(*now_p.total_steps - now_p.step) / rate;
  if (!std::isfinite(left) || left > 1e15) return std::nullopt;
  return static_cast<int64_t>(std::ceil(left));
}

}  // namespace

std::optional<api::JobProgress> NextProgress(
    const std::optional<protocol::TrainingProgress>& reported,
    const std::optional<api::JobProgress>& written, api::Time now, bool final) {
  if (!reported) return written;  // nothing heard: the last word stands
  if (!final && written && now - written->last_update < kProgressWriteInterval) return written;
  api::JobProgress next = FromReport(*reported);
  if (written && SameReport(next, *written)) return written;
  // Whole seconds, as the status stores it: the next pass compares against the same value.
  now = std::chrono::floor<std::chrono::seconds>(now);
  next.eta_seconds = Eta(next, written, now);
  next.last_update = now;
  return next;
}

void PlanTrainingProgress(Pass& p) {
  const LauncherObservation* obs = p.observed.launchers ? &*p.observed.launchers : nullptr;
  std::optional<protocol::TrainingProgress> reported;
  if (obs != nullptr && obs->answered) reported = obs->status.progress;
  p.status().progress = NextProgress(reported, p.status().progress, p.now);
}

void PlanFinalProgress(Pass& p) {
  const kube::Pod* rank0 = RendezvousPod(p.job, p.pods);
  if (rank0 == nullptr || rank0->container_statuses.empty()) return;
  // The trainer is the first container (its launcher's termination message, as inplace_plan.cc
  // reads the restart counts).
  std::optional<protocol::TerminationMessage> m =
      protocol::DecodeTermination(rank0->container_statuses.front().message);
  if (!m || !m->progress) return;
  p.status().progress = NextProgress(m->progress, p.status().progress, p.now, /*final=*/true);
}

std::optional<double> ProgressRatio(const api::JobProgress& progress) {
  if (!progress.total_steps || *progress.total_steps <= 0) return std::nullopt;
  return std::min(1.0,
                  static_cast<double>(progress.step) / static_cast<double>(*progress.total_steps));
}

}  // namespace lockstep::controller
