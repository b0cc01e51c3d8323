#include "operator/kube/leader_elector.h"

#include <algorithm>
#include <cmath>

#include "common/log.h"
#include "operator/kube/objects.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

RestOptions ElectionRestOptions(const LeaderElectionConfig& config) {
  RestOptions options;
  options.qps = 0;          // a renewal must never queue behind controller traffic
  options.max_retries = 0;  // the elector's own loop retries every retry_period
  // A hung attempt cannot keep a leader past renew_deadline + this timeout (see MaxBackdate).
  options.timeout = LeaderElectionRequestTimeout(config);
  return options;
}

std::chrono::milliseconds Until(const Clock& clock, Clock::Steady t) {
  return std::max(std::chrono::milliseconds(0),
                  std::chrono::duration_cast<std::chrono::milliseconds>(t - clock.Now()));
}

int64_t DurationSeconds(std::chrono::milliseconds d) {
  return static_cast<int64_t>(std::ceil(static_cast<double>(d.count()) / 1000.0));
}

}  // namespace

Status ValidateLeaderElectionConfig(const LeaderElectionConfig& c) {
  if (c.lease_name.empty() || c.lease_namespace.empty() || c.identity.empty()) {
    return InvalidArgumentError("leader election needs a lease namespace, name and identity");
  }
  if (c.retry_period.count() <= 0 || c.lease_duration <= c.renew_deadline ||
      static_cast<double>(c.renew_deadline.count()) <= 1.2 * static_cast<double>(c.retry_period.count())) {
    return InvalidArgumentError(
        "leader election needs lease_duration > renew_deadline > 1.2 * retry_period > 0");
  }
  return Status::Ok();
}

std::chrono::milliseconds LeaderElectionRequestTimeout(const LeaderElectionConfig& config) {
  return std::max<std::chrono::milliseconds>(config.retry_period, std::chrono::seconds(1));
}

std::chrono::milliseconds MaxBackdate(const LeaderElectionConfig& config) {
  const std::chrono::milliseconds margin =
      config.lease_duration - config.renew_deadline - LeaderElectionRequestTimeout(config);
  return std::max(std::chrono::milliseconds(0), std::min(margin, config.retry_period));
}

Clock::Steady LeaseRecordStart(Clock::Steady seen_at, Clock::Wall seen_wall,
                               Clock::Wall renew_time, std::chrono::milliseconds max_backdate) {
  const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(seen_wall - renew_time);
  return seen_at - std::clamp(age, std::chrono::milliseconds(0), max_backdate);
}

LeaderElector::LeaderElector(std::shared_ptr<Transport> transport, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, KubeMetrics* metrics, const Clock& clock)
    : config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      client_(std::move(transport), ElectionRestOptions(config_), metrics, clock),
      max_backdate_(MaxBackdate(config_)),
      jitter_(BackoffPolicy{config_.retry_period, config_.retry_period, 1.0, 1.2}) {
  if (metrics != nullptr) {
    status_gauge_ = &metrics->LeaderStatus(config_.lease_name);
    status_gauge_->Set(0);
  }
}

std::string LeaderElector::ObservedLeader() const {
  std::lock_guard<std::mutex> lock(mu_);
  return observed_holder_;
}

void LeaderElector::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
}

bool LeaderElector::SleepFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [this] { return stop_; });
}

bool LeaderElector::MayWrite() const {
  return leader_.load() && clock_.Now().time_since_epoch().count() < writes_until_.load();
}

void LeaderElector::ExtendWrites(Clock::Steady renewed) {
  writes_until_ = (renewed + config_.renew_deadline).time_since_epoch().count();
}

void LeaderElector::SetLeader(bool leading) {
  leader_ = leading;
  if (status_gauge_ != nullptr) status_gauge_->Set(leading ? 1 : 0);
}

void LeaderElector::Observe(const std::string& holder, const std::string& renew_time) {
  // Taken after the response arrived, so the record existed by then: dating it back from here
  // by its age can be early only by what max_backdate_ allows, never by the request's duration.
  const Clock::Steady seen_at = clock_.Now();
  const Clock::Wall seen_wall = clock_.WallNow();
  bool changed_holder = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (holder == observed_holder_ && renew_time == observed_renew_time_) return;
    changed_holder = holder != observed_holder_;
    observed_holder_ = holder;
    observed_renew_time_ = renew_time;
    auto renewed = ParseTime(renew_time);
    record_start_ = renewed.ok() ? LeaseRecordStart(seen_at, seen_wall, *renewed, max_backdate_)
                                 : seen_at;  // unreadable renewTime: client-go's rule
  }
  if (changed_holder && callbacks_.on_new_leader) callbacks_.on_new_leader(holder);
}

StatusOr<bool> LeaderElector::TryUpdate(json lease, bool ours) {
  json& spec = lease["spec"];
  const std::string now = FormatMicroTime(clock_.WallNow());
  if (!ours) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = DurationSeconds(config_.lease_duration);
  spec["renewTime"] = now;
  // The PUT carries the resourceVersion we read: a concurrent writer makes it a Conflict.
  auto updated = client_.Update(resources::Leases(), config_.lease_namespace, config_.lease_name,
                                lease);
  if (!updated.ok()) return updated.status();
  Observe(config_.identity, now);
  return true;
}

