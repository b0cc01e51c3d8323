// ConditionWriter (operator/scheduler/cycle/condition_writer.h) over a scripted transport: when
// it writes, what one apply carries, the order of decisions, and the event after a change. How
// the apiserver merges the apply with the controller's status writes is covered against the real
// one in tests/integration/scheduler.
#include "operator/scheduler/cycle/condition_writer.h"

#include <gtest/gtest.h>

#include "common/rfc3339.h"
#include "tests/testing/fake_transport.h"
#include "tests/unit/scheduler/cycle_builders.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;
using testing::Job;
using testing::JobJson;

constexpr char kStatusPath[] = "/apis/lockstep.dev/v1alpha1/namespaces/ns/trainingjobs/job/status";

const ScheduledCondition kWaiting{false, "InsufficientResources",
                                  "needs 16 nvidia.com/gpu; 8 free"};
const ScheduledCondition kPlaced{true, "GangPlaced", "placed 2 pods on 2 nodes in rack a"};

// The status writes' client: the scheduler's field manager.
kube::RestOptions SchedulerApplies() {
  kube::RestOptions options = ::lockstep::testing::OneTryUnlimited();
  options.field_manager = "lockstep-scheduler";
  return options;
}

class ConditionWriterTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  std::vector<json> Applies() const {
    std::vector<json> out;
    for (const kube::Request& r : transport_->RequestsTo("PATCH", kStatusPath)) {
      EXPECT_NE(r.path.find("fieldManager=lockstep-scheduler&force=true"), std::string::npos);
      out.push_back(json::parse(r.body)["status"]);
    }
    return out;
  }

  kube::RestClient status_client_{transport_, SchedulerApplies()};
  kube::EventRecorder events_{client_, kube::EventRecorderOptions{}, clock_};
  ConditionWriter writer_{status_client_, events_, clock_};
};

TEST_F(ConditionWriterTest, AChangedConditionIsAppliedOnceAndAWaitIsAnEvent) {
  const JobPtr job = Job(JobJson(2, 0, 8));
  ASSERT_TRUE(writer_.Write(*job, kWaiting, 1).ok());
  ASSERT_TRUE(writer_.Write(*job, kWaiting, 2).ok());  // the same words: nothing to write
  const std::vector<json> applies = Applies();
  ASSERT_EQ(applies.size(), 1u);
  const json& c = applies[0]["conditions"][0];
  EXPECT_EQ(c["type"], "Scheduled");
  EXPECT_EQ(c["status"], "False");
  EXPECT_EQ(c["reason"], "InsufficientResources");
  EXPECT_EQ(c["message"], kWaiting.message);
  EXPECT_EQ(applies[0]["conditions"].size(), 1u);  // only the scheduler's own entry
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"Unschedulable"});

  ASSERT_TRUE(writer_.Write(*job, kPlaced, 3).ok());
  ASSERT_EQ(Applies().size(), 2u);
  EXPECT_EQ(Applies()[1]["conditions"][0]["status"], "True");
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"Unschedulable"});  // placing is no news
}

