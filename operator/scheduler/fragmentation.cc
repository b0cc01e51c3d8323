#include "operator/scheduler/fragmentation.h"

#include <algorithm>
#include <map>

namespace lockstep::scheduler {

int64_t MostCommonGpuRequest(const std::vector<int64_t>& per_pod_gpu_requests) {
  std::map<int64_t, int64_t> counts;
  for (int64_t gpus : per_pod_gpu_requests) {
    if (gpus > 0) ++counts[gpus];
  }
  int64_t best = 0;
  int64_t best_count = 0;
  for (const auto& [gpus, count] : counts) {  // ascending, so >= lets the larger win a tie
    if (count >= best_count) std::tie(best, best_count) = std::make_pair(gpus, count);
  }
  return best;
}

int64_t FragmentedGpus(const Snapshot& snapshot, int64_t per_pod_gpus) {
  const std::optional<ResourceId> gpu = snapshot.FindResource(kGpu);
  if (!gpu || per_pod_gpus <= 0) return 0;
  int64_t stranded = 0;
  for (NodeIndex n = 0; n < snapshot.size(); ++n) {
    const NodeInfo& node = snapshot.node(n);
    if (!node.ready || node.unschedulable) continue;
    const int64_t free = snapshot.Free(n, *gpu);
    if (free > 0 && free < per_pod_gpus) stranded += free;
  }
  return stranded;
}

GpuTotals CountGpus(const Snapshot& snapshot) {
  GpuTotals totals;
  const std::optional<ResourceId> gpu = snapshot.FindResource(kGpu);
  if (!gpu) return totals;
  for (NodeIndex n = 0; n < snapshot.size(); ++n) {
    totals.allocatable += snapshot.Allocatable(n, *gpu);
    totals.allocated += std::min(snapshot.RequestedAmount(n, *gpu), snapshot.Allocatable(n, *gpu));
  }
  return totals;
}

}  // namespace lockstep::scheduler
