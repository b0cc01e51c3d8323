// Join and control MACs (protocol/auth.h, protocol/control.h), nonces and randomness.
#include "protocol/auth.h"

#include <gtest/gtest.h>

#include <set>

#include "protocol/control.h"
#include "tests/unit/protocol/frame_util.h"

namespace lockstep::protocol {
namespace {

using testing::Hex;  // tests/unit/protocol/frame_util.h

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
  EXPECT_EQ(Hex(mac), "929d5259218e09af366cbe58bfeeb9d5884fc6fc6ecf1a0fa5ceeb0ab8ad59b4");
}

// Each attempt has its own join key, none of them the token, and the derivation is pinned by a
// vector computed independently (Python hmac over u32be(20) "lockstep-attempt-key" u32be(N)).
TEST(AuthTest, AttemptKeysDifferPerAttemptAndFromTheToken) {
  EXPECT_EQ(Hex(AttemptKey("token", 0)),
            "6f64116d96d1b7b5e2c5b8f577ebe16e112fd6b853c7615f5694c0957684f92d");
  EXPECT_EQ(Hex(AttemptKey("token", 1)),
            "33b52dc8078539505a9bfd7ca3fbe56eb3936e791a57b5205a45ea953f6d6999");
  EXPECT_NE(AttemptKey("token", 1), AttemptKey("token2", 1));
  const std::string nonce(kNonceBytes, 'n');
  // A join of round 1 made with attempt 0's key is not attempt 1's MAC for the same round.
  EXPECT_NE(JoinMac(AttemptKey("token", 0), nonce, "run", 1, 0),
            JoinMac(AttemptKey("token", 1), nonce, "run", 1, 0));
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

// The keyed fast path must give JoinMac's result for every key length HMAC distinguishes:
// empty, short, exactly one SHA-256 block, and longer than a block (hashed first).
TEST(AuthTest, KeyedMacEqualsOneShotMacForEveryKeyLength) {
  const std::string nonce(32, 'n');
  for (const std::string& token : {std::string(), std::string("Jefe"), std::string(64, 'k'),
                                   std::string(65, 'k'), std::string(200, '\xaa')}) {
    const JoinMacKey key(token);
    for (uint32_t node = 0; node < 3; ++node) {
      EXPECT_EQ(key.Mac(nonce, "run", 7, node), JoinMac(token, nonce, "run", 7, node))
          << "token of " << token.size() << " bytes, node " << node;
    }
    EXPECT_NE(key.Mac(nonce, "run", 7, 0), JoinMac(token + "x", nonce, "run", 7, 0));
  }
}

TEST(AuthTest, NonceSourceHandsOutDistinctNoncesAcrossRefills) {
  NonceSource source(32);
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {  // several bulk refills of 256
    StatusOr<std::string> n = source.Next();
    ASSERT_TRUE(n.ok()) << n.status();
    EXPECT_EQ(n->size(), 32u);
    EXPECT_TRUE(seen.insert(*n).second) << "nonce repeated at " << i;
  }
}

TEST(AuthTest, ControlMacCoversEveryFieldAndNeverEqualsAJoinMac) {
  const std::string nonce(kNonceBytes, 'n');
  const std::string base = ControlMac("tok", nonce, "run", ControlKind::kRestart, "why");
  EXPECT_EQ(base.size(), kMacBytes);
  EXPECT_EQ(base, ControlMac("tok", nonce, "run", ControlKind::kRestart, "why"));
  EXPECT_NE(base, ControlMac("tok2", nonce, "run", ControlKind::kRestart, "why"));
  EXPECT_NE(base, ControlMac("tok", std::string(kNonceBytes, 'o'), "run", ControlKind::kRestart,
                             "why"));
  EXPECT_NE(base, ControlMac("tok", nonce, "run2", ControlKind::kRestart, "why"));
  EXPECT_NE(base, ControlMac("tok", nonce, "run", ControlKind::kStatus, "why"));
  EXPECT_NE(base, ControlMac("tok", nonce, "run", ControlKind::kRestart, "why not"));
  EXPECT_NE(ControlMac("tok", nonce, "run", ControlKind::kStatus, ""),
            JoinMac("tok", nonce, "run", 0, 0));
}

}  // namespace
}  // namespace lockstep::protocol
