// The server loop's pure decisions (launcher/net/policy.h): admission at the caps, and how long
// the loop may wait for its next deadline.
#include "launcher/net/policy.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace lockstep::net {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(DecideAdmissionTest, Table) {
  ConnectionLimits capped;
  capped.max_connections = 10;
  capped.max_unauthenticated = 3;
  ConnectionLimits uncapped_pre_auth;
  uncapped_pre_auth.max_connections = 10;
  ConnectionLimits none;
  none.max_connections = 0;
  struct Case {
    const char* name;
    size_t open;
    size_t evictable;
    const ConnectionLimits& limits;
    Admission want;
  };
  const Case cases[] = {
      {"room in both caps", 5, 2, capped, Admission::kAdmit},
      {"the pre-auth cap is full", 5, 3, capped, Admission::kEvictOldest},
      {"all connections, some evictable", 10, 1, capped, Admission::kEvictOldest},
      {"all connections, all authenticated", 10, 0, capped, Admission::kRefuse},
      {"past the cap (lowered), none evictable", 12, 0, capped, Admission::kRefuse},
      {"no pre-auth cap: only the total counts", 9, 9, uncapped_pre_auth, Admission::kAdmit},
      {"no pre-auth cap, full of waiting ones", 10, 10, uncapped_pre_auth, Admission::kEvictOldest},
      {"a zero cap refuses everything", 0, 0, none, Admission::kRefuse},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideAdmission(c.open, c.evictable, c.limits), c.want) << c.name;
  }
}

TEST(WaitMillisTest, Table) {
  const Clock::Steady now{std::chrono::hours(1)};
  struct Case {
    const char* name;
    std::optional<Clock::Steady> next;
    int want;
  };
  const Case cases[] = {
      {"nothing due: wait for events only", std::nullopt, -1},
      {"due now", now, 0},
      {"overdue", now - seconds(3), 0},
      {"a microsecond away: rounded up, never early", now + microseconds(1), 1},
      {"exact milliseconds", now + milliseconds(250), 250},
      {"a fraction past: rounded up", now + microseconds(250'001), 251},
      {"far away: capped at a minute", now + std::chrono::hours(2), 60'000},
  };
  for (const Case& c : cases) EXPECT_EQ(WaitMillis(now, c.next), c.want) << c.name;
}

}  // namespace
}  // namespace lockstep::net
