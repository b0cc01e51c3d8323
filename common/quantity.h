#pragma once
// Kubernetes resource quantities ("500m", "2Gi", "1.5", "1e3", "8") parsed exactly into int64.
// Pure functions, thread-safe.
//
// Grammar (k8s.io/apimachinery resource.Quantity):
//   <quantity> ::= <sign>? <digits> ( "." <digits>? )? <suffix> | <sign>? "." <digits> <suffix>
//   <suffix>   ::= "" | Ki|Mi|Gi|Ti|Pi|Ei | n|u|m|k|M|G|T|P|E | (e|E) <sign>? <digits>
// Values are computed with exact integer arithmetic and rounded up (towards +infinity) to the
// requested unit, as Quantity.Value()/MilliValue() do; results beyond int64 are OutOfRange.

#include <cstdint>
#include <string_view>

#include "common/status.h"

namespace lockstep {

// The quantity in whole units, rounded up: "1.5" -> 2, "2Gi" -> 2147483648, "100m" -> 1.
StatusOr<int64_t> ParseQuantity(std::string_view text);

// The quantity in thousandths, rounded up: "500m" -> 500, "1.5" -> 1500, "1u" -> 1.
StatusOr<int64_t> ParseMilliQuantity(std::string_view text);

}  // namespace lockstep
