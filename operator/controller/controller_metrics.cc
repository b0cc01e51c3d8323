#include "operator/controller/controller_metrics.h"

namespace lockstep::controller {

ControllerMetrics::ControllerMetrics(prometheus::Registry& registry)
    : reconcile_total_(prometheus::BuildCounter()
                           .Name("controller_runtime_reconcile_total")
                           .Help("Total number of reconciliations per controller")
                           .Register(registry)),
      reconcile_errors_(prometheus::BuildCounter()
                            .Name("controller_runtime_reconcile_errors_total")
                            .Help("Total number of reconciliation errors per controller")
                            .Register(registry)),
      reconcile_time_(prometheus::BuildHistogram()
                          .Name("controller_runtime_reconcile_time_seconds")
                          .Help("Length of time per reconciliation per controller")
                          .Register(registry)),
      jobs_(prometheus::BuildGauge()
                .Name("lockstep_jobs")
                .Help("TrainingJobs by namespace, framework and state")
                .Register(registry)),
      outcomes_(prometheus::BuildCounter()
                    .Name("lockstep_job_outcomes_total")
                    .Help("TrainingJobs that finished, by outcome (Succeeded, Failed)")
                    .Register(registry)),
      time_to_running_(prometheus::BuildHistogram()
                           .Name("lockstep_job_time_to_running_seconds")
                           .Help("Seconds from a TrainingJob's creation to all its pods running")
                           .Register(registry)),
      restarts_(prometheus::BuildCounter()
                    .Name("lockstep_restarts_total")
                    .Help("Gang restarts of TrainingJobs, by cause and mode")
                    .Register(registry)),
      node_failures_(prometheus::BuildCounter()
                         .Name("lockstep_node_failures_detected_total")
                         .Help("Nodes the failure detector found lost, by reason")
                         .Register(registry)),
      detection_delay_(prometheus::BuildHistogram()
                           .Name("lockstep_detection_delay_seconds")
                           .Help("Seconds from a failure (e.g. a node's last lease renewal) to "
                                 "its detection, where the failure time is known")
                           .Register(registry)),
      recovery_(prometheus::BuildHistogram()
                    .Name("lockstep_recovery_duration_seconds")
                    .Help("Seconds from a failure's detection to every pod of the next "
                          "attempt running")
                    .Register(registry)),
      progress_ratio_(prometheus::BuildGauge()
                          .Name("lockstep_job_progress_ratio")
                          .Help("An active TrainingJob's training progress, step / totalSteps "
                                "(status.progress)")
                          .Register(registry)),
      samples_per_second_(prometheus::BuildGauge()
                              .Name("lockstep_job_samples_per_second")
                              .Help("An active TrainingJob's throughput as its trainers report "
                                    "it (status.progress.samplesPerSecond)")
                              .Register(registry)),
      spare_promotions_(prometheus::BuildCounter()
                            .Name("lockstep_spare_promotions_total")
                            .Help("Hot spares that took a lost pod's node-rank in place "
                                  "(spec.failurePolicy.spareReplicas)")
                            .Register(registry)),
      goodput_ratio_(prometheus::BuildGauge()
                         .Name("lockstep_job_goodput_ratio")
                         .Help("A TrainingJob's productive training time over its accounted "
                               "wall time (status.goodput, docs/goodput.md)")
                         .Register(registry)),
      lost_seconds_(prometheus::BuildCounter()
                        .Name("lockstep_goodput_lost_seconds_total")
                        .Help("Seconds of TrainingJobs' wall time not trained productively, by "
                              "account (placement, startup, recovery, recompute) and restart "
                              "reason")
                        .Register(registry)),
      lost_gpu_seconds_(prometheus::BuildCounter()
                            .Name("lockstep_goodput_lost_gpu_seconds_total")
                            .Help("lockstep_goodput_lost_seconds_total times the job's GPUs "
                                  "(nvidia.com/gpu of every pod)")
                            .Register(registry)),
      errors_(reconcile_errors_.Add({{"controller", kControllerName}})),
      reconcile_seconds_(reconcile_time_.Add(
          {{"controller", kControllerName}},
          prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                  2.5, 5, 10, 30, 60})),
      peer_loss_(prometheus::BuildCounter()
                     .Name("lockstep_peer_loss_reports_total")
                     .Help("Members node 0's launcher reported lost, by the operator's verdict "
                           "(corroborated, waiting, not_corroborated, stale), each once")
                     .Register(registry)),
      nodes_silent_(prometheus::BuildGauge()
                        .Name("lockstep_nodes_silent")
                        .Help("Nodes whose Lease passed the grace or that read Ready=Unknown, "
                              "at the node monitor's last tick")
                        .Register(registry)
                        .Add({})),
      silence_held_(prometheus::BuildGauge()
                        .Name("lockstep_node_silence_held")
                        .Help("1 while so many nodes are silent at once that silence makes no "
                              "node lost (a control-plane problem is likelier), else 0")
                        .Register(registry)
                        .Add({})) {}

namespace {

// Sets `*gauge` (adding the series) to `value`, or removes the series when there is no value.
void SetOrRemove(prometheus::Family<prometheus::Gauge>& family, prometheus::Gauge** gauge,
                 const std::map<std::string, std::string>& labels, std::optional<double> value) {
  if (value) {
    if (*gauge == nullptr) *gauge = &family.Add(labels);
    (*gauge)->Set(*value);
  } else if (*gauge != nullptr) {
    family.Remove(*gauge);
    *gauge = nullptr;
  }
}

}  // namespace

