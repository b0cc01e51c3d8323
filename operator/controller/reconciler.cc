#include "operator/controller/reconciler.h"

#include <set>

#include "common/log.h"
#include "operator/api/codec.h"
#include "operator/api/enums.h"
#include "operator/controller/elastic_policy.h"
#include "operator/controller/goodput.h"
#include "operator/controller/inplace_plan.h"
#include "operator/controller/job_status.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/peer_loss_plan.h"
#include "operator/controller/pod_attempt.h"
#include "operator/controller/spare_plan.h"
#include "operator/controller/template_resolve.h"
#include "operator/controller/training_progress.h"
#include "operator/kube/api_error.h"
#include "operator/kueue/workload.h"

namespace lockstep::controller {

namespace {

// The plan ends the job (its status finished, the stored one not yet).
bool Finishes(const CachedJob& job, const Plan& plan) {
  return IsFinished(plan.status) && !IsFinished(job.job.status);
}

// A restart, the job's end, or the template snapshot its first pods are built from: recorded
// before anything is done (see Reconcile).
bool RecordsFirst(const CachedJob& job, const Plan& plan) {
  return plan.restart || plan.launcher_restart || Finishes(job, plan) ||
         (plan.status.resolved_template && !job.job.status.resolved_template);
}

}  // namespace

TrainingJobReconciler::TrainingJobReconciler(kube::RestClient& client, const JobCaches& caches,
                                             Expectations& expectations,
                                             kube::EventRecorder& events,
                                             ControllerMetrics* metrics, PlanOptions options,
                                             const Clock& clock)
    : client_(client),
      caches_(caches),
      expectations_(expectations),
      events_(events),
      executor_(client, expectations, events, options.operator_peer),
      metrics_(metrics),
      options_(std::move(options)),
      clock_(clock) {}

StatusOr<ReconcileResult> TrainingJobReconciler::Reconcile(const std::string& key) {
  std::shared_ptr<const CachedJob> cached = caches_.GetJob(key);
  if (cached == nullptr) {
    expectations_.Forget(key);  // deleted: its children go with the garbage collector
    {
      std::lock_guard<std::mutex> lock(peer_loss_mu_);
      peer_loss_seen_.erase(key);
    }
    if (launchers_ != nullptr) launchers_->Forget(key);
    ForgetProgressMetrics(key);
    return ReconcileResult{};
  }
  CachedJob job = *cached;  // never mutate the shared cache
  if (StatusCacheBehind(job)) return ReconcileResult{std::chrono::seconds(1)};
  const api::Time now = clock_.WallNow();
  TemplateResolution tmpl;
  if (job.template_ref && job.status_error.empty()) {  // an unreadable status stalls first
    std::shared_ptr<const CachedTemplate> found =
        templates_ == nullptr ? nullptr : templates_->Find(*job.template_ref, job.meta.namespace_);
    tmpl = ResolveTemplate(found.get(), templates_ != nullptr && templates_->HasSynced(), now,
                           &job);
    if (tmpl.state == TemplateResolution::State::kCachesNotSynced) {
      return ReconcileResult{std::chrono::seconds(1)};
    }
    if (tmpl.state == TemplateResolution::State::kNotFound) {
      // The template's add wakes the job (TemplateCaches' handler): no timer.
      LS_RETURN_IF_ERROR(PersistStatus(job, HoldForTemplate(tmpl, job, now)));
      return ReconcileResult{};
    }
  }
  // A finished job's launchers are gone and their pod IPs go to other pods: the monitor's watch
  // would otherwise poll the next pod at worker-0's address (with this job's MAC, refused there)
  // until it expires.
  if (launchers_ != nullptr && IsFinished(job.job.status)) launchers_->Forget(key);
  const bool settled = expectations_.Satisfied(key);  // before listing pods
  Observed observed = caches_.ObserveChildren(job);
  if (launchers_ != nullptr) {
    if (const kube::Pod* rank0 = RendezvousPod(job.job, observed.pods)) {
      observed.launchers = launchers_->Latest(key, rank0->meta.uid);
      // A server's rounds start at the attempt its pod was made for: a lower round is an older
      // attempt's server still answering at this pod's address (node 0's launcher lingers
      // after a loss; kwok reuses pod IPs), not this attempt's launchers.
      if (observed.launchers && observed.launchers->answered &&
          static_cast<int64_t>(observed.launchers->status.round) < job.job.status.attempt) {
        observed.launchers.reset();
      }
    }
    ObservePeerLossNodes(observed);
  }
  ObserveSpareDomain(job, observed);
  if (kueue_ != nullptr && !kueue::QueueName(job.job).empty()) {
    observed.kueue = kueue_->Observe(job);
  }
  Plan plan = ComputePlan(job, observed, now, settled, options_);
  RecordTemplate(tmpl, job, now, &plan);
  NotePeerLoss(job, plan);
  const CreatePath path = placer_ == nullptr
                              ? CreatePath::kUnplaced
                              : ChooseCreatePath(job.job, observed.pods, plan.pod_creates).path;
  if (RecordsFirst(job, plan)) {
    // A restart or the job's end is recorded before its pods are deleted: if the write lost a
    // race, nothing was done and the next pass decides again from the same evidence. Acting
    // first could delete the lost node's pods and leave attempt N without its record, and the
    // next pass would refill attempt N instead of starting N+1 (or, for an end, recreate the
    // pods cleanPodPolicy deleted). A finished job's later passes clean its pods again.
    LS_RETURN_IF_ERROR(PersistStatus(job, plan));
    AskLaunchers(job, observed, plan);
    LS_RETURN_IF_ERROR(executor_.Act(job, plan, path));
    return ReconcileResult{plan.requeue_after};
  }
  Status acted = executor_.Act(job, plan, path);
  if (plan.delete_job) return ReconcileResult{};
  LS_RETURN_IF_ERROR(PersistStatus(job, plan));
  AskLaunchers(job, observed, plan);
  LS_RETURN_IF_ERROR(acted);
  return ReconcileResult{plan.requeue_after};
}

void TrainingJobReconciler::AskLaunchers(const CachedJob& job, const Observed& observed,
                                         const Plan& plan) {
  if (launchers_ == nullptr) return;
  auto target = [&](const std::string& pod_name) -> std::optional<LauncherJob> {
    for (const kube::Pod& pod : observed.pods) {
      if (pod.meta.name != pod_name || pod.pod_ip.empty()) continue;
      return LauncherJob{job.meta.Key(),
                         job.meta.namespace_,
                         job.meta.name,
                         job.meta.uid,
                         pod.meta.uid,
                         pod.pod_ip,
                         static_cast<uint32_t>(PodAttempt(pod)),
                         LauncherBounds(job.job)};
    }
    return std::nullopt;
  };
  if (plan.launcher_restart) {
    if (std::optional<LauncherJob> t = target(plan.launcher_restart->pod)) {
      launchers_->Restart(*t, plan.launcher_restart->request, plan.launcher_restart->reason);
    }
  } else if (plan.launcher_poll) {
    if (std::optional<LauncherJob> t = target(*plan.launcher_poll)) launchers_->Poll(*t);
  }
  if (!plan.launcher_probes.empty()) {
    const kube::Pod* rank0 = RendezvousPod(job.job, observed.pods);
    std::optional<LauncherJob> t = rank0 != nullptr ? target(rank0->meta.name) : std::nullopt;
    for (const Plan::LauncherProbe& probe : plan.launcher_probes) {
      if (t) launchers_->Probe(*t, probe.pod, probe.ip, probe.report_lost_unix_ms);
    }
  }
}

void TrainingJobReconciler::ObserveSpareDomain(const CachedJob& job, Observed& observed) const {
  const std::string node = SpareDomainNode(job.job, observed.pods);
  if (node.empty()) return;
  std::optional<NodeSnapshot> facts = caches_.NodeFacts(node);
  if (!facts || !facts->node) return;
  auto it = facts->node->meta.labels.find(RequiredTopologyKey(job.job));
  if (it != facts->node->meta.labels.end()) observed.spare_domain = it->second;
}

void TrainingJobReconciler::ObservePeerLossNodes(Observed& observed) const {
  if (!observed.launchers) return;
  // O(lost + pods) (ReportedNodes): the lost members are worker-0's word, one per node-rank.
  for (const std::string& node : ReportedNodes(observed.launchers->status.lost, observed.pods)) {
    if (observed.peer_loss_nodes.count(node) != 0) continue;
    if (std::optional<NodeSnapshot> n = caches_.NodeFacts(node)) {
      observed.peer_loss_nodes.emplace(node, std::move(*n));
    }
  }
}

void TrainingJobReconciler::NotePeerLoss(const CachedJob& job, const Plan& plan) {
  // Each report's verdict once (passes repeat every second while one is unresolved), counted
  // always, logged as peer_loss_log_ allows (a worker-0 may name a new loss time every poll).
  std::vector<std::pair<Plan::PeerLossNote, uint64_t>> fresh;  // with the lines held back
  {
    std::lock_guard<std::mutex> lock(peer_loss_mu_);
    std::set<std::string>& seen = peer_loss_seen_[job.meta.Key()];
    if (seen.size() > 256) seen.clear();  // bounded; a repeat counts again
    const Clock::Steady now = clock_.Now();
    for (const Plan::PeerLossNote& n : plan.peer_loss) {
      const std::string key = n.pod + "|" + std::to_string(n.report_lost_unix_ms) + "|" + n.outcome;
      if (!seen.insert(key).second) continue;
      if (metrics_ != nullptr) metrics_->ObservePeerLoss(n.outcome);
      const std::optional<uint64_t> held_back =
          peer_loss_log_.Allow(job.meta.Key(), n.outcome, now);
      if (held_back) fresh.emplace_back(n, *held_back);
    }
  }
  for (const auto& [n, held_back] : fresh) {
    log::Fields fields{
        {"job", job.meta.Key()}, {"pod", n.pod}, {"verdict", n.outcome}, {"evidence", n.evidence}};
    if (held_back > 0) fields.emplace_back("held_back", std::to_string(held_back));
    log::Info("a launcher reported a lost peer", fields);
  }
}

nlohmann::json StatusPatch(const api::TrainingJobStatus& old_status,
                           const api::TrainingJobStatus& new_status,
                           const std::string& resource_version) {
  const nlohmann::json before = api::EncodeStatus(old_status);
  nlohmann::json after = api::EncodeStatus(new_status);
  if (before == after) return nullptr;
  for (const auto& [field, value] : before.items()) {
    if (!after.contains(field)) after[field] = nullptr;  // merge patch: null removes
  }
  return {{"metadata", {{"resourceVersion", resource_version}}}, {"status", std::move(after)}};
}

nlohmann::json ConditionsPatch(const CachedJob& job, const api::TrainingJobStatus& new_status) {
  auto encode = [&job](const std::vector<api::Condition>& conditions) {
    nlohmann::json out = nlohmann::json::array();
    std::set<std::string> types;
    for (const api::Condition& c : conditions) {
      out.push_back(api::EncodeCondition(c));
      types.insert(c.type);
    }
    // Kept as they are, unless one of ours now has that type (the list is keyed by type).
    for (const nlohmann::json& raw : job.unread_conditions) {
      const nlohmann::json* type = raw.is_object() && raw.contains("type") ? &raw["type"] : nullptr;
      if (type == nullptr || !type->is_string() || types.count(type->get<std::string>()) == 0) {
        out.push_back(raw);
      }
    }
    return out;
  };
  nlohmann::json after = encode(new_status.conditions);
  if (after == encode(job.job.status.conditions)) return nullptr;
  return {{"metadata", {{"resourceVersion", job.meta.resource_version}}},
          {"status", {{"conditions", std::move(after)}}}};
}

bool CacheShows(const StatusWrite& written, const api::TrainingJobStatus& cached,
                const std::string& cached_rv) {
  if (!written.replaced_rv.empty() && cached_rv == written.replaced_rv) return false;
  return (!written.finished || IsFinished(cached)) && cached.attempt >= written.attempt;
}

bool TrainingJobReconciler::StatusCacheBehind(const CachedJob& job) {
  std::lock_guard<std::mutex> lock(status_writes_mu_);
  auto it = status_writes_.find(job.meta.uid);
  if (it == status_writes_.end()) return false;
  // Once the cache shows the write, it has caught up with it for good.
  if (CacheShows(it->second, job.job.status, job.meta.resource_version) ||
      clock_.Now() - it->second.when > std::chrono::minutes(1)) {
    status_writes_.erase(it);
    return false;
  }
  return true;
}

void TrainingJobReconciler::NoteStatusWrite(const CachedJob& job, const Plan& plan,
                                            const nlohmann::json& response) {
  StatusWrite written{clock_.Now(), Finishes(job, plan), plan.status.attempt, ""};
  const StatusOr<kube::ObjectMeta> written_meta = kube::DecodeObjectMeta(response);
  if (written_meta.ok() && !written_meta->resource_version.empty() &&
      written_meta->resource_version != job.meta.resource_version) {
    written.replaced_rv = job.meta.resource_version;
  }
  const bool restarts = plan.status.attempt > job.job.status.attempt;
  if (!written.finished && !restarts && written.replaced_rv.empty()) return;
  std::lock_guard<std::mutex> lock(status_writes_mu_);
  status_writes_[job.meta.uid] = std::move(written);
}

Status TrainingJobReconciler::PersistStatus(const CachedJob& job, const Plan& plan) {
  const nlohmann::json patch =
      plan.conditions_only ? ConditionsPatch(job, plan.status)
                           : StatusPatch(job.job.status, plan.status, job.meta.resource_version);
  if (!patch.is_null()) {
    StatusOr<nlohmann::json> r = client_.MergePatch(
        kube::resources::TrainingJobs(), job.meta.namespace_, job.meta.name, patch, "status");
    if (!r.ok()) {
      if (IsNotFound(r.status())) return Status::Ok();  // deleted meanwhile
      if (kube::IsInvalid(r.status())) EmitStatusRejected(job, plan, r.status());
      return r.status().WithContext("update status");
    }
    NoteStatusWrite(job, plan, *r);
  }
  for (const EventSpec& e : plan.events) Emit(job, e);
  RecordMetrics(job, plan);
  return Status::Ok();
}

// The apiserver refused the status write as invalid (422): e.g. a stored object that bypassed
// validation, with a CRD rule on its spec that ratcheting does not spare, refuses every status
// write for as long as it exists. Conditions cannot show the problem then, so events do: the
// refusal in the apiserver's words (it names the field), and the plan's own events when the
// plan only reports (an InvalidSpec stall). A plan that would restart or end the job acted on
// nothing (it records first), so its events would describe what did not happen. Repeats are
// aggregated by the recorder; the work queue backs the retries off.
void TrainingJobReconciler::EmitStatusRejected(const CachedJob& job, const Plan& plan,
                                               const Status& refusal) {
  if (!RecordsFirst(job, plan)) {
    for (const EventSpec& e : plan.events) Emit(job, e);
  }
  Emit(job, {"Warning", std::string(api::kReasonStatusRejected),
             api::BoundedMessage("the apiserver refused the job's status: " +
                                     std::string(refusal.message()),
                                 1024)});
}

void TrainingJobReconciler::Emit(const CachedJob& job, const EventSpec& event) {
  events_.Record(InvolvedJob(job), event.type, event.reason, event.message);
}

void TrainingJobReconciler::RecordMetrics(const CachedJob& job, const Plan& plan) {
  if (metrics_ == nullptr) return;
  const std::string framework(api::ToString(job.job.spec.framework));
  if (plan.outcome != Outcome::kNone) {
    metrics_->ObserveOutcome(job.meta.namespace_, framework,
                             plan.outcome == Outcome::kSucceeded ? "Succeeded" : "Failed");
  }
  if (plan.restart) {
    metrics_->ObserveRestart(job.meta.namespace_, plan.restart->reason,
                             std::string(api::ToString(plan.restart->mode)));
    if (plan.restart->detection_delay_seconds) {
      metrics_->ObserveDetectionDelay(plan.restart->reason, *plan.restart->detection_delay_seconds);
    }
  }
  metrics_->ObserveSparePromotions(job.meta.namespace_, plan.spare_promotions);
  if (plan.recovery_seconds && plan.status.last_restart) {
    const api::RestartMode mode =
        plan.status.last_restart->mode.value_or(api::RestartMode::kRecreate);
    metrics_->ObserveRecovery(job.meta.namespace_, std::string(api::ToString(mode)),
                              *plan.recovery_seconds);
  }
  if (plan.became_running && job.job.metadata.creation_timestamp) {
    const std::chrono::duration<double> took =
        clock_.WallNow() - *job.job.metadata.creation_timestamp;
    metrics_->ObserveTimeToRunning(job.meta.namespace_, framework, took.count());
  }
  RecordProgressMetrics(job, plan);
  RecordGoodputMetrics(job, plan);
}

void TrainingJobReconciler::RecordProgressMetrics(const CachedJob& job, const Plan& plan) {
  const std::optional<api::JobProgress>& p = plan.status.progress;
  if (!p || IsFinished(plan.status)) {
    metrics_->ForgetJobProgress(job.meta.namespace_, job.meta.name);
    return;
  }
  metrics_->SetJobProgress(job.meta.namespace_, job.meta.name, ProgressRatio(*p),
                           p->samples_per_second);
}

// The ratio live (the time since the last write charged, goodput.h GoodputAt); the lost-time
// counters by what this pass's write added (the cache shows a write before the next pass plans
// from it, StatusCacheBehind, so no interval is counted twice).
void TrainingJobReconciler::RecordGoodputMetrics(const CachedJob& job, const Plan& plan) {
  const std::optional<api::JobGoodput> live = GoodputAt(plan.status, clock_.WallNow());
  metrics_->SetJobGoodput(job.meta.namespace_, job.meta.name,
                          live ? std::optional<double>(live->ratio) : std::nullopt);
  if (!plan.status.goodput || plan.conditions_only ||
      plan.status.goodput == job.job.status.goodput) {
    return;
  }
  const int64_t gpus = JobGpus(job.job.spec, AttemptWorkers(job.job));
  // The account opens: its lost-time series exist from now on, at 0 until something is lost
  // (on fast clusters every loss can round to 0 whole seconds).
  if (!job.job.status.goodput) {
    metrics_->AddGoodputLoss(job.meta.namespace_, "placement", "", 0, 0);
  }
  for (const GoodputLoss& l : GoodputLosses(job.job.status.goodput, *plan.status.goodput)) {
    const auto secs = static_cast<double>(l.seconds);
    metrics_->AddGoodputLoss(job.meta.namespace_, l.account, l.reason, secs,
                             secs * static_cast<double>(gpus));
  }
}

void TrainingJobReconciler::ForgetProgressMetrics(const std::string& key) {
  if (metrics_ == nullptr) return;
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return;
  metrics_->ForgetJob(key.substr(0, slash), key.substr(slash + 1));
}

}  // namespace lockstep::controller
