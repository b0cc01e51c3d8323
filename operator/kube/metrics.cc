#include "operator/kube/metrics.h"

#include <cmath>

namespace lockstep::kube {
namespace {

// controller-runtime: prometheus.ExponentialBuckets(10e-9, 10, 12).
prometheus::Histogram::BucketBoundaries WorkQueueBuckets() {
  prometheus::Histogram::BucketBoundaries b;
  for (int i = 0; i < 12; ++i) b.push_back(10e-9 * std::pow(10.0, i));
  return b;
}

// controller-runtime's rest_client_request_duration_seconds buckets.
prometheus::Histogram::BucketBoundaries RestBuckets() {
  return {0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0};
}

}  // namespace

KubeMetrics::KubeMetrics(prometheus::Registry& registry)
    : wq_depth_(prometheus::BuildGauge()
                    .Name("workqueue_depth")
                    .Help("Current depth of workqueue")
                    .Register(registry)),
      wq_adds_(prometheus::BuildCounter()
                   .Name("workqueue_adds_total")
                   .Help("Total number of adds handled by workqueue")
                   .Register(registry)),
      wq_queue_duration_(prometheus::BuildHistogram()
                             .Name("workqueue_queue_duration_seconds")
                             .Help("How long in seconds an item stays in workqueue before being "
                                   "requested")
                             .Register(registry)),
      wq_work_duration_(prometheus::BuildHistogram()
                            .Name("workqueue_work_duration_seconds")
                            .Help("How long in seconds processing an item from workqueue takes")
                            .Register(registry)),
      wq_retries_(prometheus::BuildCounter()
                      .Name("workqueue_retries_total")
                      .Help("Total number of retries handled by workqueue")
                      .Register(registry)),
      wq_unfinished_(prometheus::BuildGauge()
                         .Name("workqueue_unfinished_work_seconds")
                         .Help("How many seconds of work has been done that is in progress and "
                               "hasn't been observed by work_duration")
                         .Register(registry)),
      wq_longest_(prometheus::BuildGauge()
                      .Name("workqueue_longest_running_processor_seconds")
                      .Help("How many seconds has the longest running processor for workqueue "
                            "been running")
                      .Register(registry)),
      rest_requests_(prometheus::BuildCounter()
                         .Name("rest_client_requests_total")
                         .Help("Number of HTTP requests, partitioned by status code, method, and "
                               "host")
                         .Register(registry)),
      rest_duration_(prometheus::BuildHistogram()
                         .Name("rest_client_request_duration_seconds")
                         .Help("Request latency in seconds. Broken down by verb, and host")
                         .Register(registry)),
      leader_status_(prometheus::BuildGauge()
                         .Name("leader_election_master_status")
                         .Help("Gauge of if the reporting system is master of the relevant lease, "
                               "0 indicates backup, 1 indicates master. 'name' is the string used "
                               "to identify the lease")
                         .Register(registry)) {}

WorkQueueMetrics KubeMetrics::ForQueue(const std::string& name) {
  const prometheus::Labels labels{{"name", name}, {"controller", name}};
  return WorkQueueMetrics{
      &wq_depth_.Add(labels),
      &wq_adds_.Add(labels),
      &wq_queue_duration_.Add(labels, WorkQueueBuckets()),
      &wq_work_duration_.Add(labels, WorkQueueBuckets()),
      &wq_retries_.Add(labels),
      &wq_unfinished_.Add(labels),
      &wq_longest_.Add(labels),
  };
}

void KubeMetrics::ObserveRequest(const std::string& code, const std::string& method,
                                 const std::string& host, const std::string& verb,
                                 double seconds) {
  rest_requests_.Add({{"code", code}, {"method", method}, {"host", host}}).Increment();
  rest_duration_.Add({{"verb", verb}, {"host", host}}, RestBuckets()).Observe(seconds);
}

prometheus::Gauge& KubeMetrics::LeaderStatus(const std::string& name) {
  return leader_status_.Add({{"name", name}});
}

}  // namespace lockstep::kube
