#pragma once
// Client and controller-machinery metrics with controller-runtime's names, registered on a
// caller-owned prometheus::Registry (which must outlive this object). Thread-safe.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <string>

namespace lockstep::kube {

// The per-queue children of the workqueue_* families (label name=<queue>).
struct WorkQueueMetrics {
  prometheus::Gauge* depth;
  prometheus::Counter* adds;
  prometheus::Histogram* queue_duration;
  prometheus::Histogram* work_duration;
  prometheus::Counter* retries;
  prometheus::Gauge* unfinished_work_seconds;
  prometheus::Gauge* longest_running_processor_seconds;
};

class KubeMetrics {
 public:
  explicit KubeMetrics(prometheus::Registry& registry);

  WorkQueueMetrics ForQueue(const std::string& name);
  // rest_client_requests_total{code,method,host}; code is the HTTP status or "<error>".
  void ObserveRequest(const std::string& code, const std::string& method, const std::string& host,
                      const std::string& verb, double seconds);
  prometheus::Gauge& LeaderStatus(const std::string& name);

 private:
  prometheus::Family<prometheus::Gauge>& wq_depth_;
  prometheus::Family<prometheus::Counter>& wq_adds_;
  prometheus::Family<prometheus::Histogram>& wq_queue_duration_;
  prometheus::Family<prometheus::Histogram>& wq_work_duration_;
  prometheus::Family<prometheus::Counter>& wq_retries_;
  prometheus::Family<prometheus::Gauge>& wq_unfinished_;
  prometheus::Family<prometheus::Gauge>& wq_longest_;
  prometheus::Family<prometheus::Counter>& rest_requests_;
  prometheus::Family<prometheus::Histogram>& rest_duration_;
  prometheus::Family<prometheus::Gauge>& leader_status_;
};

}  // namespace lockstep::kube
