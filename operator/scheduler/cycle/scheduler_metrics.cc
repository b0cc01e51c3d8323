#include "operator/scheduler/cycle/scheduler_metrics.h"

namespace lockstep::scheduler {
namespace {

prometheus::Family<prometheus::Counter>& Attempts(prometheus::Registry& r) {
  return prometheus::BuildCounter()
      .Name("lockstep_scheduling_attempts_total")
      .Help("Gang scheduling attempts by result (a gang counts once per cycle it is considered).")
      .Register(r);
}

prometheus::Family<prometheus::Gauge>& Gpus(prometheus::Registry& r) {
  return prometheus::BuildGauge()
      .Name("lockstep_gpus")
      .Help("nvidia.com/gpu of all nodes: allocatable, and requested by bound pods.")
      .Register(r);
}

// 10 ms .. ~1.5 h: a gang may wait for capacity a long time.
prometheus::Histogram::BucketBoundaries GangBuckets() {
  return {0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 5400};
}

prometheus::Histogram::BucketBoundaries CycleBuckets() {
  return {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

}  // namespace

SchedulerMetrics::SchedulerMetrics(prometheus::Registry& registry)
    : attempts_family(Attempts(registry)),
      gpus_family(Gpus(registry)),
      attempts_scheduled(attempts_family.Add({{"result", "scheduled"}})),
      attempts_unschedulable(attempts_family.Add({{"result", "unschedulable"}})),
      attempts_error(attempts_family.Add({{"result", "error"}})),
      gang_duration(prometheus::BuildHistogram()
                        .Name("lockstep_gang_scheduling_duration_seconds")
                        .Help("From the first cycle that saw the gang complete to all pods bound.")
                        .Register(registry)
                        .Add({}, GangBuckets())),
      cycle_duration(prometheus::BuildHistogram()
                         .Name("lockstep_scheduling_cycle_duration_seconds")
                         .Help("One scheduling cycle: collect, snapshot, plan, assume, dispatch.")
                         .Register(registry)
                         .Add({}, CycleBuckets())),
      pending_gangs(prometheus::BuildGauge()
                        .Name("lockstep_pending_gangs")
                        .Help("Complete gangs waiting for placement at the last cycle.")
                        .Register(registry)
                        .Add({})),
      gpus_allocatable(gpus_family.Add({{"state", "allocatable"}})),
      gpus_allocated(gpus_family.Add({{"state", "allocated"}})),
      gpus_fragmented(prometheus::BuildGauge()
                          .Name("lockstep_gpus_fragmented")
                          .Help("Free GPUs on nodes that cannot fit the most common per-pod GPU "
                                "request.")
                          .Register(registry)
                          .Add({})),
      preemptions(prometheus::BuildCounter()
                      .Name("lockstep_preemptions_total")
                      .Help("Running gangs evicted (all their pods deleted) so that a gang of "
                            "higher priority fits.")
                      .Register(registry)
                      .Add({})),
      queue_wait(prometheus::BuildHistogram()
                     .Name("lockstep_queue_wait_seconds")
                     .Help("From the first cycle that saw the gang complete to the cycle that "
                           "placed it (binding not included).")
                     .Register(registry)
                     .Add({}, GangBuckets())),
      create_placed_family(prometheus::BuildCounter()
                               .Name("lockstep_create_placed_total")
                               .Help("Gangs offered to be created already placed, by result: "
                                     "placed, fallback (to the binding path), undone (a create "
                                     "failed and the gang was deleted whole).")
                               .Register(registry)),
      create_placed(create_placed_family.Add({{"result", "placed"}})),
      create_fallback(create_placed_family.Add({{"result", "fallback"}})),
      create_undone(create_placed_family.Add({{"result", "undone"}})),
      create_placement_family(prometheus::BuildHistogram()
                                  .Name("lockstep_create_placement_seconds")
                                  .Help("What a pass creating a gang placed waits for, by step: "
                                        "the scheduler's job cache to show the job's attempt "
                                        "(job_cache), then the placement, its wait for the "
                                        "decision lock included (decision).")
                                  .Register(registry)),
      create_job_cache_wait(create_placement_family.Add({{"step", "job_cache"}}, CycleBuckets())),
      create_decision(create_placement_family.Add({{"step", "decision"}}, CycleBuckets())) {}

}  // namespace lockstep::scheduler
