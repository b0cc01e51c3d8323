// Late recoveries (goodput.h LateRecovery, goodput_evidence.h): what the launchers' Status answer
// says of a recovery the status never showed, and how NextGoodput moves it from productive time,
// clamped to the job's own Running time whatever the answer says.
#include "operator/controller/goodput_evidence.h"

#include <gtest/gtest.h>

#include "operator/api/conditions.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::T0;

template <typename T, typename F>
T With(T v, F f) {
  f(v);
  return v;
}

uint64_t UnixMs(api::Time t) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
}

protocol::ControlStatus Answer(uint32_t round, std::optional<api::Time> failed,
                               uint32_t failed_round, std::optional<api::Time> running_since) {
  protocol::ControlStatus st;
  st.round = round;
  if (failed) {
    st.last_failure = protocol::RoundFailure{};
    st.last_failure->round = failed_round;
    st.last_failure->failed_unix_ms = UnixMs(*failed);
  }
  st.complete = st.running = running_since.has_value();
  st.running_since_unix_ms = running_since ? UnixMs(*running_since) : 0;
  return st;
}

TEST(LauncherRecoveryTest, Table) {
  const api::Time t = T0();
  const api::Time now = t + seconds(30);
  api::TrainingJobStatus stored;  // goodput last folded at t
  stored.goodput = api::JobGoodput{};
  stored.goodput->updated_at = t;
  api::TrainingJobStatus requested = stored;
  requested.restart_request = api::RestartRequestStatus{};
  requested.restart_request->time = t + seconds(2);
  requested.restart_request->round = 1;
  auto spare = [](protocol::ControlStatus st) {
    st.serving.push_back(protocol::SpareServing{1, 0, st.round, "job-spare-0"});
    return st;
  };
  struct Case {
    std::string name;
    protocol::ControlStatus answer;
    api::TrainingJobStatus stored;
    std::optional<LateRecovery> want;
  };
  const std::vector<Case> cases = {
      {"an in-place restart after round 0 failed: the failure to round 1's start",
       Answer(1, t + milliseconds(1500), 0, t + milliseconds(4700)), stored,
       LateRecovery{"RankFailed", t + milliseconds(1500), t + milliseconds(4700)}},
      {"the spare promoted for round 1", spare(Answer(1, t + seconds(1), 0, t + seconds(3))),
       stored, LateRecovery{"SparePromoted", t + seconds(1), t + seconds(3)}},
      {"a spare promoted for an earlier round: the failure's own reason",
       With(spare(Answer(1, t + seconds(1), 1, t + seconds(3))),
            [](auto& s) {
              s.round = 2;
              s.last_failure->reason = protocol::FailureReason::kHang;
            }),
       stored, LateRecovery{"Hang", t + seconds(1), t + seconds(3)}},
      {"round 1 still forming: nothing yet", Answer(1, t + seconds(1), 0, std::nullopt), stored,
       std::nullopt},
      {"running with no start reported (zero): nothing",
       With(Answer(1, t + seconds(1), 0, std::nullopt), [](auto& s) { s.running = true; }), stored,
       std::nullopt},
      {"charged already: goodput folded since the round began",
       Answer(1, t - seconds(9), 0, t - seconds(5)), stored, std::nullopt},
      {"the failure ended an older round (a requested restart came since)",
       Answer(2, t + seconds(1), 0, t + seconds(4)), stored, std::nullopt},
      {"the operator's request ended round 1: from the request",
       Answer(2, std::nullopt, 0, t + seconds(4)), requested,
       LateRecovery{"RestartRequested", t + seconds(2), t + seconds(4)}},
      {"a request of another attempt",
       Answer(2, std::nullopt, 0, t + seconds(4)),
       With(requested, [](auto& s) { s.attempt = 1; }), std::nullopt},
      {"a failure with no time", With(Answer(1, t, 0, t + seconds(3)), [](auto& s) {
         s.last_failure->failed_unix_ms = 0;
       }),
       stored, std::nullopt},
      {"the round started before its failure: none", Answer(1, t + seconds(5), 0, t + seconds(3)),
       stored, std::nullopt},
      {"a start after the pass: none (a clock ahead, or a lie)",
       Answer(1, t + seconds(1), 0, t + seconds(3000)), stored, std::nullopt},
      {"the first round: no recovery", Answer(0, std::nullopt, 0, t + seconds(3)), stored,
       std::nullopt},
      {"no goodput stored yet: none", Answer(1, t + seconds(1), 0, t + seconds(3)),
       api::TrainingJobStatus{}, std::nullopt},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(LauncherRecovery(c.answer, c.stored, now), c.want) << c.name;
  }
}

TEST(MergeLateRecoveryTest, EarliestStartLatestEndFirstCause) {
  const api::Time t = T0();
  std::optional<LateRecovery> into;
  MergeLateRecovery(&into, {"A", t + seconds(5), t + seconds(8)});
  MergeLateRecovery(&into, {"B", t + seconds(2), t + seconds(6)});
  EXPECT_EQ(into, (LateRecovery{"A", t + seconds(2), t + seconds(8)}));
}

