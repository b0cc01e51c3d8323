#include "operator/scheduler/resource_units.h"

#include <gtest/gtest.h>

namespace lockstep::scheduler {
namespace {

TEST(QuantityTest, ResourceUnits) {
  EXPECT_EQ(*ParseResourceQuantity("cpu", "500m"), 500);
  EXPECT_EQ(*ParseResourceQuantity("cpu", "2"), 2000);
  EXPECT_EQ(*ParseResourceQuantity("memory", "2Gi"), int64_t{2} << 30);
  EXPECT_EQ(*ParseResourceQuantity("nvidia.com/gpu", "8"), 8);
  EXPECT_EQ(ParseResourceQuantity("memory", "-1Gi").status().code(), StatusCode::kInvalidArgument);
}

TEST(QuantityTest, FormatsForMessages) {
  EXPECT_EQ(FormatResourceQuantity("cpu", 1500), "1500m");
  EXPECT_EQ(FormatResourceQuantity("cpu", 2000), "2");
  EXPECT_EQ(FormatResourceQuantity("memory", int64_t{3} << 30), "3Gi");
  EXPECT_EQ(FormatResourceQuantity("memory", 1000), "1000");
  EXPECT_EQ(FormatResourceQuantity("nvidia.com/gpu", 12), "12");
}

TEST(QuantityTest, FormatThenParseRoundTrips) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{999}, int64_t{1} << 30, int64_t{5} << 40}) {
    for (const char* resource : {"cpu", "memory", "nvidia.com/gpu"}) {
      EXPECT_EQ(*ParseResourceQuantity(resource, FormatResourceQuantity(resource, v)), v)
          << resource << " " << v;
    }
  }
}

}  // namespace
}  // namespace lockstep::scheduler
