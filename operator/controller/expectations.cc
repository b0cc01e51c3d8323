#include "operator/controller/expectations.h"

namespace lockstep::controller {

Expectations::Expectations(const Clock& clock, std::chrono::nanoseconds ttl)
    : clock_(clock), ttl_(ttl) {}

void Expectations::ExpectCreations(const std::string& job_key,
                                   const std::vector<std::string>& pod_names) {
  std::lock_guard<std::mutex> lock(mu_);
  Pending& p = pending_[job_key];
  p.creations.insert(pod_names.begin(), pod_names.end());
  p.raised_at = clock_.Now();
}

void Expectations::ExpectDeletions(const std::string& job_key,
                                   const std::vector<std::string>& pod_uids) {
  std::lock_guard<std::mutex> lock(mu_);
  Pending& p = pending_[job_key];
  p.deletions.insert(pod_uids.begin(), pod_uids.end());
  const Clock::Steady now = clock_.Now();
  p.raised_at = now;
  while (!issue_order_.empty() && now - issue_order_.front().first >= ttl_) {
    auto it = issued_deletions_.find(issue_order_.front().second);
    if (it != issued_deletions_.end() && it->second == issue_order_.front().first) {
      issued_deletions_.erase(it);
    }
    issue_order_.pop_front();
  }
  for (const std::string& uid : pod_uids) {
    issued_deletions_[uid] = now;
    issue_order_.emplace_back(now, uid);
  }
}

void Expectations::CreationObserved(const std::string& job_key, const std::string& pod_name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(job_key);
  if (it == pending_.end()) return;
  it->second.creations.erase(pod_name);
  if (it->second.creations.empty() && it->second.deletions.empty()) pending_.erase(it);
}

void Expectations::DeletionObserved(const std::string& job_key, const std::string& pod_uid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(job_key);
  if (it == pending_.end()) return;
  it->second.deletions.erase(pod_uid);
  if (it->second.creations.empty() && it->second.deletions.empty()) pending_.erase(it);
}

bool Expectations::Satisfied(const std::string& job_key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(job_key);
  if (it == pending_.end()) return true;
  return clock_.Now() - it->second.raised_at >= ttl_;
}

bool Expectations::DeletedByUs(const std::string& pod_uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = issued_deletions_.find(pod_uid);
  return it != issued_deletions_.end() && clock_.Now() - it->second < ttl_;
}

void Expectations::Forget(const std::string& job_key) {
  std::lock_guard<std::mutex> lock(mu_);
  pending_.erase(job_key);
}

}  // namespace lockstep::controller
