#include "operator/controller/gone_pods.h"

#include <string_view>
#include <utility>

#include "operator/api/children.h"

namespace lockstep::controller {

kube::Pod FailureFacts(const kube::Pod& pod) {
  kube::Pod out;
  out.meta.name = pod.meta.name;
  out.meta.namespace_ = pod.meta.namespace_;
  out.meta.uid = pod.meta.uid;
  out.meta.owner_refs = pod.meta.owner_refs;
  out.meta.deletion_timestamp = pod.meta.deletion_timestamp;
  for (std::string_view key : {api::kLabelJobName, api::kLabelAttempt}) {
    auto it = pod.meta.labels.find(std::string(key));
    if (it != pod.meta.labels.end()) out.meta.labels[it->first] = it->second;
  }
  out.node_name = pod.node_name;
  out.phase = pod.phase;
  out.reason = pod.reason;
  out.message = pod.message;
  out.conditions = pod.conditions;
  out.container_statuses = pod.container_statuses;
  return out;
}

GonePods::GonePods(const Clock& clock, std::chrono::nanoseconds memory)
    : clock_(clock), memory_(memory) {}

void GonePods::Expire(Clock::Steady now) {
  while (!order_.empty() && (now - order_.front().first > memory_ || total_ > kGoneTotal)) {
    const auto [at, key] = order_.front();
    order_.pop_front();
    auto job = by_job_.find(key);
    // Gone already: dropped by the per-job bound or forgotten with its job.
    if (job == by_job_.end() || job->second.front().at != at) continue;
    job->second.pop_front();
    --total_;
    if (job->second.empty()) by_job_.erase(job);
  }
}

void GonePods::Record(const std::string& job_key, const kube::Pod& last) {
  if (last.node_name.empty() || last.IsTerminal()) return;
  const Clock::Steady now = clock_.Now();
  std::lock_guard<std::mutex> lock(mu_);
  std::deque<Entry>& entries = by_job_[job_key];
  entries.push_back({now, FailureFacts(last)});
  order_.emplace_back(now, job_key);
  ++total_;
  if (entries.size() > kGonePerJob) {
    entries.pop_front();
    --total_;
  }
  Expire(now);
}

std::vector<kube::Pod> GonePods::For(const std::string& job_key) const {
  const Clock::Steady now = clock_.Now();
  std::vector<kube::Pod> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto job = by_job_.find(job_key);
  if (job == by_job_.end()) return out;
  for (const Entry& e : job->second) {
    if (now - e.at <= memory_) out.push_back(e.pod);
  }
  return out;
}

void GonePods::Forget(const std::string& job_key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto job = by_job_.find(job_key);
  if (job == by_job_.end()) return;
  total_ -= job->second.size();
  by_job_.erase(job);
}

size_t GonePods::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return total_;
}

}  // namespace lockstep::controller
