#pragma once
// Capacity figures for the scheduler's gauges, from a snapshot. Pure, thread-safe.

#include <cstdint>
#include <vector>

#include "operator/scheduler/snapshot.h"

namespace lockstep::scheduler {

// The per-pod GPU request seen most often (ties go to the larger request); 0 when none is > 0.
int64_t MostCommonGpuRequest(const std::vector<int64_t>& per_pod_gpu_requests);

// GPUs free on Ready, uncordoned nodes that cannot fit one pod asking `per_pod_gpus`: capacity
// that exists but is stranded in pieces too small for the typical job. 0 when per_pod_gpus <= 0.
int64_t FragmentedGpus(const Snapshot& snapshot, int64_t per_pod_gpus);

// For lockstep_gpus{state="allocatable|allocated"}.
struct GpuTotals {
  int64_t allocatable = 0;
  int64_t allocated = 0;
};
GpuTotals CountGpus(const Snapshot& snapshot);

}  // namespace lockstep::scheduler