TEST_F(ConditionWriterTest, AConditionTheCacheAlreadyShowsIsNotWritten) {
  const JobPtr job = Job(JobJson(
      2, 0, 8,
      {{"conditions",
        {{{"type", "Scheduled"}, {"status", "True"}, {"reason", kPlaced.reason},
          {"message", kPlaced.message}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}));
  ASSERT_TRUE(writer_.Write(*job, kPlaced, 1).ok());
  EXPECT_TRUE(Applies().empty());
}

// Writes run on a pool: a decision older than one already taken is dropped.
TEST_F(ConditionWriterTest, AnOlderCyclesDecisionIsDropped) {
  const JobPtr job = Job(JobJson(2, 0, 8));
  ASSERT_TRUE(writer_.Write(*job, kWaiting, 5).ok());
  ASSERT_TRUE(writer_.Write(*job, kPlaced, 4).ok());
  ASSERT_EQ(Applies().size(), 1u);
  EXPECT_EQ(Applies()[0]["conditions"][0]["status"], "False");
}

// lastTransitionTime moves only when the status does (metav1 condition semantics).
TEST_F(ConditionWriterTest, TheTransitionTimeMovesOnlyWithTheStatus) {
  const JobPtr job = Job(JobJson(
      2, 0, 8,
      {{"conditions",
        {{{"type", "Scheduled"}, {"status", "False"}, {"reason", "Fragmented"},
          {"message", "old words"}, {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}));
  ASSERT_TRUE(writer_.Write(*job, kWaiting, 1).ok());
  ASSERT_TRUE(writer_.Write(*job, kPlaced, 2).ok());
  const std::vector<json> applies = Applies();
  ASSERT_EQ(applies.size(), 2u);
  EXPECT_EQ(applies[0]["conditions"][0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
  EXPECT_EQ(applies[1]["conditions"][0]["lastTransitionTime"], FormatTime(clock_.WallNow()));
}

// Server-side apply drops what its manager left out, so each apply carries both pieces.
TEST_F(ConditionWriterTest, CapacityAndTheConditionTravelTogether) {
  const JobPtr job = Job(JobJson(8, 4, 8));
  ASSERT_TRUE(writer_.Write(*job, kWaiting, 1).ok());
  ASSERT_TRUE(writer_.WriteCapacity(*job, 6).ok());
  ASSERT_TRUE(writer_.WriteCapacity(*job, 6).ok());  // unchanged: no write
  const std::vector<json> applies = Applies();
  ASSERT_EQ(applies.size(), 2u);
  EXPECT_EQ(applies[1]["capacity"]["feasibleReplicas"], 6);
  EXPECT_EQ(applies[1]["conditions"][0]["reason"], "InsufficientResources");
  ASSERT_TRUE(writer_.Write(*job, kPlaced, 2).ok());
  EXPECT_EQ(Applies()[2]["capacity"]["feasibleReplicas"], 6);
}

// The controller ignores a figure observed before the last restart, so the same count is written
// again for the new attempt, once.
TEST_F(ConditionWriterTest, TheSameCapacityFromBeforeTheLastRestartIsWrittenAgain) {
  const JobPtr before = Job(JobJson(8, 4, 8));
  ASSERT_TRUE(writer_.WriteCapacity(*before, 6).ok());
  ASSERT_EQ(Applies().size(), 1u);
  clock_.Advance(std::chrono::seconds(16));
  const JobPtr restarted = Job(JobJson(
      8, 4, 8,
      {{"capacity",
        {{"feasibleReplicas", 6},
         {"observedTime", FormatTime(clock_.WallNow() - std::chrono::seconds(16))}}},
       {"lastRestart",
        {{"time", FormatTime(clock_.WallNow())}, {"reason", "NodeLost"}, {"attempt", 1}}}}));
  ASSERT_TRUE(writer_.WriteCapacity(*restarted, 6).ok());
  ASSERT_TRUE(writer_.WriteCapacity(*restarted, 6).ok());  // now current: no write
  const std::vector<json> applies = Applies();
  ASSERT_EQ(applies.size(), 2u);
  EXPECT_EQ(applies[1]["capacity"]["feasibleReplicas"], 6);
  EXPECT_EQ(applies[1]["capacity"]["observedTime"], FormatTime(clock_.WallNow()));
}

TEST_F(ConditionWriterTest, AFailedApplyIsRetriedByTheNextWrite) {
  transport_->Push(ApiStatus(500, "InternalError", "etcd timeout"));
  const JobPtr job = Job(JobJson(2, 0, 8));
  EXPECT_FALSE(writer_.Write(*job, kWaiting, 1).ok());
  EXPECT_TRUE(writer_.Write(*job, kWaiting, 2).ok());
  EXPECT_EQ(Applies().size(), 2u);
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"Unschedulable"});  // once, after the write
}

// Preempted: written by the scheduler alone, carried with Scheduled in every apply (either one
// left out would be dropped by server-side apply), an Event naming the preemptor once, and
// Rescheduled (False) only after a preemption.
TEST_F(ConditionWriterTest, PreemptedTravelsWithScheduledAndIsAnEventOnce) {
  const JobPtr job = Job(JobJson(2, 0, 8));
  ASSERT_TRUE(writer_.WritePreempted(*job, false, "placed again").ok());  // never preempted
  EXPECT_TRUE(Applies().empty());
  ASSERT_TRUE(writer_.Write(*job, kPlaced, 1).ok());
  ASSERT_TRUE(writer_.WritePreempted(*job, true, "preempted by ns/high").ok());
  ASSERT_TRUE(writer_.WritePreempted(*job, true, "preempted by ns/high").ok());  // no news
  std::vector<json> applies = Applies();
  ASSERT_EQ(applies.size(), 2u);
  ASSERT_EQ(applies[1]["conditions"].size(), 2u);
  EXPECT_EQ(applies[1]["conditions"][0]["type"], "Scheduled");
  EXPECT_EQ(applies[1]["conditions"][1]["type"], "Preempted");
  EXPECT_EQ(applies[1]["conditions"][1]["status"], "True");
  EXPECT_EQ(applies[1]["conditions"][1]["reason"], "PreemptedByHigherPriority");
  EXPECT_EQ(applies[1]["conditions"][1]["message"], "preempted by ns/high");
  EXPECT_EQ(EventReasons(events_), std::vector<std::string>{"Preempted"});

  ASSERT_TRUE(writer_.Write(*job, kWaiting, 2).ok());
  applies = Applies();
  ASSERT_EQ(applies.size(), 3u);
  ASSERT_EQ(applies[2]["conditions"].size(), 2u);  // Scheduled changed; Preempted carried
  EXPECT_EQ(applies[2]["conditions"][1]["status"], "True");

  ASSERT_TRUE(writer_.WritePreempted(*job, false, "placed again").ok());
  applies = Applies();
  ASSERT_EQ(applies.size(), 4u);
  EXPECT_EQ(applies[3]["conditions"][1]["status"], "False");
  EXPECT_EQ(applies[3]["conditions"][1]["reason"], "Rescheduled");
}

}  // namespace
}  // namespace lockstep::scheduler