bool LeaderElector::TryAcquireOrRenew(Clock::Steady no_write_after) {
  auto current = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (clock_.Now() >= no_write_after) return false;  // a slow read must not buy a slow write
  const std::string now = FormatMicroTime(clock_.WallNow());
  if (IsNotFound(current.status())) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", config_.lease_name},
                                {"namespace", config_.lease_namespace}}},
                  {"spec", {{"holderIdentity", config_.identity},
                            {"leaseDurationSeconds", DurationSeconds(config_.lease_duration)},
                            {"acquireTime", now},
                            {"renewTime", now},
                            {"leaseTransitions", 0}}}};
    auto created = client_.Create(resources::Leases(), config_.lease_namespace, lease);
    if (!created.ok()) return false;
    Observe(config_.identity, now);
    return true;
  }
  if (!current.ok()) {
    log::Warning("leader election: cannot read lease", {{"error", current.status().ToString()}});
    return false;
  }
  auto lease = DecodeLease(*current);
  if (!lease.ok()) return false;
  Observe(lease->holder_identity, lease->renew_time);
  const bool ours = lease->holder_identity == config_.identity;
  if (!ours && !lease->holder_identity.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    if (clock_.Now() < record_start_ + config_.lease_duration) return false;  // held and fresh
  }
  auto result = TryUpdate(std::move(current).value(), ours);
  if (!result.ok()) {
    if (!IsConflict(result.status())) {
      log::Warning("leader election: cannot update lease",
                   {{"error", result.status().ToString()}});
    }
    return false;
  }
  return *result;
}

void LeaderElector::Release() {
  auto current = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (!current.ok()) return;
  json& spec = (*current)["spec"];
  if (spec.value("holderIdentity", "") != config_.identity) return;
  spec["holderIdentity"] = "";
  spec["leaseDurationSeconds"] = 1;
  spec["renewTime"] = FormatMicroTime(clock_.WallNow());
  // Best effort: if it fails, the lease simply expires.
  client_.Update(resources::Leases(), config_.lease_namespace, config_.lease_name, *current)
      .status()
      .IgnoreError();
}

std::chrono::milliseconds LeaderElector::CampaignDelay() {
  std::chrono::milliseconds delay = jitter_.Delay(0);
  // Poll at least every max_backdate_ (2 s with client-go's timings, instead of 2-4.4 s): the
  // holder's last record is then first seen at most max_backdate_ after its renewTime, so
  // LeaseRecordStart dates it exactly and a dead leader's lease is taken when it expires. The
  // jitter's job, spreading candidates' writes, is moot: every candidate wakes at the computed
  // expiry anyway and the optimistic update lets exactly one win.
  if (max_backdate_.count() > 0) delay = std::min(delay, max_backdate_);
  std::lock_guard<std::mutex> lock(mu_);
  if (observed_holder_.empty()) return delay;
  // Wake right when the observed lease expires rather than up to 2.2 retry periods later.
  const auto until_expiry = std::chrono::duration_cast<std::chrono::milliseconds>(
      record_start_ + config_.lease_duration - clock_.Now());
  if (until_expiry.count() >= 0 && until_expiry < delay) {
    delay = until_expiry + std::chrono::milliseconds(10);
  }
  return delay;
}

void LeaderElector::Run() {
  SetLeader(false);
  Clock::Steady attempt_start = clock_.Now();
  while (!TryAcquireOrRenew()) {
    if (!SleepFor(CampaignDelay())) return;
    attempt_start = clock_.Now();
  }
  ExtendWrites(attempt_start);
  SetLeader(true);
  log::Info("started leading", {{"lease", config_.lease_name}, {"identity", config_.identity}});
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();
  const bool requested_stop = Lead(attempt_start);
  SetLeader(false);
  log::Info("stopped leading", {{"lease", config_.lease_name}, {"identity", config_.identity}});
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  if (requested_stop && config_.release_on_cancel) Release();
}

bool LeaderElector::Lead(Clock::Steady acquired) {
  // Measured from before an attempt: the record it wrote is at least this old.
  Clock::Steady last_renew = acquired;
  while (true) {
    // Never sleep past the renew deadline, and never start a request after it: an attempt is a
    // read and a write, each within the request timeout, so this process stops leading at most
    // renew_deadline + one timeout after last_renew, the bound MaxBackdate() relies on.
    const Clock::Steady deadline = last_renew + config_.renew_deadline;
    if (!SleepFor(std::min(config_.retry_period, Until(clock_, deadline)))) return true;
    if (clock_.Now() >= deadline) return false;
    const Clock::Steady attempt_start = clock_.Now();
    if (TryAcquireOrRenew(deadline)) {
      last_renew = attempt_start;
      ExtendWrites(last_renew);
      continue;
    }
    // Someone else holds it now, or we could not renew in time: stop leading at once.
    const bool taken = !ObservedLeader().empty() && ObservedLeader() != config_.identity;
    if (taken || clock_.Now() >= last_renew + config_.renew_deadline) return false;
  }
}

}  // namespace lockstep::kube
