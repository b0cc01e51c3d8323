#pragma once
// Resource quantities in the scheduler's canonical units (parsing: common/quantity.h).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::scheduler {

// Canonical units per resource: "cpu" in millicores, everything else (memory, ephemeral-storage,
// nvidia.com/gpu, extended resources, pods) in whole units. Negative quantities are rejected:
// a request or capacity is never negative.
StatusOr<int64_t> ParseResourceQuantity(std::string_view resource, std::string_view text);

// The inverse for messages: "cpu" 1500 -> "1500m", 2000 -> "2"; memory 2147483648 -> "2Gi";
// other resources as plain integers.
std::string FormatResourceQuantity(std::string_view resource, int64_t value);

}  // namespace lockstep::scheduler
