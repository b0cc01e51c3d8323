#include "operator/scheduler/resource_units.h"

#include "common/quantity.h"

namespace lockstep::scheduler {

StatusOr<int64_t> ParseResourceQuantity(std::string_view resource, std::string_view text) {
  LS_ASSIGN_OR_RETURN(int64_t value,
                      resource == "cpu" ? ParseMilliQuantity(text) : ParseQuantity(text));
  if (value < 0) {
    return InvalidArgumentError(std::string(resource) + " quantity \"" + std::string(text) +
                                "\" is negative");
  }
  return value;
}

std::string FormatResourceQuantity(std::string_view resource, int64_t value) {
  if (resource == "cpu") {
    if (value % 1000 == 0) return std::to_string(value / 1000);
    return std::to_string(value) + "m";
  }
  if (resource == "memory" || resource == "ephemeral-storage") {
    static constexpr std::string_view kBinary[] = {"Ei", "Pi", "Ti", "Gi", "Mi", "Ki"};
    for (int i = 0; i < 6; ++i) {
      const int64_t unit = int64_t{1} << (60 - 10 * i);
      if (value != 0 && value % unit == 0)
        return std::to_string(value / unit) + std::string(kBinary[i]);
    }
  }
  return std::to_string(value);
}

}  // namespace lockstep::scheduler
