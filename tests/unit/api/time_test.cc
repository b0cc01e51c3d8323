#include "operator/api/time.h"

#include <gtest/gtest.h>

namespace lockstep::api {
namespace {

TEST(TimeTest, FormatsUtcWholeSeconds) {
  const auto t =
      std::chrono::system_clock::from_time_t(1795982055) + std::chrono::milliseconds(999);
  EXPECT_EQ(FormatTime(t), "2026-11-29T19:54:15Z");
}

TEST(TimeTest, ParsesWhatItFormats) {
  StatusOr<std::chrono::system_clock::time_point> t = ParseTime("2026-11-29T19:54:15Z");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(std::chrono::system_clock::to_time_t(*t), 1795982055);
  EXPECT_EQ(FormatTime(*t), "2026-11-29T19:54:15Z");
}

TEST(TimeTest, ParsesFractionsAndOffsets) {
  StatusOr<std::chrono::system_clock::time_point> a = ParseTime("2026-11-29T19:54:15.123456Z");
  StatusOr<std::chrono::system_clock::time_point> b = ParseTime("2026-11-29T21:54:15+02:00");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FormatTime(*a), "2026-11-29T19:54:15Z");
  EXPECT_EQ(FormatTime(*b), "2026-11-29T19:54:15Z");
}

TEST(TimeTest, RejectsGarbage) {
  for (const char* bad : {"", "2026-11-29", "2026-11-29T19:54:15", "2026-13-01T00:00:00Z",
                          "2026-11-29T19:54:15Zjunk", "tomorrow"}) {
    EXPECT_FALSE(ParseTime(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lockstep::api
