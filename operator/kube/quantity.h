#pragma once
// Kubernetes resource quantities ("100m", "2Gi", "1e3", "8") as integers in milli-units, the
// canonical form the scheduler sums and compares. Values round up to the next milli-unit (as
// the apiserver does) and saturate at INT64_MAX.

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace lockstep::kube {

StatusOr<int64_t> ParseQuantityMilli(std::string_view text);

}  // namespace lockstep::kube