api::TrainingJobStatus RunningSince(api::Time since, int64_t productive, api::Time updated) {
  api::TrainingJobStatus s;
  s.state = api::JobState::kRunning;
  api::Condition c;
  c.type = std::string(api::kConditionRunning);
  c.status = api::ConditionStatus::kTrue;
  c.last_transition_time = since;
  s.conditions.push_back(c);
  s.goodput = api::JobGoodput{};
  s.goodput->productive_seconds = productive;
  s.goodput->updated_at = updated;
  return s;
}

TEST(NextGoodputLateRecoveryTest, Table) {
  const api::Time t = T0();
  struct Case {
    std::string name;
    api::TrainingJobStatus stored;
    api::TrainingJobStatus planned;
    LateRecovery late;
    int64_t productive;
    int64_t recovered;  // recoveryByCause of the late's cause (0: no entry)
  };
  // Running since t, 100 s charged up to t+100; the pass at t+110.
  const api::TrainingJobStatus stored = RunningSince(t, 100, t + seconds(100));
  api::TrainingJobStatus restarting = stored;
  restarting.state = api::JobState::kRestarting;
  restarting.conditions.front().status = api::ConditionStatus::kFalse;
  restarting.conditions.front().last_transition_time = t + seconds(110);
  restarting.last_restart = api::LastRestart{t + seconds(110), "NodeLost", "", 1, 0, {}, {}};
  const std::vector<Case> cases = {
      {"a spare promotion: failure to the new round's start moves from productive", stored, stored,
       {"SparePromoted", t + milliseconds(90'400), t + milliseconds(93'900)}, 107, 3},
      {"a Recreate restart's detection lag (the lease's last renewal to the decision)", stored,
       restarting, {"NodeLost", t + milliseconds(89'600), t + seconds(110)}, 90, 20},
      {"a start before the gang ran is clamped to the Running condition", stored, stored,
       {"SparePromoted", t - seconds(500), t + seconds(4)}, 106, 4},
      {"an end after the pass is clamped to the pass", stored, stored,
       {"SparePromoted", t + seconds(105), t + seconds(9000)}, 105, 5},
      {"never more than the productive time", RunningSince(t, 3, t + seconds(100)), stored,
       {"SparePromoted", t, t + seconds(110)}, 0, 13},
      {"an end before its start moves nothing", stored, stored,
       {"SparePromoted", t + seconds(50), t + seconds(40)}, 110, 0},
  };
  for (const Case& c : cases) {
    std::optional<api::JobGoodput> g = NextGoodput(c.stored, c.planned, t, t + seconds(110),
                                                   c.late);
    ASSERT_TRUE(g) << c.name;
    EXPECT_EQ(g->productive_seconds, c.productive) << c.name;
    int64_t recovered = 0;
    for (const api::GoodputCause& cause : g->recovery_by_cause) {
      if (cause.cause == c.late.cause) recovered = cause.seconds;
    }
    // A Recreate restart's own recovery starts with this pass: only the late part so far.
    EXPECT_EQ(recovered, c.recovered) << c.name;
    // Moved, never made: the pass's 10 s are charged once.
    EXPECT_EQ(g->productive_seconds + g->recovery_seconds,
              c.stored.goodput->productive_seconds + 10)
        << c.name;
  }
}

TEST(NextGoodputLateRecoveryTest, OnlyWhenTheStoredStatusWasRunning) {
  const api::Time t = T0();
  api::TrainingJobStatus starting;
  starting.state = api::JobState::kScheduling;
  starting.reason = "StartingPods";
  starting.goodput = api::JobGoodput{};
  starting.goodput->updated_at = t;
  std::optional<api::JobGoodput> g =
      NextGoodput(starting, starting, t, t + seconds(10),
                  LateRecovery{"PodFailed", t, t + seconds(10)});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->startup_seconds, 10);
  EXPECT_EQ(g->recovery_seconds, 0);
}

// The recompute is charged by the pass that records the promotion (spares.promotions grew), as
// at a restart; a late recovery, which may come a poll later, charges none.
TEST(NextGoodputLateRecoveryTest, ThePromotionChargesTheRecomputedStepsTheLateRecoveryNone) {
  const api::Time t = T0();
  api::TrainingJobStatus stored = RunningSince(t, 100, t + seconds(100));
  stored.goodput->step_seconds = 0.5;
  stored.progress = api::JobProgress{};
  stored.progress->step = 40;
  stored.progress->checkpoint_step = 30;
  stored.progress->last_update = t + seconds(100);
  stored.spares = api::SpareStatus{};
  api::TrainingJobStatus promoted = stored;
  promoted.spares->promotions = 1;
  std::optional<api::JobGoodput> g = NextGoodput(stored, promoted, t, t + seconds(110));
  ASSERT_TRUE(g);
  EXPECT_EQ(g->recompute_seconds, 5);
  EXPECT_EQ(g->productive_seconds, 105);
  stored.spares->promotions = 1;
  g = NextGoodput(stored, stored, t, t + seconds(110),
                  LateRecovery{"SparePromoted", t + seconds(104), t + seconds(107)});
  ASSERT_TRUE(g);
  EXPECT_EQ(g->recovery_seconds, 3);
  EXPECT_EQ(g->recompute_seconds, 0);
  EXPECT_EQ(g->productive_seconds, 107);
}

}  // namespace
}  // namespace lockstep::controller
