#pragma once
// The gang scheduler's metrics on a caller-owned registry (which must outlive this object):
//   lockstep_scheduling_attempts_total{result="scheduled|unschedulable|error"}
//   lockstep_gang_scheduling_duration_seconds   first seen complete -> every pod bound
//   lockstep_scheduling_cycle_duration_seconds  one cycle, phases 1-5 (binds run on)
//   lockstep_pending_gangs                      complete gangs not placed at the last cycle
//   lockstep_gpus{state="allocatable|allocated"}
//   lockstep_gpus_fragmented                    free GPUs on nodes that cannot fit the most
//                                               common per-pod GPU request
//   lockstep_preemptions_total                  gangs evicted for a higher-priority gang
//   lockstep_queue_wait_seconds                 first seen complete -> placed (no bind)
//   lockstep_create_placed_total{result="placed|fallback|undone"}
//                                               gangs offered to be placed at create
//                                               (create_placement.h): created placed, left to
//                                               the binding path, or whose create was undone
//   lockstep_create_placement_seconds{step="job_cache|decision"}
//                                               what a pass that creates placed waits for: this
//                                               scheduler's job cache to show the job's attempt,
//                                               then its placement (waiting for the decision
//                                               lock included)
// Thread-safe (prometheus-cpp metrics are).

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace lockstep::scheduler {

struct SchedulerMetrics {
  explicit SchedulerMetrics(prometheus::Registry& registry);

  // Families first: the members below are their children.
  prometheus::Family<prometheus::Counter>& attempts_family;
  prometheus::Family<prometheus::Gauge>& gpus_family;

  prometheus::Counter& attempts_scheduled;
  prometheus::Counter& attempts_unschedulable;
  prometheus::Counter& attempts_error;
  prometheus::Histogram& gang_duration;
  prometheus::Histogram& cycle_duration;
  prometheus::Gauge& pending_gangs;
  prometheus::Gauge& gpus_allocatable;
  prometheus::Gauge& gpus_allocated;
  prometheus::Gauge& gpus_fragmented;
  prometheus::Counter& preemptions;
  prometheus::Histogram& queue_wait;
  prometheus::Family<prometheus::Counter>& create_placed_family;
  prometheus::Counter& create_placed;
  prometheus::Counter& create_fallback;
  prometheus::Counter& create_undone;
  prometheus::Family<prometheus::Histogram>& create_placement_family;
  prometheus::Histogram& create_job_cache_wait;
  prometheus::Histogram& create_decision;
};

}  // namespace lockstep::scheduler
