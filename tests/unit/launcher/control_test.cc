// The control requests' codecs and MAC (launcher/rendezvous/control.h), and the messages protocol
// version 3 added to the session (Started, Failure's stderr tail).
#include "launcher/rendezvous/control.h"

#include <gtest/gtest.h>

#include "tests/unit/launcher/frame_util.h"

#include "launcher/rendezvous/auth.h"
#include "launcher/rendezvous/wire.h"

namespace lockstep::launcher::rendezvous {
namespace {

using testing::Only;  // tests/unit/launcher/frame_util.h

TEST(ControlTest, RequestRoundTrips) {
  ControlRequest m;
  m.run_id = "job-uid";
  m.kind = ControlKind::kRestart;
  m.reason = "lockstep.dev/restart-request=1";
  m.mac = std::string(kMacBytes, 'm');
  Frame f = Only(Encode(m));
  EXPECT_EQ(f.type, static_cast<uint8_t>(MessageType::kControl));
  StatusOr<ControlRequest> back = DecodeControlRequest(f.body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->version, kProtocolVersion);
  EXPECT_EQ(back->run_id, "job-uid");
  EXPECT_EQ(back->kind, ControlKind::kRestart);
  EXPECT_EQ(back->reason, m.reason);
  EXPECT_EQ(back->mac, m.mac);
  EXPECT_TRUE(DecodeAny(f).ok());
}

TEST(ControlTest, RequestWithAnUnknownKindOrTrailingBytesIsRefused) {
  ControlRequest m;
  m.kind = static_cast<ControlKind>(9);
  EXPECT_FALSE(DecodeControlRequest(Only(Encode(m)).body).ok());
  m.kind = ControlKind::kStatus;
  std::string body = Only(Encode(m)).body;
  EXPECT_TRUE(DecodeControlRequest(body).ok());
  EXPECT_FALSE(DecodeControlRequest(body + "x").ok());
  EXPECT_FALSE(DecodeControlRequest(body.substr(0, body.size() - 1)).ok());
}

TEST(ControlTest, StatusRoundTripsWithAndWithoutAFailure) {
  ControlStatus m;
  m.round = 4;
  m.complete = true;
  m.running = false;
  m.members = 12;
  m.failure_restarts = 2;
  m.requested_restarts = 1;
  StatusOr<ControlStatus> plain = DecodeControlStatus(Only(Encode(m)).body);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->round, 4u);
  EXPECT_TRUE(plain->complete);
  EXPECT_FALSE(plain->running);
  EXPECT_EQ(plain->members, 12u);
  EXPECT_EQ(plain->failure_restarts, 2u);
  EXPECT_EQ(plain->requested_restarts, 1u);
  EXPECT_FALSE(plain->last_failure.has_value());

  RoundFailure f;
  f.round = 3;
  f.node_rank = 5;
  f.rank = 41;
  f.local_rank = 1;
  f.exit_code = 0;
  f.signal = 9;
  f.reason = "signal";
  f.message = "rank 41 killed by signal 9";
  for (int i = 0; i < 30; ++i) f.stderr_tail.push_back("line " + std::to_string(i));
  f.stderr_tail.push_back(std::string(5000, 'x'));
  m.last_failure = f;
  Frame frame = Only(Encode(m));
  StatusOr<ControlStatus> back = DecodeControlStatus(frame.body);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_TRUE(back->last_failure.has_value());
  const RoundFailure& g = *back->last_failure;
  EXPECT_EQ(g.round, 3u);
  EXPECT_EQ(g.node_rank, 5);
  EXPECT_EQ(g.rank, 41);
  EXPECT_EQ(g.local_rank, 1);
  EXPECT_EQ(g.signal, 9);
  EXPECT_EQ(g.reason, "signal");
  EXPECT_EQ(g.message, f.message);
  // The last lines are kept, each cut to a bounded length.
  ASSERT_EQ(g.stderr_tail.size(), kMaxTailLines);
  EXPECT_EQ(g.stderr_tail.front(), "line 11");
  EXPECT_EQ(g.stderr_tail.back(), std::string(kMaxTailLineBytes, 'x'));
  EXPECT_TRUE(DecodeAny(frame).ok());
  EXPECT_FALSE(DecodeControlStatus(frame.body + "x").ok());
}

TEST(ControlTest, StatusWithLyingTailCountIsRefused) {
  WireWriter w;
  w.PutU32(1);
  w.PutU8(1);
  w.PutU8(1);
  w.PutU32(2);
  w.PutU32(0);
  w.PutU32(0);
  w.PutU8(1);  // a failure follows
  for (int i = 0; i < 6; ++i) w.PutU32(0);
  w.PutString("exit");
  w.PutString("m");
  w.PutU32(1000000);  // lines
  EXPECT_FALSE(DecodeControlStatus(w.data()).ok());
}

TEST(ControlTest, AckRoundTrips) {
  ControlAck m{false, 7, "round 7 is still gathering; nothing to restart"};
  StatusOr<ControlAck> back = DecodeControlAck(Only(Encode(m)).body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_FALSE(back->accepted);
  EXPECT_EQ(back->round, 7u);
  EXPECT_EQ(back->message, m.message);
}

TEST(ControlTest, MacCoversEveryFieldAndNeverEqualsAJoinMac) {
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

TEST(ControlTest, FailureCarriesTheLastStderrLines) {
  Failure m;
  m.attempt = 2;
  m.rank = 3;
  m.exit_code = 1;
  m.reason = "exit";
  m.message = "rank 3 exited with code 1";
  for (int i = 0; i < 25; ++i) m.stderr_tail.push_back("e" + std::to_string(i));
  Frame f = Only(Encode(m));
  StatusOr<Failure> back = DecodeFailure(f.body);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->stderr_tail.size(), kMaxTailLines);
  EXPECT_EQ(back->stderr_tail.front(), "e5");
  EXPECT_EQ(back->stderr_tail.back(), "e24");
  EXPECT_EQ(back->message, m.message);
}

TEST(ControlTest, StartedRoundTrips) {
  Frame f = Only(Encode(Started{9}));
  EXPECT_EQ(f.type, static_cast<uint8_t>(MessageType::kStarted));
  StatusOr<Started> back = DecodeStarted(f.body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->attempt, 9u);
  EXPECT_FALSE(DecodeStarted(f.body + "x").ok());
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
