#include "operator/kube/milli_quantity.h"

#include <gtest/gtest.h>

#include <limits>

namespace lockstep::kube {
namespace {

int64_t Milli(const char* text) {
  auto v = ParseQuantityMilli(text);
  EXPECT_TRUE(v.ok()) << text << ": " << v.status();
  return v.ok() ? *v : -12345;
}

TEST(QuantityTest, PlainAndDecimalSuffixes) {
  EXPECT_EQ(Milli("8"), 8000);
  EXPECT_EQ(Milli("100m"), 100);
  EXPECT_EQ(Milli("0.5"), 500);
  EXPECT_EQ(Milli("1.5k"), 1500000);
  EXPECT_EQ(Milli("2M"), 2000000000);
  EXPECT_EQ(Milli("3G"), 3000000000000);
  EXPECT_EQ(Milli("0"), 0);
  EXPECT_EQ(Milli("+4"), 4000);
  EXPECT_EQ(Milli("-2"), -2000);
}

TEST(QuantityTest, BinarySuffixes) {
  EXPECT_EQ(Milli("1Ki"), 1024000);
  EXPECT_EQ(Milli("2Gi"), int64_t{2} * 1024 * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("1.5Mi"), int64_t{1572864} * 1000);
}

TEST(QuantityTest, Exponents) {
  EXPECT_EQ(Milli("1e3"), 1000000);
  EXPECT_EQ(Milli("5E-3"), 5);
  EXPECT_EQ(Milli("1E"), std::numeric_limits<int64_t>::max());  // 1 exa in milli saturates
  EXPECT_EQ(Milli("1P"), int64_t{1000000000000000000});
}

TEST(QuantityTest, RoundsUpToMilli) {
  EXPECT_EQ(Milli("1n"), 1);
  EXPECT_EQ(Milli("1500u"), 2);
  EXPECT_EQ(Milli("0.0001"), 1);
  EXPECT_EQ(Milli("0.0000000000000000000001"), 1);  // beyond 18 fraction digits
}

TEST(QuantityTest, Saturates) {
  EXPECT_EQ(Milli("16Ei"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Milli("99999999999999999999999"), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(Milli("-99999999999999999999999"), std::numeric_limits<int64_t>::min());
}

// Values the parser this one replaced got wrong (it had its own arithmetic).
TEST(QuantityTest, ExactWhereTheOldParserWasNot) {
  EXPECT_EQ(Milli("100000000000000000000000n"), int64_t{100000000000000000});  // was 10^12
  EXPECT_EQ(Milli("9223372036854775807m"), std::numeric_limits<int64_t>::max());  // was 10^18
  EXPECT_EQ(Milli("1e-100"), 1);  // was rejected
}

TEST(QuantityTest, RejectsGarbage) {
  for (const char* bad : {"", "m", "1x", "1.2.3", "abc", "1KiB", "1e", "--1", "1 m"}) {
    EXPECT_FALSE(ParseQuantityMilli(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace lockstep::kube
