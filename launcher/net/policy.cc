#include "launcher/net/policy.h"

#include <algorithm>
#include <cstdint>

namespace lockstep::net {

Admission DecideAdmission(size_t open, size_t evictable, const ConnectionLimits& limits) {
  const bool full = open >= limits.max_connections;
  const bool pre_auth_full =
      limits.max_unauthenticated != 0 && evictable >= limits.max_unauthenticated;
  if (!full && !pre_auth_full) return Admission::kAdmit;
  return evictable > 0 ? Admission::kEvictOldest : Admission::kRefuse;
}

int WaitMillis(Clock::Steady now, std::optional<Clock::Steady> next) {
  if (!next) return -1;
  if (*next <= now) return 0;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
  return static_cast<int>(std::clamp<int64_t>(wait, 1, 60'000));
}

}  // namespace lockstep::net
