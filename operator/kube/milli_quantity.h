#pragma once
// Kubernetes resource quantities ("100m", "2Gi", "1e3", "8") as integers in milli-units, the
// canonical form the scheduler sums and compares. Exact (common/quantity.h), rounded up to the
// next milli-unit as the apiserver does; a value beyond int64 saturates at INT64_MAX (INT64_MIN
// when negative) instead of failing, so one absurd capacity never hides a whole Node or Pod.

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace lockstep::kube {

StatusOr<int64_t> ParseQuantityMilli(std::string_view text);

// a + b, held at INT64_MAX / INT64_MIN instead of overflowing: sums of saturated quantities (a
// pod's containers, a node's pods) stay saturated.
int64_t SaturatingAdd(int64_t a, int64_t b);

}  // namespace lockstep::kube
