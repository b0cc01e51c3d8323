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

// Found by tests/fuzz/rfc3339 (each input is in its corpus): sscanf's %d read signs and
// blanks, the day was not checked against its month, an empty fraction passed, and a year
// outside system_clock's range overflowed its nanoseconds (year 0000 came back as 2584).
TEST(Rfc3339Test, RejectsWhatSscanfLetThrough) {
  for (const char* bad :
       {"+202-11-29T19:54:15Z", "2026-+1-29T19:54:15Z", "2026-11-29T-1:54:15Z",
        "2026-11-29T19: 4:15Z", "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z",
        "2026-04-31T00:00:00Z", "2026-11-29T19:54:15.Z", "2026-11-29T19:54:15+24:00",
        "2026-11-29T19:54:15+02:60", "2026-11-29T19:54:15+-2:00"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
  EXPECT_TRUE(ParseTime("2024-02-29T00:00:00Z").ok());
  EXPECT_TRUE(ParseTime("2000-02-29T00:00:00Z").ok());
}

TEST(Rfc3339Test, InstantsBeyondTheClockSaturateAndRoundTrip) {
  const StatusOr<system_clock::time_point> early = ParseTime("0000-01-01T00:00:00Z");
  const StatusOr<system_clock::time_point> late = ParseTime("9999-12-31T23:59:59.999999Z");
  ASSERT_TRUE(early.ok() && late.ok());
  EXPECT_LT(*early, ParseTime("1700-01-01T00:00:00Z").value());
  EXPECT_GT(*late, ParseTime("2261-01-01T00:00:00Z").value());
  for (system_clock::time_point t : {*early, *late}) {
    EXPECT_EQ(ParseTime(FormatMicroTime(t)).value(), t) << FormatMicroTime(t);
    EXPECT_EQ(ParseTime(FormatTime(t)).value(), t) << FormatTime(t);
  }
}

TEST(Rfc3339Test, LeapSecondIsTheNextMinute) {
  EXPECT_EQ(ParseTime("2016-12-31T23:59:60Z").value(), ParseTime("2017-01-01T00:00:00Z").value());
}

}  // namespace
}  // namespace lockstep
