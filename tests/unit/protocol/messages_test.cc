// Every message of the rendezvous protocol (protocol/messages.h): round trips, the bytes this
// protocol version puts on the wire, and what a decoder must refuse.
#include "protocol/messages.h"

#include <gtest/gtest.h>

#include <map>
#include <type_traits>

#include "tests/unit/protocol/frame_util.h"

namespace lockstep::protocol {
namespace {

using testing::Hex;
using testing::Only;

// One message of every type, in AllMessages order. Adding a message to AllMessages without a
// sample here fails to compile (the static_assert below).
AllMessages Samples() {
  const Join join{.version = kProtocolVersion,
                  .run_id = "run-1",
                  .key_attempt = 1,
                  .attempt = 2,
                  .node_rank = 3,
                  .role = "worker",
                  .role_index = 1,
                  .host = "pod-3.job.ns.svc",
                  .port = 2222,
                  .nproc = 4,
                  .want_peer_table = true,
                  .mac = std::string(kMacBytes, 'm'),
                  .standby = true,
                  .spare_index = 2,
                  .pod_name = "job-worker-1",
                  .node_name = "node-7",
                  .pod_uid = "uid-7"};
  const WorldMsg world{1, 1, 2, 8, 4, 4, "pod-0", std::string(kNcclIdBytes, 'x'), 0, 4};
  const RoundFailure failure{2,  1, 5, 1, 3, 0, FailureReason::kExit, "rank 5 exited", {"boom"},
                             1700000004000};
  return {Challenge{kProtocolVersion, std::string(kNonceBytes, 'n')},
          join,
          Refuse{RefuseCode::kStaleAttempt, "stale attempt"},
          PeerTable{{PeerEntry{0, 0, "chief", 0, "a", 1, 1, 0},
                     PeerEntry{1, 2, "worker", 1, "bb", 2, 3, 1}}},
          world,
          Heartbeat{7},
          Failure{1, 5, 3, 0, FailureReason::kExit, "rank 5 exited with code 3",
                  {"Traceback", "ValueError: bad"}},
          Started{4},
          Done{3, true},
          Abort{2, FailureReason::kPeerLost, 1, "node 1 silent", false, true},
          ControlRequest{kProtocolVersion, "run-1", ControlKind::kRestart, "asked",
                         std::string(kMacBytes, 'c')},
          ControlStatus{3, true, true, 2, 1, 2, failure, TrainingProgress{120, 1000, 2500, 1, 100},
                        1, 1, {SpareServing{2, 0, 3, "job-spare-0.job.ns.svc"}},
                        {LostMember{2, 1, "job-worker-1", "uid-7", "node-7", 1700000000123,
                                    1700000005123, false, "silent"}},
                        1700000006000},
          ControlAck{true, 3, "ok"},
          Promote{3, 2, "worker", 2}};
}
static_assert(std::is_same_v<decltype(Samples()), AllMessages>);

// The samples' frames as protocol version 9 writes them (9: RoundFailure's failed_unix_ms and
// ControlStatus's running_since_unix_ms, and the version field of Challenge, Join and Control).
// A layout change fails here: bump kProtocolVersion and record the new bytes (protocol/README.md).
const std::map<MessageType, std::string> kVersion9Bytes = {
    {MessageType::kChallenge,
     "000000290100000009000000206e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e6e"
     "6e6e6e"},
    {MessageType::kJoin,
     "0000009102000000090000000572756e2d3100000001000000020000000300000006776f726b65720000"
     "000100000010706f642d332e6a6f622e6e732e737663000008ae0000000401000000206d6d6d6d6d6d6d"
     "6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d6d01000000020000000c6a6f622d776f726b"
     "65722d31000000066e6f64652d37000000057569642d37"},
    {MessageType::kRefuse, "0000001303030000000d7374616c6520617474656d7074"},
    {MessageType::kPeerTable,
     "000000530400000002000000000000000000000005636869656600000000000000016100000001000000"
     "0100000000000000010000000200000006776f726b657200000001000000026262000000020000000300"
     "000001"},
    {MessageType::kWorld,
     "000000ae0500000001000000010000000200000008000000040000000400000005706f642d3000000080"
     "787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
     "787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
     "787878787878787878787878787878787878787878787878787878787878787878787878787878787878"
     "78780000000000000004"},
    {MessageType::kHeartbeat, "000000050600000007"},
    {MessageType::kFailure,
     "0000005a070000000100000005000000030000000000000004657869740000001972616e6b2035206578"
     "69746564207769746820636f64652033000000020000000954726163656261636b0000000f56616c7565"
     "4572726f723a20626164"},
    {MessageType::kDone, "00000006080000000301"},
    {MessageType::kAbort,
     "00000029090000000200000009706565722d6c6f7374000000010000000d6e6f646520312073696c656e"
     "740001"},
    {MessageType::kStarted, "000000050a00000004"},
    {MessageType::kControl,
     "0000003c0b000000090000000572756e2d31020000000561736b65640000002063636363636363636363"
     "63636363636363636363636363636363636363636363"},
    {MessageType::kControlStatus,
     "000001030c00000003010100000002000000010000000201000000020000000100000005000000010000"
     "00030000000000000004657869740000000d72616e6b2035206578697465640000000100000004626f6f"
     "6d0000018bcfe577a001000000000000007800000000000003e800000000000009c400000001010000000000000064000000"
     "010000000100000001"
     "000000020000000000000003000000166a6f622d73706172652d302e6a6f622e6e732e73766300000001"
     "00000002000000010000000c6a6f622d776f726b65722d31000000057569642d37000000066e6f64652d"
     "370000018bcfe5687b0000018bcfe57c03000000000673696c656e740000018bcfe57f70"},
    {MessageType::kPromote, "000000170e000000030000000200000006776f726b657200000002"},
    {MessageType::kControlAck, "0000000c0d0100000003000000026f6b"},
};

template <typename M>
void ExpectRoundTrip(const M& m) {
  SCOPED_TRACE("message type " + std::to_string(static_cast<int>(M::kType)));
  const std::string bytes = Encode(m);
  EXPECT_EQ(Hex(bytes), kVersion9Bytes.at(M::kType));
  const Frame f = Only(bytes);
  EXPECT_EQ(f.type, static_cast<uint8_t>(M::kType));
  StatusOr<M> back = Decode<M>(f.body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, m);
  EXPECT_TRUE(DecodeAny(f).ok());
  for (size_t cut = 0; cut < f.body.size(); ++cut) {
    EXPECT_FALSE(Decode<M>(f.body.substr(0, cut)).ok()) << "cut at " << cut;
  }
  EXPECT_FALSE(Decode<M>(f.body + "x").ok()) << "a trailing byte";
}

TEST(MessagesTest, EveryMessageRoundTripsToTheBytesOfThisVersion) {
  std::apply([](const auto&... m) { (ExpectRoundTrip(m), ...); }, Samples());
}

TEST(MessagesTest, WorldRejectsRoleRanksOutsideTheRoleOrTheWorld) {
  WorldMsg w{0, 0, 2, 8, 4, 4, "", "", 4, 8};
  ASSERT_TRUE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
  w.role_world_size = 6;  // role ranks 4..7 exceed the role of 6
  EXPECT_FALSE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
  w.role_world_size = 12;  // a role larger than the world
  EXPECT_FALSE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
}

TEST(MessagesTest, WorldRejectsInconsistentRanks) {
  WorldMsg w{0, 0, 1, 4, 2, 4, "", "", 0, 4};  // ranks 2..5 exceed the world of 4
  EXPECT_FALSE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
  w.first_rank = 0;
  w.nccl_id = "short";
  EXPECT_FALSE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
  w.nccl_id = "";
  w.group_rank = 1;  // outside a round of 1
  EXPECT_FALSE(Decode<WorldMsg>(Only(Encode(w)).body).ok());
}

TEST(MessagesTest, PeerTableRejectsLyingCount) {
  const std::string body("\x00\x01\x00\x00", 4);  // claims 65536 peers, carries none
  EXPECT_FALSE(Decode<PeerTable>(body).ok());
}

TEST(MessagesTest, DecodeAnyRejectsUnknownType) {
  Frame f;
  f.type = 200;
  EXPECT_FALSE(DecodeAny(f).ok());
  f.type = static_cast<uint8_t>(MessageType::kHeartbeat);
  f.body = std::string(4, '\0');
  EXPECT_TRUE(DecodeAny(f).ok());
}

TEST(MessagesTest, EnumsAndFlagsOutsideTheirRangeAreRefused) {
  ControlRequest request;
  request.kind = static_cast<ControlKind>(9);
  EXPECT_FALSE(Decode<ControlRequest>(Only(Encode(request)).body).ok());
  Refuse refuse{static_cast<RefuseCode>(0), "no such code"};
  EXPECT_FALSE(Decode<Refuse>(Only(Encode(refuse)).body).ok());
  std::string done = Only(Encode(Done{1, true})).body;
  done.back() = 2;  // ends_job must be 0 or 1
  EXPECT_FALSE(Decode<Done>(done).ok());
}

// A reason a newer launcher may send reads as kUnknown; the rest of the message still counts.
TEST(MessagesTest, AnUnknownReasonNameReadsAsUnknown) {
  WireWriter w;
  w.U32(4);
  w.String("a-reason-of-a-newer-version");
  w.I32(2);
  w.String("node 2 did something new");
  w.Bool(true);
  w.Bool(false);  // spare_promoted (version 6)
  StatusOr<Abort> abort = Decode<Abort>(w.data());
  ASSERT_TRUE(abort.ok()) << abort.status();
  EXPECT_EQ(abort->reason, FailureReason::kUnknown);
  EXPECT_EQ(abort->node_rank, 2);
  EXPECT_TRUE(abort->restartable);
}

TEST(MessagesTest, StderrTailsAreCutToTheLastLinesOfBoundedLength) {
  Failure m;
  m.attempt = 2;
  m.rank = 3;
  m.exit_code = 1;
  m.message = "rank 3 exited with code 1";
  for (int i = 0; i < 25; ++i) m.stderr_tail.push_back("e" + std::to_string(i));
  m.stderr_tail.push_back(std::string(5000, 'x'));
  StatusOr<Failure> back = Decode<Failure>(Only(Encode(m)).body);
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->stderr_tail.size(), kMaxTailLines);
  EXPECT_EQ(back->stderr_tail.front(), "e6");
  EXPECT_EQ(back->stderr_tail.back(), std::string(kMaxTailLineBytes, 'x'));
}

TEST(MessagesTest, ALyingStderrLineCountIsRefused) {
  WireWriter w;
  w.U32(1);
  w.I32(-1);
  w.I32(1);
  w.I32(0);
  w.Reason(FailureReason::kExit);
  w.String("m");
  w.U32(1000000);  // lines
  EXPECT_FALSE(Decode<Failure>(w.data()).ok());
}

}  // namespace
}  // namespace lockstep::protocol