void ControllerMetrics::SetJobProgress(const std::string& ns, const std::string& name,
                                       std::optional<double> ratio,
                                       std::optional<double> samples_per_second) {
  const std::map<std::string, std::string> labels = {{"namespace", ns}, {"name", name}};
  std::lock_guard<std::mutex> lock(mu_);
  ProgressSeries& s = progress_[{ns, name}];
  SetOrRemove(progress_ratio_, &s.ratio, labels, ratio);
  SetOrRemove(samples_per_second_, &s.samples_per_second, labels, samples_per_second);
  if (s.ratio == nullptr && s.samples_per_second == nullptr && s.goodput == nullptr) {
    progress_.erase({ns, name});
  }
}

void ControllerMetrics::ForgetJobProgress(const std::string& ns, const std::string& name) {
  SetJobProgress(ns, name, std::nullopt, std::nullopt);
}

void ControllerMetrics::SetJobGoodput(const std::string& ns, const std::string& name,
                                      std::optional<double> ratio) {
  const std::map<std::string, std::string> labels = {{"namespace", ns}, {"name", name}};
  std::lock_guard<std::mutex> lock(mu_);
  ProgressSeries& s = progress_[{ns, name}];
  SetOrRemove(goodput_ratio_, &s.goodput, labels, ratio);
  if (s.ratio == nullptr && s.samples_per_second == nullptr && s.goodput == nullptr) {
    progress_.erase({ns, name});
  }
}

void ControllerMetrics::ForgetJob(const std::string& ns, const std::string& name) {
  ForgetJobProgress(ns, name);
  SetJobGoodput(ns, name, std::nullopt);
}

void ControllerMetrics::AddGoodputLoss(const std::string& ns, const std::string& account,
                                       const std::string& reason, double seconds,
                                       double gpu_seconds) {
  const std::map<std::string, std::string> labels = {
      {"namespace", ns}, {"account", account}, {"reason", reason}};
  // 0 still adds the series: a job whose losses all round to 0 s shows a flat 0, not nothing.
  if (seconds >= 0) lost_seconds_.Add(labels).Increment(seconds);
  if (gpu_seconds >= 0) lost_gpu_seconds_.Add(labels).Increment(gpu_seconds);
}

prometheus::Histogram::BucketBoundaries ControllerMetrics::TimeToRunningBuckets() {
  return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 43200,
          86400};
}

prometheus::Histogram::BucketBoundaries ControllerMetrics::RecoveryBuckets() {
  return {0.5, 1, 2, 5, 10, 15, 20, 30, 45, 60, 90, 120, 300, 600, 1800};
}

void ControllerMetrics::ObserveRestart(const std::string& ns, const std::string& reason,
                                       const std::string& mode) {
  restarts_.Add({{"namespace", ns}, {"reason", reason}, {"mode", mode}}).Increment();
}

void ControllerMetrics::ObserveSparePromotions(const std::string& ns, int count) {
  if (count > 0) spare_promotions_.Add({{"namespace", ns}}).Increment(count);
}

void ControllerMetrics::ObservePeerLoss(const std::string& verdict) {
  peer_loss_.Add({{"verdict", verdict}}).Increment();
}

void ControllerMetrics::ObserveNodeFailure(const std::string& reason) {
  node_failures_.Add({{"reason", reason}}).Increment();
}

void ControllerMetrics::SetNodeSilence(int silent, bool held) {
  nodes_silent_.Set(silent);
  silence_held_.Set(held ? 1 : 0);
}

void ControllerMetrics::ObserveDetectionDelay(const std::string& reason, double seconds) {
  detection_delay_.Add({{"reason", reason}}, RecoveryBuckets()).Observe(seconds);
}

void ControllerMetrics::ObserveRecovery(const std::string& ns, const std::string& mode,
                                        double seconds) {
  recovery_.Add({{"namespace", ns}, {"mode", mode}}, RecoveryBuckets()).Observe(seconds);
}

void ControllerMetrics::ObserveReconcile(const std::string& result, double seconds) {
  reconcile_total_.Add({{"controller", kControllerName}, {"result", result}}).Increment();
  if (result == "error") errors_.Increment();
  reconcile_seconds_.Observe(seconds);
}

void ControllerMetrics::ObserveOutcome(const std::string& ns, const std::string& framework,
                                       const std::string& outcome) {
  outcomes_.Add({{"namespace", ns}, {"framework", framework}, {"outcome", outcome}}).Increment();
}

void ControllerMetrics::ObserveTimeToRunning(const std::string& ns, const std::string& framework,
                                             double seconds) {
  time_to_running_.Add({{"namespace", ns}, {"framework", framework}}, TimeToRunningBuckets())
      .Observe(seconds);
}

void ControllerMetrics::SetJobCounts(const JobCounts& counts) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [labels, n] : last_counts_) {
    if (counts.count(labels) == 0) {
      const auto& [ns, framework, state] = labels;
      jobs_.Add({{"namespace", ns}, {"framework", framework}, {"state", state}}).Set(0);
    }
  }
  for (const auto& [labels, n] : counts) {
    const auto& [ns, framework, state] = labels;
    jobs_.Add({{"namespace", ns}, {"framework", framework}, {"state", state}})
        .Set(static_cast<double>(n));
  }
  last_counts_ = counts;
}

}  // namespace lockstep::controller
