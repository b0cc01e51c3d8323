#pragma once
// The job controller's metrics, registered on a caller-owned prometheus::Registry:
//   controller_runtime_reconcile_total{controller,result}   result: success|error|requeue_after
//   controller_runtime_reconcile_errors_total{controller}
//   controller_runtime_reconcile_time_seconds{controller}   (histogram)
//   lockstep_jobs{namespace,framework,state}                (gauge; set from the job cache)
//   lockstep_job_outcomes_total{namespace,framework,outcome}
//   lockstep_job_time_to_running_seconds{namespace,framework}  creation -> all pods Running,
//                                                           buckets 0.1 s .. 24 h
//   lockstep_restarts_total{namespace,reason,mode}          gang restarts decided (reason:
//                                                           PodFailed, NodeLeaseExpired, ...)
//   lockstep_node_failures_detected_total{reason}           nodes the detector found lost
//   lockstep_detection_delay_seconds{reason}                (histogram) failure -> detection,
//                                                           where the failure time is known
//   lockstep_recovery_duration_seconds{namespace,mode}      (histogram) detection -> every pod
//                                                           of the next attempt Running
//   lockstep_job_progress_ratio{namespace,name}             (gauge) status.progress step /
//                                                           totalSteps, while the job is active
//   lockstep_job_samples_per_second{namespace,name}         (gauge) status.progress
//                                                           samplesPerSecond, while active
//   lockstep_job_goodput_ratio{namespace,name}              (gauge) status.goodput's ratio with
//                                                           the time since its updatedAt charged
//                                                           (goodput.h GoodputAt), while the job
//                                                           exists
//   lockstep_goodput_lost_seconds_total{namespace,account,reason}
//                                                           seconds not trained productively:
//                                                           account placement|startup|recovery|
//                                                           recompute, reason the restart's for
//                                                           recovery (else ""); docs/goodput.md
//   lockstep_goodput_lost_gpu_seconds_total{namespace,account,reason}
//                                                           the same times the job's GPUs
//                                                           (nvidia.com/gpu of every pod)
//   lockstep_spare_promotions_total{namespace}              hot spares that took a lost pod's
//                                                           node-rank (controller/spare_plan.h)
//   lockstep_peer_loss_reports_total{verdict}               members node 0's launcher reported
//                                                           lost, by verdict (peer_loss.h): each
//                                                           report (pod, loss time) once, so a
//                                                           worker-0 naming a new time at every
//                                                           poll counts once per poll
//   lockstep_nodes_silent                                   (gauge) nodes whose Lease passed the
//                                                           grace or that read Ready=Unknown, at
//                                                           the node monitor's last tick
//   lockstep_node_silence_held                              (gauge) 1 while so many are silent
//                                                           that silence makes no node lost
//                                                           (silence_guard.h), else 0
// Thread-safe.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace lockstep::controller {

inline constexpr char kControllerName[] = "trainingjob";

class ControllerMetrics {
 public:
  explicit ControllerMetrics(prometheus::Registry& registry);

  void ObserveReconcile(const std::string& result, double seconds);
  void ObserveOutcome(const std::string& ns, const std::string& framework,
                      const std::string& outcome);
  void ObserveTimeToRunning(const std::string& ns, const std::string& framework, double seconds);

  void ObserveRestart(const std::string& ns, const std::string& reason, const std::string& mode);
  void ObserveNodeFailure(const std::string& reason);
  void ObservePeerLoss(const std::string& verdict);
  void ObserveDetectionDelay(const std::string& reason, double seconds);
  void ObserveRecovery(const std::string& ns, const std::string& mode, double seconds);
  void ObserveSparePromotions(const std::string& ns, int count);
  void SetNodeSilence(int silent, bool held);

  using JobCounts = std::map<std::tuple<std::string, std::string, std::string>, int64_t>;
  // Replaces the lockstep_jobs gauge values: (namespace, framework, state) -> count. Label sets
  // that disappeared are set to 0.
  void SetJobCounts(const JobCounts& counts);

  // The job's progress series: set to the values given, removed where one is nullopt. A
  // finished or deleted job's series go with ForgetJobProgress.
  void SetJobProgress(const std::string& ns, const std::string& name, std::optional<double> ratio,
                      std::optional<double> samples_per_second);
  void ForgetJobProgress(const std::string& ns, const std::string& name);
  // The job's goodput ratio, removed where nullopt; ForgetJob removes it with the rest.
  void SetJobGoodput(const std::string& ns, const std::string& name, std::optional<double> ratio);
  // Every series of a deleted job.
  void ForgetJob(const std::string& ns, const std::string& name);
  void AddGoodputLoss(const std::string& ns, const std::string& account, const std::string& reason,
                      double seconds, double gpu_seconds);

  static prometheus::Histogram::BucketBoundaries TimeToRunningBuckets();
  static prometheus::Histogram::BucketBoundaries RecoveryBuckets();

 private:
  prometheus::Family<prometheus::Counter>& reconcile_total_;
  prometheus::Family<prometheus::Counter>& reconcile_errors_;
  prometheus::Family<prometheus::Histogram>& reconcile_time_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Counter>& outcomes_;
  prometheus::Family<prometheus::Histogram>& time_to_running_;
  prometheus::Family<prometheus::Counter>& restarts_;
  prometheus::Family<prometheus::Counter>& node_failures_;
  prometheus::Family<prometheus::Histogram>& detection_delay_;
  prometheus::Family<prometheus::Histogram>& recovery_;
  prometheus::Family<prometheus::Gauge>& progress_ratio_;
  prometheus::Family<prometheus::Gauge>& samples_per_second_;
  prometheus::Family<prometheus::Counter>& spare_promotions_;
  prometheus::Family<prometheus::Gauge>& goodput_ratio_;
  prometheus::Family<prometheus::Counter>& lost_seconds_;
  prometheus::Family<prometheus::Counter>& lost_gpu_seconds_;
  prometheus::Counter& errors_;
  prometheus::Histogram& reconcile_seconds_;
  prometheus::Family<prometheus::Counter>& peer_loss_;
  prometheus::Gauge& nodes_silent_;
  prometheus::Gauge& silence_held_;
  std::mutex mu_;
  JobCounts last_counts_;  // guarded by mu_
  // The per-job series that exist, by (namespace, name): what ForgetJob removes.
  struct ProgressSeries {
    prometheus::Gauge* ratio = nullptr;
    prometheus::Gauge* samples_per_second = nullptr;
    prometheus::Gauge* goodput = nullptr;
  };
  std::map<std::pair<std::string, std::string>, ProgressSeries> progress_;  // guarded by mu_
};

}  // namespace lockstep::controller
