#include "common/rfc3339.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

using std::chrono::system_clock;

TEST(Rfc3339Test, KeepsMicrosecondsAndFormatsBothKinds) {
  StatusOr<system_clock::time_point> t = ParseTime("2026-11-29T19:54:15.1234567Z");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(FormatMicroTime(*t), "2026-11-29T19:54:15.123456Z");
  EXPECT_EQ(FormatTime(*t), "2026-11-29T19:54:15Z");
  EXPECT_EQ(system_clock::to_time_t(*t), 1795982055);
}

TEST(Rfc3339Test, OffsetsAreConvertedToUtc) {
  StatusOr<system_clock::time_point> plus = ParseTime("2026-11-29T21:54:15.5+02:00");
  StatusOr<system_clock::time_point> minus = ParseTime("2026-11-29T17:24:15-02:30");
  ASSERT_TRUE(plus.ok() && minus.ok());
  EXPECT_EQ(FormatMicroTime(*plus), "2026-11-29T19:54:15.500000Z");
  EXPECT_EQ(FormatTime(*minus), "2026-11-29T19:54:15Z");
}

TEST(Rfc3339Test, MicroTimeBeforeTheEpochKeepsItsFractionPositive) {
  const auto t = system_clock::from_time_t(0) - std::chrono::microseconds(250000);
  EXPECT_EQ(FormatMicroTime(t), "1969-12-31T23:59:59.750000Z");
}

TEST(Rfc3339Test, RejectsEverythingElse) {
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T19:54:15", "2026-13-01T00:00:00Z", "2026-11-29T24:00:00Z",
        "2026-11-29T19:54:15Zjunk", "2026-11-29T19:54:15.12", "2026-11-29T19:54:15+0200",
        "2026-11-29 19:54:15Z", "tomorrow"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lockstep
