#include "operator/kube/milli_quantity.h"

#include <limits>

#include "common/quantity.h"

namespace lockstep::kube {

StatusOr<int64_t> ParseQuantityMilli(std::string_view text) {
  StatusOr<int64_t> milli = ParseMilliQuantity(text);
  if (milli.ok() || milli.status().code() != StatusCode::kOutOfRange) return milli;
  const bool negative = !text.empty() && text[0] == '-';
  return negative ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum = 0;
  if (!__builtin_add_overflow(a, b, &sum)) return sum;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

}  // namespace lockstep::kube
