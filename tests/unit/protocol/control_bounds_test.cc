// What the operator accepts of a Status answer (issue 44 items 1 and 6): the ranges any server's
// answer keeps (ControlStatus::Check, run by Decode), the job's own size (CheckControlBounds,
// ParseControlAnswer with bounds), and the longest frame a job of a size can be sent
// (MaxControlAnswerFrameBytes). Worker-0 is the tenant's code: every edge below is a value a
// replaced launcher can send.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "protocol/control_client.h"
#include "protocol/messages.h"
#include "tests/unit/protocol/frame_util.h"

namespace lockstep::protocol {
namespace {

using testing::Only;

LostMember Lost(uint32_t node_rank) {
  return LostMember{3, node_rank, "job-worker-" + std::to_string(node_rank), "uid", "node",
                    1'700'000'000'000, 1'700'000'005'000, false, "silent"};
}

// An honest answer of a running gang of 4 with 2 spares: rank 1 lost and served by spare 0.
ControlStatus Honest() {
  ControlStatus s;
  s.round = 3;
  s.complete = s.running = true;
  s.members = 4;
  s.failure_restarts = 1;
  s.requested_restarts = 1;
  s.last_failure = RoundFailure{2, 1, 5, 1, 3, 0, FailureReason::kExit, "rank 5 exited", {}};
  s.progress = TrainingProgress{120, 1000, 2500, 0};
  s.promotions = 1;
  s.standby_spares = 1;
  s.serving = {SpareServing{1, 0, 3, "job-spare-0.job.ns.svc"}};
  s.lost = {Lost(1)};
  return s;
}

// Encodes `s` and decodes it back as the operator does (Decode runs Check).
Status DecodeBack(const ControlStatus& s) { return Decode<ControlStatus>(Only(Encode(s)).body).status(); }

struct Edge {
  std::string name;
  std::function<void(ControlStatus&)> change;
  bool accepted;
};

// Whatever the job: counters, rounds and times in range, each node-rank and spare index once.
TEST(ControlBoundsTest, CheckKeepsEveryIntegerInRangeAndEveryRankOnce) {
  constexpr uint32_t kU32Max = std::numeric_limits<uint32_t>::max();
  constexpr uint32_t kI32Max = std::numeric_limits<int32_t>::max();
  const std::vector<Edge> edges = {
      {"honest", [](ControlStatus&) {}, true},
      {"round at the limit", [](ControlStatus& s) { s.round = kMaxCounter; }, true},
      {"round past it", [](ControlStatus& s) { s.round = kMaxCounter + 1; }, false},
      {"round near INT32_MAX", [](ControlStatus& s) { s.round = kI32Max; }, false},
      {"failure restarts at the limit", [](ControlStatus& s) { s.failure_restarts = kMaxCounter; },
       true},
      {"failure restarts at INT32_MAX", [](ControlStatus& s) { s.failure_restarts = kI32Max; },
       false},
      {"failure restarts at INT32_MAX + 1",
       [](ControlStatus& s) { s.failure_restarts = kI32Max + 1u; }, false},
      {"requested restarts at UINT32_MAX", [](ControlStatus& s) { s.requested_restarts = kU32Max; },
       false},
      {"promotions past the limit", [](ControlStatus& s) { s.promotions = kMaxCounter + 1; },
       false},
      {"last failure's round past the limit",
       [](ControlStatus& s) { s.last_failure->round = kU32Max; }, false},
      {"served round past the limit", [](ControlStatus& s) { s.serving[0].round = kI32Max; },
       false},
      {"lost round past the limit", [](ControlStatus& s) { s.lost[0].round = kMaxCounter + 1; },
       false},
      {"members at kMaxPeers", [](ControlStatus& s) { s.members = kMaxPeers; }, true},
      {"members past kMaxPeers", [](ControlStatus& s) { s.members = kMaxPeers + 1; }, false},
      {"standby spares at UINT32_MAX", [](ControlStatus& s) { s.standby_spares = kU32Max; },
       false},
      {"lost at the latest time", [](ControlStatus& s) { s.lost[0].lost_unix_ms = kMaxUnixMs; },
       true},
      {"lost one ms later", [](ControlStatus& s) { s.lost[0].lost_unix_ms = kMaxUnixMs + 1; },
       false},
      {"lost at 2^62 ms", [](ControlStatus& s) { s.lost[0].lost_unix_ms = uint64_t{1} << 62; },
       false},
      {"last heard at 2^64 - 1 ms",
       [](ControlStatus& s) { s.lost[0].last_heard_unix_ms = ~uint64_t{0}; }, false},
      {"times at zero",
       [](ControlStatus& s) { s.lost[0].last_heard_unix_ms = s.lost[0].lost_unix_ms = 0; },
       true},
      {"failed at the latest time (version 9)",
       [](ControlStatus& s) { s.last_failure->failed_unix_ms = kMaxUnixMs; }, true},
      {"failed one ms later",
       [](ControlStatus& s) { s.last_failure->failed_unix_ms = kMaxUnixMs + 1; }, false},
      {"running since the latest time",
       [](ControlStatus& s) { s.running_since_unix_ms = kMaxUnixMs; }, true},
      {"running since 2^64 - 1 ms",
       [](ControlStatus& s) { s.running_since_unix_ms = ~uint64_t{0}; }, false},
      {"a node-rank lost twice", [](ControlStatus& s) { s.lost.push_back(Lost(1)); }, false},
      {"two node-ranks lost", [](ControlStatus& s) { s.lost.push_back(Lost(2)); }, true},
      {"a node-rank served twice",
       [](ControlStatus& s) { s.serving.push_back(SpareServing{1, 1, 3, "b"}); }, false},
      {"a spare serving two node-ranks",
       [](ControlStatus& s) { s.serving.push_back(SpareServing{2, 0, 3, "b"}); }, false},
      {"progress at UINT64_MAX",
       [](ControlStatus& s) {
         s.progress = TrainingProgress{~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, kU32Max};
       },
       true},  // saturated where it is used (training_progress.h)
  };
  for (const Edge& e : edges) {
    ControlStatus s = Honest();
    e.change(s);
    EXPECT_EQ(DecodeBack(s).ok(), e.accepted) << e.name << ": " << DecodeBack(s);
  }
}

// The job's size: a job of R node-ranks and S spares hears of at most R members, each once.
TEST(ControlBoundsTest, AnAnswerBeyondTheJobsSizeIsRefusedWhole) {
  const ControlBounds bounds{4, 2};
  const std::vector<Edge> edges = {
      {"honest", [](ControlStatus&) {}, true},
      {"members = node ranks", [](ControlStatus& s) { s.members = 4; }, true},
      {"members past them", [](ControlStatus& s) { s.members = 5; }, false},
      {"every node-rank lost",
       [](ControlStatus& s) { s.lost = {Lost(0), Lost(1), Lost(2), Lost(3)}; }, true},
      {"a lost node-rank past the job", [](ControlStatus& s) { s.lost = {Lost(4)}; }, false},
      {"a lost node-rank at UINT32_MAX",
       [](ControlStatus& s) { s.lost = {Lost(std::numeric_limits<uint32_t>::max())}; }, false},
      {"a served node-rank past the job", [](ControlStatus& s) { s.serving[0].node_rank = 4; },
       false},
      // Spare indexes pass `spares` by the replacements of promoted spares, at most one per
      // node-rank.
      {"a replacement spare's index", [](ControlStatus& s) { s.serving[0].spare_index = 5; }, true},
      {"a spare index past every spare pod",
       [](ControlStatus& s) { s.serving[0].spare_index = 6; }, false},
      {"standby spares = spare pods", [](ControlStatus& s) { s.standby_spares = 6; }, true},
      {"standby spares past them", [](ControlStatus& s) { s.standby_spares = 7; }, false},
      {"a failure without a node-rank", [](ControlStatus& s) { s.last_failure->node_rank = -1; },
       true},
      {"a failure's node-rank below -1", [](ControlStatus& s) { s.last_failure->node_rank = -2; },
       false},
      {"a failure's node-rank at INT32_MIN",
       [](ControlStatus& s) { s.last_failure->node_rank = std::numeric_limits<int32_t>::min(); },
       false},
      {"a failure's node-rank past the job",
       [](ControlStatus& s) { s.last_failure->node_rank = 4; }, false},
  };
  for (const Edge& e : edges) {
    ControlStatus s = Honest();
    e.change(s);
    const Status bounded = CheckControlBounds(s, bounds);
    EXPECT_EQ(bounded.ok(), e.accepted) << e.name << ": " << bounded;
    // Refused whole through ParseControlAnswer, and only with the bounds.
    StatusOr<ControlReply> reply = ParseControlAnswer(Only(Encode(s)), bounds);
    EXPECT_EQ(reply.ok(), e.accepted) << e.name;
    if (!e.accepted) {
      EXPECT_EQ(reply.status().code(), StatusCode::kOutOfRange) << e.name;
      EXPECT_NE(reply.status().message().find("4 node ranks, 2 spares"), std::string::npos)
          << reply.status();
    }
  }
}

TEST(ControlBoundsTest, AJobWithoutSparesHearsOfNone) {
  ControlStatus s = Honest();
  s.lost.clear();
  EXPECT_FALSE(CheckControlBounds(s, ControlBounds{1, 0}).ok());  // serves node-rank 1
  s.serving.clear();
  s.last_failure.reset();
  s.members = 1;
  s.standby_spares = 1;
  EXPECT_TRUE(CheckControlBounds(s, ControlBounds{1, 0}).ok());  // a node-rank's replacement
  s.standby_spares = 2;
  EXPECT_FALSE(CheckControlBounds(s, ControlBounds{1, 0}).ok());
}

// The longest answer a job can be sent, built field by field at every reader limit: exactly the
// frame limit MaxControlAnswerFrameBytes gives (so the limit and the fields cannot drift apart).
ControlStatus Longest(const ControlBounds& b) {
  ControlStatus s;
  s.last_failure = RoundFailure{};
  s.last_failure->reason = FailureReason::kExit;
  s.last_failure->message.assign(kMaxStringBytes, 'm');
  s.last_failure->stderr_tail.assign(kMaxTailLines, std::string(kMaxTailLineBytes, 't'));
  s.progress = TrainingProgress{};
  s.progress->checkpoint_step = 1;
  for (uint32_t r = 0; r < b.node_ranks; ++r) {
    s.serving.push_back(SpareServing{r, r, 0, std::string(kMaxHostBytes, 'h')});
    s.lost.push_back(LostMember{0, r, std::string(kMaxObjectNameBytes, 'p'),
                                std::string(kMaxUidBytes, 'u'),
                                std::string(kMaxObjectNameBytes, 'n'), 0, 0, true,
                                std::string(kMaxWhyBytes, 'w')});
  }
  return s;
}

TEST(ControlBoundsTest, TheFrameLimitIsTheLongestAnswerAJobCanBeSent) {
  for (const ControlBounds b : {ControlBounds{1, 0}, ControlBounds{4, 2}, ControlBounds{64, 16}}) {
    const std::string frame = Encode(Longest(b));
    // The reason's name is shorter than the string limit the reader allows it.
    const size_t reason_slack = kMaxStringBytes - ToString(FailureReason::kExit).size();
    EXPECT_EQ(frame.size() - kFrameHeaderBytes + reason_slack, MaxControlAnswerFrameBytes(b))
        << b.node_ranks;
    FrameDecoder decoder(MaxControlAnswerFrameBytes(b));
    decoder.Append(frame);
    StatusOr<std::optional<Frame>> f = decoder.Next();
    ASSERT_TRUE(f.ok() && f->has_value()) << f.status();
    EXPECT_TRUE(ParseControlAnswer(**f, b).ok());
  }
  // O(job size), never past the protocol's frame limit.
  EXPECT_LT(MaxControlAnswerFrameBytes({1, 0}), 64u << 10);
  EXPECT_EQ(MaxControlAnswerFrameBytes({kMaxPeers, 16}), kMaxFrameBytes);
  EXPECT_EQ(MaxControlAnswerFrameBytes({std::numeric_limits<uint32_t>::max(), 0}),
            kMaxFrameBytes);
}

// The writer cuts names to what the reader accepts; a longer one on the wire is refused.
TEST(ControlBoundsTest, NamesLongerThanKubernetesAllowsAreCutOrRefused) {
  ControlStatus s = Honest();
  s.lost[0].pod_name.assign(4000, 'p');
  s.lost[0].why.assign(5000, 'w');
  s.serving[0].host.assign(300, 'h');
  StatusOr<ControlStatus> back = Decode<ControlStatus>(Only(Encode(s)).body);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->lost[0].pod_name.size(), kMaxObjectNameBytes);
  EXPECT_EQ(back->lost[0].why.size(), kMaxWhyBytes);
  EXPECT_EQ(back->serving[0].host.size(), kMaxHostBytes);

  // A 254-byte pod name, written by hand as a hostile server would.
  LostMember l = Lost(1);
  WireWriter w;
  w.U32(l.round);
  w.U32(l.node_rank);
  w.String(std::string(kMaxObjectNameBytes + 1, 'p'), kMaxObjectNameBytes + 1);
  WireReader r(w.data());
  LostMember out;
  LostMember::Fields(r, out);
  EXPECT_FALSE(r.status().ok());
}

}  // namespace
}  // namespace lockstep::protocol
