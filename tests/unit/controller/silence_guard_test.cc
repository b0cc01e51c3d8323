// The silence guard (silence_guard.h): the census line, one row per edge, and which verdicts it
// holds.
#include "operator/controller/silence_guard.h"

#include <gtest/gtest.h>

namespace lockstep::controller {
namespace {

TEST(SilenceGuardTest, HoldsFromTheLineOnwardsAndNeverBelowThreeNodes) {
  struct Row {
    int silent;
    int total;
    double fraction;
    bool held;
  };
  for (const Row& r : std::vector<Row>{
           {0, 1000, 0.55, false},
           {549, 1000, 0.55, false},  // just below 55%
           {550, 1000, 0.55, true},   // on the line
           {1000, 1000, 0.55, true},  // every node silent
           {10, 20, 0.55, false},
           {11, 20, 0.55, true},  // 0.55 x 20 is 11.000000000000002 in doubles
           {2, 3, 0.55, false},   // 67%, but "more than 2" is the node controller's floor
           {2, 2, 0.55, false},   // a two-node cluster whose nodes both died: lost
           {3, 4, 0.55, true},    // three of four
           {3, 5, 0.55, true},    // 60%
           {3, 6, 0.55, false},   // 50%
           {1, 1, 0.55, false},
           {1000, 1000, 0, false},  // the guard off
           {999, 1000, 1, false},   // 1: only all nodes silent at once holds
           {1000, 1000, 1, true},
           {3, 0, 0.55, false},  // no nodes known: nothing to weigh
       }) {
    EXPECT_EQ(HoldSilence(r.silent, r.total, r.fraction), r.held)
        << r.silent << " of " << r.total << " at " << r.fraction;
  }
}

NodeVerdict Verdict(const std::string& reason) {
  NodeVerdict v;
  v.lost = true;
  v.reason = reason;
  v.message = "node n: " + reason;
  return v;
}

TEST(SilenceGuardTest, OnlySilenceVerdictsAreHeld) {
  struct Row {
    std::string reason;
    bool silence;
  };
  for (const Row& r : std::vector<Row>{{"NodeLeaseExpired", true},
                                       {"NodeUnreachable", true},
                                       {"NodeNotReady", false},  // a live kubelet said so
                                       {"NodeDeleted", false},
                                       {"NodeTainted", false},
                                       {"NodeCordoned", false}}) {
    const NodeVerdict v = Verdict(r.reason);
    EXPECT_EQ(IsSilenceVerdict(v), r.silence) << r.reason;
    const NodeVerdict held = ApplySilenceHold(v, /*held=*/true);
    EXPECT_EQ(held.lost, !r.silence) << r.reason;
    if (!r.silence) {
      EXPECT_EQ(held.reason, r.reason);
    }
    // Not held: every verdict stands as it was.
    const NodeVerdict free = ApplySilenceHold(v, /*held=*/false);
    EXPECT_TRUE(free.lost) << r.reason;
    EXPECT_EQ(free.reason, r.reason);
  }
  EXPECT_FALSE(IsSilenceVerdict(NodeVerdict{}));
  EXPECT_FALSE(ApplySilenceHold(NodeVerdict{}, true).lost);
}

}  // namespace
}  // namespace lockstep::controller
