#include "launcher/rendezvous/auth.h"

#include <gtest/gtest.h>

#include "launcher/nccl/nccl.h"

namespace lockstep::launcher::rendezvous {
namespace {

TEST(AuthTest, MacCoversEveryField) {
  const std::string nonce(32, 'n');
  const std::string mac = JoinMac("Jefe", nonce, "run", 1, 2);
  EXPECT_EQ(mac.size(), 32u);
  EXPECT_EQ(mac, JoinMac("Jefe", nonce, "run", 1, 2));
  EXPECT_NE(mac, JoinMac("jefe", nonce, "run", 1, 2));
  EXPECT_NE(mac, JoinMac("Jefe", std::string(32, 'm'), "run", 1, 2));
  EXPECT_NE(mac, JoinMac("Jefe", nonce, "run2", 1, 2));
  EXPECT_NE(mac, JoinMac("Jefe", nonce, "run", 2, 2));
  EXPECT_NE(mac, JoinMac("Jefe", nonce, "run", 1, 3));
}

TEST(AuthTest, FieldsCannotShiftIntoEachOther) {
  // Length prefixes keep ("ab", nonce "c") apart from ("a", nonce "bc").
  EXPECT_NE(JoinMac("k", "c", "ab", 0, 0), JoinMac("k", "bc", "a", 0, 0));
}

TEST(AuthTest, KnownVector) {
  // Computed independently (Python hmac over u32be(32) nonce u32be(3) "job" u32be(0) u32be(0)),
  // so a change of the MAC input layout, a protocol break, fails here.
  const std::string mac = JoinMac("token", std::string(32, '\0'), "job", 0, 0);
  EXPECT_EQ(nccl::ToHex(mac), "929d5259218e09af366cbe58bfeeb9d5884fc6fc6ecf1a0fa5ceeb0ab8ad59b4");
}

TEST(AuthTest, MacEqualsIsExact) {
  EXPECT_TRUE(MacEquals("abc", "abc"));
  EXPECT_FALSE(MacEquals("abc", "abd"));
  EXPECT_FALSE(MacEquals("abc", "ab"));
}

TEST(AuthTest, RandomBytesDiffer) {
  StatusOr<std::string> a = RandomBytes(32), b = RandomBytes(32);
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_NE(*a, *b);
}

TEST(HexTest, RoundTrips) {
  const std::string bytes("\x00\x01\xfe\xff", 4);
  EXPECT_EQ(nccl::ToHex(bytes), "0001feff");
  StatusOr<std::string> back = nccl::FromHex("0001FEff");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(nccl::FromHex("abc").ok());
  EXPECT_FALSE(nccl::FromHex("zz").ok());
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
