#include "launcher/nccl/nccl.h"

#include <gtest/gtest.h>

namespace lockstep::launcher::nccl {
namespace {

TEST(HexTest, RoundTrips) {
  const std::string bytes("\x00\x01\xfe\xff", 4);
  EXPECT_EQ(ToHex(bytes), "0001feff");
  StatusOr<std::string> back = FromHex("0001FEff");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(FromHex("abc").ok());
  EXPECT_FALSE(FromHex("zz").ok());
}

}  // namespace
}  // namespace lockstep::launcher::nccl
