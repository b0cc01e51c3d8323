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
  // An attempt that outlives retry_period cannot keep a leader past renew_deadline +
  // retry_period, which stays below lease_duration for valid configs with client-go's timings.
  options.timeout = std::max<std::chrono::milliseconds>(config.retry_period,
                                                        std::chrono::seconds(1));
  return options;
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

LeaderElector::LeaderElector(std::shared_ptr<Transport> transport, LeaderElectionConfig config,
                             LeaderCallbacks callbacks, KubeMetrics* metrics, const Clock& clock)
    : config_(std::move(config)),
      callbacks_(std::move(callbacks)),
      clock_(clock),
      client_(std::move(transport), ElectionRestOptions(config_), metrics, clock),
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

void LeaderElector::SetLeader(bool leading) {
  leader_ = leading;
  if (status_gauge_ != nullptr) status_gauge_->Set(leading ? 1 : 0);
}

void LeaderElector::Observe(const std::string& holder, const std::string& renew_time) {
  bool changed_holder = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (holder == observed_holder_ && renew_time == observed_renew_time_) return;
    changed_holder = holder != observed_holder_;
    observed_holder_ = holder;
    observed_renew_time_ = renew_time;
    observed_at_ = clock_.Now();
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

bool LeaderElector::TryAcquireOrRenew() {
  auto current = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
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
    if (clock_.Now() < observed_at_ + config_.lease_duration) return false;  // held and fresh
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
  std::lock_guard<std::mutex> lock(mu_);
  if (observed_holder_.empty()) return delay;
  // Wake right when the observed lease expires rather than up to 2.2 retry periods later.
  const auto until_expiry = std::chrono::duration_cast<std::chrono::milliseconds>(
      observed_at_ + config_.lease_duration - clock_.Now());
  if (until_expiry.count() >= 0 && until_expiry < delay) {
    delay = until_expiry + std::chrono::milliseconds(10);
  }
  return delay;
}

void LeaderElector::Run() {
  SetLeader(false);
  while (!TryAcquireOrRenew()) {
    if (!SleepFor(CampaignDelay())) return;
  }
  SetLeader(true);
  log::Info("started leading", {{"lease", config_.lease_name}, {"identity", config_.identity}});
  if (callbacks_.on_started_leading) callbacks_.on_started_leading();

  Clock::Steady last_renew = clock_.Now();
  bool requested_stop = false;
  while (true) {
    if (!SleepFor(config_.retry_period)) {
      requested_stop = true;
      break;
    }
    // Measured from before the attempt: the record we wrote is at least this old.
    const Clock::Steady attempt_start = clock_.Now();
    if (TryAcquireOrRenew()) {
      last_renew = attempt_start;
      continue;
    }
    // Someone else holds it now, or we could not renew in time: stop leading at once.
    const bool taken = !ObservedLeader().empty() && ObservedLeader() != config_.identity;
    if (taken || clock_.Now() - last_renew >= config_.renew_deadline) break;
  }
  SetLeader(false);
  log::Info("stopped leading", {{"lease", config_.lease_name}, {"identity", config_.identity}});
  if (callbacks_.on_stopped_leading) callbacks_.on_stopped_leading();
  if (requested_stop && config_.release_on_cancel) Release();
}

}  // namespace lockstep::kube
