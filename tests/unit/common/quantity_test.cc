#include "common/quantity.h"

#include <gtest/gtest.h>

#include <limits>
#include <ostream>

namespace lockstep {
namespace {

struct Case {
  const char* text;
  int64_t value;  // whole units, rounded up
  int64_t milli;  // thousandths, rounded up
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.text; }

class QuantityTest : public ::testing::TestWithParam<Case> {};

TEST_P(QuantityTest, ParsesExactly) {
  const Case& c = GetParam();
  StatusOr<int64_t> value = ParseQuantity(c.text);
  ASSERT_TRUE(value.ok()) << c.text << ": " << value.status();
  EXPECT_EQ(*value, c.value) << c.text;
  StatusOr<int64_t> milli = ParseMilliQuantity(c.text);
  ASSERT_TRUE(milli.ok()) << c.text << ": " << milli.status();
  EXPECT_EQ(*milli, c.milli) << c.text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityTest,
    ::testing::Values(Case{"0", 0, 0}, Case{"8", 8, 8000}, Case{"500m", 1, 500},
                      Case{"1.5", 2, 1500}, Case{"1e3", 1000, 1000000}, Case{"1E3", 1000, 1000000},
                      Case{"2Gi", 2147483648, 2147483648000}, Case{"1Ki", 1024, 1024000},
                      Case{"1Mi", 1048576, 1048576000}, Case{"1.5Gi", 1610612736, 1610612736000},
                      Case{"0.5Ki", 512, 512000}, Case{"1k", 1000, 1000000},
                      Case{"1M", 1000000, 1000000000}, Case{"1G", 1000000000, 1000000000000},
                      Case{"1T", 1000000000000, 1000000000000000},
                      Case{"1P", 1000000000000000, 1000000000000000000}, Case{"100u", 1, 1},
                      Case{"1n", 1, 1}, Case{"1000000n", 1, 1}, Case{"1000000000n", 1, 1000},
                      Case{"0.001", 1, 1}, Case{"0.0001", 1, 1}, Case{".5", 1, 500},
                      Case{"5.", 5, 5000}, Case{"+3", 3, 3000}, Case{"-1.5", -1, -1500},
                      Case{"-500m", 0, -500}, Case{"007", 7, 7000}, Case{"1.000", 1, 1000},
                      Case{"2e-3", 1, 2}, Case{"12e+2", 1200, 1200000},
                      Case{"1.00000000000000000000001", 2, 1001},
                      Case{"100000000000000000000000n", 100000000000000, 100000000000000000},
                      Case{"1e-100", 1, 1}, Case{"0e5", 0, 0}, Case{"0.0", 0, 0}));

TEST(QuantityTest, LargestValues) {
  EXPECT_EQ(*ParseQuantity("1E"), 1000000000000000000);
  EXPECT_EQ(*ParseQuantity("9223372036854775807"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(*ParseQuantity("7Ei"), int64_t{7} << 60);
  EXPECT_EQ(*ParseMilliQuantity("9223372036854775807m"), std::numeric_limits<int64_t>::max());
}

TEST(QuantityTest, OutOfRangeForBothScales) {
  EXPECT_EQ(ParseMilliQuantity("1E").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseMilliQuantity("9223372036854775807").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseQuantity("9223372036854775808").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseQuantity("8Ei").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseQuantity("1e19").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseQuantity("1e10000000").status().code(), StatusCode::kOutOfRange);
  EXPECT_EQ(ParseQuantity("123456789012345678901234567890").status().code(),
            StatusCode::kOutOfRange);
}

TEST(QuantityTest, RejectsMalformed) {
  for (const char* text : {"", "abc", "1x", "1.2.3", "m", "1Gb", "1e", "1e+", "1ee3", "--1", "1 Gi",
                           " 1", "Gi", ".", "1i", "1KI", "1e3.5"}) {
    EXPECT_EQ(ParseQuantity(text).status().code(), StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace lockstep
