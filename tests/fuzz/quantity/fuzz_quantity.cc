// Fuzz target for Kubernetes quantity parsing (common/quantity.h and its two users: the kube
// decoders' saturating milli-units and the scheduler's per-resource units). Quantities come from
// pod templates and Node capacities, i.e. from users and node agents. Checked beyond "no crash":
//   - whole units are the milli-units rounded up: Parse(x) == ceil(ParseMilli(x) / 1000);
//   - the kube decoder agrees with the exact parser, and saturates only where it is out of range;
//   - the scheduler formats every value it parsed into text that parses back to that value.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "common/check.h"
#include "common/quantity.h"
#include "operator/kube/milli_quantity.h"
#include "operator/scheduler/resource_units.h"

namespace lockstep {
namespace {

int64_t CeilDiv1000(int64_t milli) {
  const int64_t q = milli / 1000;
  return (milli % 1000 > 0) ? q + 1 : q;  // division truncates towards zero
}

void CheckSchedulerRoundTrip(std::string_view resource, std::string_view text) {
  auto value = scheduler::ParseResourceQuantity(resource, text);
  if (!value.ok()) return;
  LS_CHECK(*value >= 0);
  const std::string formatted = scheduler::FormatResourceQuantity(resource, *value);
  auto again = scheduler::ParseResourceQuantity(resource, formatted);
  LS_CHECK(again.ok() && *again == *value);
}

}  // namespace
}  // namespace lockstep

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const StatusOr<int64_t> units = ParseQuantity(text);
  const StatusOr<int64_t> milli = ParseMilliQuantity(text);
  if (milli.ok()) {
    LS_CHECK(units.ok());
    LS_CHECK(*units == CeilDiv1000(*milli));
  }
  if (units.ok() && !milli.ok()) LS_CHECK(milli.status().code() == StatusCode::kOutOfRange);
  if (!units.ok()) LS_CHECK(!milli.ok());

  const StatusOr<int64_t> saturating = kube::ParseQuantityMilli(text);
  if (milli.ok()) {
    LS_CHECK(saturating.ok() && *saturating == *milli);
  } else if (milli.status().code() == StatusCode::kOutOfRange) {
    LS_CHECK(saturating.ok() && (*saturating == std::numeric_limits<int64_t>::max() ||
                                 *saturating == std::numeric_limits<int64_t>::min()));
  } else {
    LS_CHECK(!saturating.ok());
  }
  for (std::string_view resource : {"cpu", "memory", "nvidia.com/gpu"}) {
    CheckSchedulerRoundTrip(resource, text);
  }
  return 0;
}
