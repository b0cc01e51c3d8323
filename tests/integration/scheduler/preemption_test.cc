// Gang-aware priority preemption against the real apiserver and kwok nodes (docs/scheduler.md,
// "Preemption"). No controller runs here: the test plays it (creates the pods), so a victim's
// pods, once deleted, stay gone, and what the scheduler did is all there is to see.

#include <atomic>
#include <thread>

#include "operator/api/children.h"
#include "tests/integration/scheduler/scheduler_env.h"

namespace lockstep::scheduler::testing {
namespace {

using kube::testing::WaitFor;
using nlohmann::json;
using std::chrono::seconds;

// `replicas` pods of 8 GPUs (one whole test node each) under PriorityClass `priority_class`.
JobSpec Spec(int replicas, const std::string& priority_class) {
  JobSpec spec;
  spec.replicas = replicas;
  spec.gpus_per_pod = 8;
  spec.priority_class = priority_class;
  return spec;
}

// A high-priority gang that does not fit evicts the running low-priority gang: all of its pods,
// never fewer; the job reads Preempted naming the preemptor.
TEST_F(SchedulerTest, HigherPriorityGangPreemptsAWholeLowerGang) {
  CreateNodes(std::vector<NodeSpec>(4));  // 32 GPUs
  const std::string low_class = CreatePriorityClass("low", 10);
  const std::string high_class = CreatePriorityClass("high", 1000);
  StartScheduler();
  const JobSpec low = Spec(4, low_class);
  CreateJob("low", low);
  ASSERT_TRUE(WaitAllBound("low", 4, seconds(60)));

  const JobSpec high = Spec(2, high_class);
  CreateJob("high", high);
  ASSERT_TRUE(WaitAllBound("high", 2, seconds(60)));
  // The preemptor needed two nodes; the victim loses all four pods, never only the two in the way.
  EXPECT_TRUE(WaitFor([&] { return Placement("low").empty(); }, seconds(60)))
      << "the victim gang was not evicted whole: " << Placement("low").size() << " pods left";
  EXPECT_EQ(scheduler_->gangs_preempted(), 1);

  ASSERT_TRUE(WaitFor([&] { return Condition("low", "Preempted").value("status", "") == "True"; },
                      seconds(30)));
  const json preempted = Condition("low", "Preempted");
  EXPECT_EQ(preempted.value("reason", ""), "PreemptedByHigherPriority");
  EXPECT_NE(preempted.value("message", "").find("preempted by " + ns() + "/high"),
            std::string::npos)
      << preempted.dump();
}

// preemptionPolicy: Never waits however high its priority.
TEST_F(SchedulerTest, PreemptionPolicyNeverPreemptsNothing) {
  CreateNodes(std::vector<NodeSpec>(2));
  const std::string low_class = CreatePriorityClass("low", 10);
  const std::string polite = CreatePriorityClass("polite", 1000, /*never_preempts=*/true);
  StartScheduler();
  const JobSpec low = Spec(2, low_class);
  CreateJob("low", low);
  ASSERT_TRUE(WaitAllBound("low", 2, seconds(60)));
  const JobSpec high = Spec(1, polite);
  CreateJob("polite", high);
  ASSERT_TRUE(WaitUnplacedThroughCycles("polite"));
  EXPECT_EQ(BoundCount("low"), 2);
  EXPECT_EQ(BoundCount("polite"), 0);
  EXPECT_EQ(scheduler_->gangs_preempted(), 0);
  EXPECT_TRUE(Condition("low", "Preempted").empty());
}

// Issue 44: a job cannot buy more priority than its pods carry. This one names "high" in
// spec.priorityClassName, but its pods were admitted under "low": it ranks as its pods do and
// preempts nothing (before, the scheduler read the job's field and evicted "low").
TEST_F(SchedulerTest, AJobClaimingAHighClassWithLowPriorityPodsPreemptsNothing) {
  CreateNodes(std::vector<NodeSpec>(2));
  const std::string low_class = CreatePriorityClass("low", 10);
  const std::string high_class = CreatePriorityClass("high", 1000);
  StartScheduler();
  const JobSpec low = Spec(2, low_class);
  CreateJob("low", low);
  ASSERT_TRUE(WaitAllBound("low", 2, seconds(60)));
  JobSpec claims = Spec(1, high_class);
  claims.pod_priority_class = low_class;
  CreateJob("claims", claims);
  ASSERT_TRUE(WaitUnplacedThroughCycles("claims"));
  EXPECT_EQ(BoundCount("low"), 2);
  EXPECT_EQ(BoundCount("claims"), 0);
  EXPECT_EQ(scheduler_->gangs_preempted(), 0);
  EXPECT_TRUE(Condition("low", "Preempted").empty());
}

// Equal priority never preempts: the newcomer waits.
TEST_F(SchedulerTest, EqualPriorityNeverPreempts) {
  CreateNodes(std::vector<NodeSpec>(2));
  const std::string same = CreatePriorityClass("same", 500);
  StartScheduler();
  const JobSpec first = Spec(2, same);
  CreateJob("first", first);
  ASSERT_TRUE(WaitAllBound("first", 2, seconds(60)));
  const JobSpec second = Spec(1, same);
  CreateJob("second", second);
  ASSERT_TRUE(WaitUnplacedThroughCycles("second"));
  EXPECT_EQ(BoundCount("first"), 2);
  EXPECT_EQ(BoundCount("second"), 0);
  EXPECT_EQ(scheduler_->gangs_preempted(), 0);
}

// While the victim's pods go one by one, a smaller gang of lower priority than the preemptor
// would fit in the first node freed: the capacity is held, so it never starts there.
TEST_F(SchedulerTest, NoLowerGangStartsInTheFreedCapacityAheadOfThePreemptor) {
  CreateNodes(std::vector<NodeSpec>(4));
  const std::string low_class = CreatePriorityClass("low", 10);
  const std::string high_class = CreatePriorityClass("high", 1000);
  StartScheduler();
  const JobSpec victim = Spec(4, low_class);
  CreateJob("victim", victim);
  ASSERT_TRUE(WaitAllBound("victim", 4, seconds(60)));
  // The small mid-priority gang waits first (nothing is free, and it may not preempt: its
  // class says Never), then the preemptor arrives.
  const std::string mid_never = CreatePriorityClass("mid-never", 500, /*never_preempts=*/true);
  const JobSpec small = Spec(1, mid_never);
  CreateJob("small", small);
  ASSERT_TRUE(WaitFor(
      [&] { return ScheduledCondition("small").value("reason", "") == "InsufficientResources"; },
      seconds(30)));
  const JobSpec big = Spec(4, high_class);
  CreateJob("big", big);

  std::atomic<bool> stop{false};
  std::atomic<bool> small_jumped{false};
  std::thread watcher([&] {
    while (!stop) {
      if (BoundCount("small") > 0 && BoundCount("big") < 4) small_jumped = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const bool big_bound = WaitAllBound("big", 4, seconds(60));
  stop = true;
  watcher.join();
  ASSERT_TRUE(big_bound);
  EXPECT_FALSE(small_jumped) << "a lower-priority gang started in capacity freed for big";
  EXPECT_EQ(BoundCount("small"), 0);
  EXPECT_EQ(scheduler_->gangs_preempted(), 1);
}

// What the controller needs to count a preemption as a disruption: every victim pod carries
// DisruptionTarget=True (reason PreemptionByScheduler, naming the preemptor) when it goes. kwok
// removes a deleted pod at once, so the test reads the pods' last states from a watch: the
// DELETED event carries the object as it was when it went.
TEST_F(SchedulerTest, EveryVictimPodIsMarkedDisruptedBeforeItGoes) {
  CreateNodes(std::vector<NodeSpec>(2));
  const std::string low_class = CreatePriorityClass("low", 10);
  const std::string high_class = CreatePriorityClass("high", 1000);
  StartScheduler();
  CreateJob("low", Spec(2, low_class));
  ASSERT_TRUE(WaitAllBound("low", 2, seconds(60)));
  kube::ListOptions list_options;
  list_options.label_selector = std::string(api::kLabelJobName) + "=low";
  StatusOr<kube::ListResult> list = client().List(kube::resources::Pods(), ns(), list_options);
  ASSERT_TRUE(list.ok()) << list.status().ToString();

  std::map<std::string, json> gone;  // pod name -> its object in the DELETED event
  std::atomic<bool> cancel{false};
  std::thread watcher([&] {
    kube::WatchOptions options;
    options.label_selector = list_options.label_selector;
    options.resource_version = list->resource_version;
    options.timeout_seconds = 60;
    options.cancel = &cancel;
    client()
        .Watch(kube::resources::Pods(), ns(), options,
               [&](kube::WatchEvent&& event) {
                 if (event.type == kube::WatchEventType::kDeleted) {
                   gone[event.object["metadata"]["name"].get<std::string>()] = event.object;
                 }
                 return gone.size() < 2;
               })
        .IgnoreError();
  });
  CreateJob("high", Spec(2, high_class));
  EXPECT_TRUE(WaitAllBound("high", 2, seconds(60)));
  EXPECT_TRUE(WaitFor([&] { return Placement("low").empty(); }, seconds(60)));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the last event on its way
  cancel = true;
  watcher.join();
  ASSERT_EQ(gone.size(), 2u);
  for (const auto& [name, pod] : gone) {
    json mark;
    for (const json& c : pod.value("/status/conditions"_json_pointer, json::array())) {
      if (c.value("type", "") == "DisruptionTarget") mark = c;
    }
    EXPECT_EQ(mark.value("status", ""), "True") << name << ": " << pod.dump();
    EXPECT_EQ(mark.value("reason", ""), "PreemptionByScheduler") << name;
    EXPECT_NE(mark.value("message", "").find("preempted by " + ns() + "/high"), std::string::npos)
        << name << ": " << mark.dump();
  }
}

}  // namespace
}  // namespace lockstep::scheduler::testing
