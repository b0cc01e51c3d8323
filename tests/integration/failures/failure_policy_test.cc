// Issue 6, policy: a FailJob rule fails the job at once; retryable exit codes restart the gang
// until maxRestarts, then the job fails with MaxRestartsExceeded; disruptions (eviction, node
// loss) count apart and do not consume maxRestarts but are bounded by maxDisruptions; the
// backoff between attempts is observed and bounded.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include "tests/integration/controller/operator_env.h"
#include "tests/integration/failures/failures_env.h"

namespace lockstep::failures::testing {
namespace {

using controller::testing::ConditionReason;
using controller::testing::ConditionStatus;
using nlohmann::json;
using std::chrono::seconds;

constexpr int kWorkers = 2;
// The backoff test: 1 s doubling to 4 s over five restarts.
constexpr int kInitial = 1, kMax = 4, kRestarts = 5;

class FailurePolicyTest : public FailuresTest {
 protected:
  // Waits for `attempt` to run whole; the name of one of its pods ("" on timeout).
  std::string RunningPod(const std::string& job, int attempt) {
    EXPECT_TRUE(WaitRunningAttempt(job, attempt, kWorkers, seconds(60)))
        << "attempt " << attempt
        << " never ran; job: " << (GetJob(job).ok() ? GetJob(job)->dump().substr(0, 2000) : "?")
        << "\npods: " << json(Pods(job)).dump().substr(0, 2000);
    const std::vector<json> pods = RunningAttempt(job, attempt, kWorkers);
    return pods.empty() ? "" : pods.front()["metadata"]["name"].get<std::string>();
  }

  StatusOr<json> WaitState(const std::string& job, const std::string& state,
                           seconds timeout = seconds(20)) {
    return WaitForJob(
        job, [&](const json& j) { return State(j) == state; }, timeout);
  }
};

json FailJobOn42() {
  return json::array({{{"name", "bad-config"},
                       {"action", "FailJob"},
                       {"onExitCodes", {{"operator", "In"}, {"values", {42}}}}}});
}

TEST_F(FailurePolicyTest, ExitCodeMatchingAFailJobRuleFailsTheJobAtOnceWithTheCode) {
  CreateNodes(kWorkers);
  CreateJob(MakeJob("failjob", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["rules"] = FailJobOn42();
    j["spec"]["failurePolicy"]["maxRestarts"] = 5;  // a rule wins over the budget
  }));
  const std::string pod = RunningPod("failjob", 0);
  ASSERT_FALSE(pod.empty());
  const Clock::time_point failed_at = Clock::now();
  FailPod(pod, 42);
  StatusOr<json> failed = WaitState("failjob", "Failed", seconds(10));
  ASSERT_TRUE(failed.ok()) << failed.status();
  std::cout << "[failjob] Failed " << SecondsBetween(failed_at, Clock::now())
            << " s after the exit code was written\n";
  EXPECT_EQ(ConditionStatus(*failed, "Failed"), "True");
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "FailJobRule");
  std::string message;
  for (const json& c : (*failed)["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "Failed") message = c.value("message", "");
  }
  EXPECT_NE(message.find("42"), std::string::npos) << message;
  EXPECT_EQ(Attempt(*failed), 0) << "a FailJob rule must not restart";
  EXPECT_EQ((*failed)["status"].value("/restarts/failures"_json_pointer, 0), 0);
  EXPECT_TRUE(kube::testing::WaitFor([&] { return !FindEvent("failjob", "FailJobRule").is_null(); },
                                     seconds(10)))
      << json(JobEvents("failjob")).dump().substr(0, 2000);
}

TEST_F(FailurePolicyTest, RetryableFailureRestartsUntilMaxRestartsThenFails) {
  CreateNodes(kWorkers);
  CreateJob(MakeJob("retry", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["rules"] = FailJobOn42();  // exit code 1 does not match
    j["spec"]["failurePolicy"]["maxRestarts"] = 2;
  }));
  for (int attempt = 0; attempt <= 2; ++attempt) {
    const std::string pod = RunningPod("retry", attempt);
    ASSERT_FALSE(pod.empty());
    FailPod(pod, 1);
    if (attempt < 2) {
      StatusOr<json> restarted = WaitForJob(
          "retry", [&](const json& j) { return Attempt(j) == attempt + 1; }, seconds(15));
      ASSERT_TRUE(restarted.ok()) << restarted.status();
      const json& status = (*restarted)["status"];
      EXPECT_EQ(status.value("/restarts/failures"_json_pointer, -1), attempt + 1);
      EXPECT_EQ(status.value("/restarts/disruptions"_json_pointer, -1), 0);
      const json last = status.value("lastRestart", json::object());
      EXPECT_NE(last.value("message", "").find(pod), std::string::npos) << last.dump();
      EXPECT_NE(last.value("message", "").find("1"), std::string::npos) << last.dump();
      EXPECT_EQ(last.value("mode", ""), "Recreate") << last.dump();
    }
  }
  StatusOr<json> failed = WaitState("retry", "Failed", seconds(15));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "MaxRestartsExceeded");
  EXPECT_EQ(Attempt(*failed), 2) << "no attempt beyond maxRestarts";
  EXPECT_EQ((*failed)["status"].value("/restarts/failures"_json_pointer, -1), 2);
  EXPECT_GE(Metric("lockstep_restarts_total", {{"namespace", ns()}}), 2);
}

TEST_F(FailurePolicyTest, DisruptionsDoNotConsumeMaxRestarts) {
  CreateNodes(kWorkers + 1);
  CreateJob(MakeJob("disrupt", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["maxRestarts"] = 0;  // any failure of the job's own is fatal
    j["spec"]["failurePolicy"]["maxDisruptions"] = 3;
    // The pods tolerate the test's NoExecute taint for a while, so the taint-eviction controller
    // does not delete the tainted node's pod in the same instant the operator sees the node lost:
    // a pod already gone when its pass runs is no evidence of a lost node, and that attempt is
    // refilled rather than restarted (CI saw it once with gangs created placed, which run
    // sooner). This test counts disruptions; the operator's verdict ignores tolerations.
    j["spec"]["template"]["spec"]["tolerations"] = json::array(
        {{{"key", "lockstep.dev/test-fault"}, {"operator", "Exists"}, {"effect", "NoExecute"},
          {"tolerationSeconds", 60}}});
  }));
  // Two evictions (DisruptionTarget=True) and one lost node (NoExecute taint): three restarts.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string pod = RunningPod("disrupt", attempt);
    ASSERT_FALSE(pod.empty());
    if (attempt < 2) {
      DisruptPod(pod);
    } else {
      StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), pod);
      ASSERT_TRUE(p.ok());
      TaintNoExecute((*p)["spec"]["nodeName"]);
    }
    StatusOr<json> restarted = WaitForJob(
        "disrupt", [&](const json& j) { return Attempt(j) == attempt + 1; }, seconds(20));
    ASSERT_TRUE(restarted.ok()) << restarted.status();
    EXPECT_EQ((*restarted)["status"].value("/restarts/failures"_json_pointer, -1), 0);
    EXPECT_EQ((*restarted)["status"].value("/restarts/disruptions"_json_pointer, -1), attempt + 1);
    EXPECT_NE(State(*restarted), "Failed");
  }
  ASSERT_FALSE(RunningPod("disrupt", 3).empty());
  StatusOr<json> running = WaitState("disrupt", "Running");
  ASSERT_TRUE(running.ok()) << running.status();
  // The job's own failure still counts against maxRestarts = 0.
  FailPod(RunningPod("disrupt", 3), 1);
  StatusOr<json> failed = WaitState("disrupt", "Failed", seconds(15));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "MaxRestartsExceeded");
  EXPECT_EQ((*failed)["status"].value("/restarts/disruptions"_json_pointer, -1), 3);
}

// Issue 18, hole 7 ("attempt 3 never ran; pods: []"): the binding of one pod of a restarted
// gang is refused, the scheduler undoes the gang (deletes its bound pods), and the attempt must
// still run once binding works again. The refusal is injected, not raced for: an admission
// policy refuses every binding of <job>-worker-1 in this namespace (422, like the 409 of a pod
// deleted mid-bind, so the undo leaves that pod alone) until the test removes it.
class RefusedBinding {
 public:
  RefusedBinding(const std::string& ns, const std::string& pod) : name_("refuse-bind-" + ns) {
    const nlohmann::json policy = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "ValidatingAdmissionPolicy"},
        {"metadata", {{"name", name_}}},
        {"spec",
         {{"failurePolicy", "Fail"},
          {"matchConstraints",
           {{"namespaceSelector",
             {{"matchLabels", {{"kubernetes.io/metadata.name", ns}}}}},
            {"resourceRules",
             json::array({{{"apiGroups", {""}},
                           {"apiVersions", {"v1"}},
                           {"operations", {"CREATE"}},
                           {"resources", {"pods/binding", "pods"}}}})}}},
          // The pod's create with spec.nodeName too (a gang created placed, issue 16): the
          // placed create is undone, and the binding path, the one this test is about, refused.
          {"validations",
           json::array({{{"expression", "object.metadata.name != '" + pod +
                                            "' || (object.kind == 'Pod' && "
                                            "!has(object.spec.nodeName))"},
                         {"message", "binding refused by the test (issue 18, hole 7)"},
                         {"reason", "Invalid"}}})}}}};
    const nlohmann::json binding = {
        {"apiVersion", "admissionregistration.k8s.io/v1"},
        {"kind", "ValidatingAdmissionPolicyBinding"},
        {"metadata", {{"name", name_}}},
        {"spec", {{"policyName", name_}, {"validationActions", {"Deny"}}}}};
    Apply(policy);
    Apply(binding);
  }
  ~RefusedBinding() { Lift(); }
  void Lift() {
    if (lifted_) return;
    lifted_ = true;
    controller::testing::Kubectl("delete validatingadmissionpolicybinding " + name_ +
                                 " --ignore-not-found >/dev/null");
    controller::testing::Kubectl("delete validatingadmissionpolicy " + name_ +
                                 " --ignore-not-found >/dev/null");
  }

 private:
  static void Apply(const nlohmann::json& object) {
    const std::string file = "/tmp/lockstep-refuse-bind-" + kube::testing::RandomSuffix() + ".json";
    std::ofstream(file) << object.dump();
    EXPECT_EQ(controller::testing::Kubectl("apply --server-side -f " + file + " >/dev/null"), 0);
    std::remove(file.c_str());
  }
  std::string name_;
  bool lifted_ = false;
};

TEST_F(FailurePolicyTest, ARestartedGangWhoseBindIsRefusedRunsOnceBindingWorks) {
  CreateNodes(kWorkers + 1);
  CreateJob(MakeJob("refused", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["maxDisruptions"] = 3;
  }));
  const std::string pod = RunningPod("refused", 0);
  ASSERT_FALSE(pod.empty());
  RefusedBinding refusal(ns(), "refused-worker-1");
  // The policy takes effect when the apiserver's admission has loaded it; give it a moment
  // before the restart's binds.
  std::this_thread::sleep_for(std::chrono::seconds(2));
  StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), pod);
  ASSERT_TRUE(p.ok());
  TaintNoExecute((*p)["spec"]["nodeName"]);
  // The gang is first created placed (issue 16); that create is undone ("created placed, but
  // ..."), then the binding path runs. Lifted only once a binding was refused: the undo of a
  // partly bound gang is what this test is about (lifted at the first BindFailed, the binding
  // path had not always run yet).
  json refused_bind;
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        for (json& e : JobEvents("refused")) {
          if (e.value("reason", "") == "BindFailed" &&
              e.value("message", "").rfind("binding failed", 0) == 0) {
            refused_bind = std::move(e);
            return true;
          }
        }
        return false;
      },
      seconds(30)))
      << "no refused binding; events: " << json(JobEvents("refused")).dump().substr(0, 2000);
  std::cout << "[refused bind] " << refused_bind.value("message", "") << "\n";
  refusal.Lift();
  StatusOr<json> job = GetJob("refused");
  ASSERT_TRUE(job.ok());
  const int attempt = Attempt(*job);
  EXPECT_GE(attempt, 1);
  EXPECT_FALSE(RunningPod("refused", attempt).empty());
  StatusOr<json> running = WaitState("refused", "Running", seconds(30));
  ASSERT_TRUE(running.ok()) << running.status();
}

TEST_F(FailurePolicyTest, DisruptionsBeyondMaxDisruptionsFailTheJob) {
  CreateNodes(kWorkers);
  CreateJob(MakeJob("fragile", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["maxRestarts"] = 10;
    j["spec"]["failurePolicy"]["maxDisruptions"] = 1;
  }));
  DisruptPod(RunningPod("fragile", 0));
  const std::string pod = RunningPod("fragile", 1);
  ASSERT_FALSE(pod.empty());
  DisruptPod(pod);
  StatusOr<json> failed = WaitState("fragile", "Failed", seconds(15));
  ASSERT_TRUE(failed.ok()) << failed.status();
  std::cout << "[maxDisruptions] Failed reason: " << ConditionReason(*failed, "Failed") << "\n";
  EXPECT_FALSE(ConditionReason(*failed, "Failed").empty());
  EXPECT_NE(ConditionReason(*failed, "Failed"), "MaxRestartsExceeded")
      << "disruptions must be reported as such, not as the job's own failures";
  EXPECT_EQ((*failed)["status"].value("/restarts/failures"_json_pointer, -1), 0);
  EXPECT_EQ(Attempt(*failed), 1);
}

// initialSeconds 1, maxSeconds 4: the first restart after a healthy run waits 0 s, later ones
// double up to the cap and stay there. Each wait is seen from outside: from the moment the
// test writes the failure to the moment the next attempt's pods exist.
TEST_F(FailurePolicyTest, BackoffBetweenAttemptsIsObservedDoublesAndIsBounded) {
  CreateNodes(kWorkers);
  CreateJob(MakeJob("backoff", kWorkers, [](json& j) {
    j["spec"]["failurePolicy"]["maxRestarts"] = 10;
    j["spec"]["failurePolicy"]["backoff"] = {
        {"initialSeconds", kInitial}, {"maxSeconds", kMax}, {"resetAfterSeconds", 600}};
  }));
  std::vector<int> declared;
  std::vector<double> observed;
  for (int attempt = 0; attempt < kRestarts; ++attempt) {
    const std::string pod = RunningPod("backoff", attempt);
    ASSERT_FALSE(pod.empty());
    const Clock::time_point failed_at = Clock::now();
    FailPod(pod, 1);
    std::optional<Clock::time_point> created;
    ASSERT_TRUE(kube::testing::WaitFor(
        [&] {
          for (const json& p : Pods("backoff")) {
            if (p["metadata"]["labels"].value("lockstep.dev/attempt", "") ==
                std::to_string(attempt + 1)) {
              created = Clock::now();
              return true;
            }
          }
          return false;
        },
        seconds(kMax + 20), std::chrono::milliseconds(50)))
        << "no pod of attempt " << attempt + 1;
    observed.push_back(SecondsBetween(failed_at, *created));
    StatusOr<json> job = GetJob("backoff");
    ASSERT_TRUE(job.ok());
    const json last = (*job)["status"].value("lastRestart", json::object());
    EXPECT_EQ(last.value("attempt", -1), attempt + 1) << last.dump();
    declared.push_back(last.value("backoffSeconds", -1));
    EXPECT_EQ((*job)["status"].value("/restarts/consecutive"_json_pointer, -1), attempt + 1);
  }
  for (int i = 0; i < kRestarts; ++i) {
    std::cout << "[backoff] restart " << i + 1 << ": lastRestart.backoffSeconds=" << declared[i]
              << ", failure -> next attempt's pods " << observed[i] << " s\n";
  }
  // docs/failures.md: a failure restart waits initialSeconds * 2^k, k = restarts.consecutive.
  EXPECT_EQ(declared[0], kInitial) << "the first failure restart waits initialSeconds";
  for (int i = 1; i < kRestarts; ++i) {
    EXPECT_LE(declared[i], kMax) << "bounded by maxSeconds";
    EXPECT_EQ(declared[i], std::min(kMax, 2 * declared[i - 1])) << "doubles";
  }
  EXPECT_EQ(declared[kRestarts - 1], kMax) << "reaches the cap";
  EXPECT_EQ(declared[kRestarts - 2], kMax) << "and stays there";
  for (int i = 0; i < kRestarts; ++i) {
    // Observed: at least the declared wait (timestamps are whole seconds on the server, the test
    // clock is exact), at most the wait plus the detection and re-creation overhead.
    EXPECT_GE(observed[i], declared[i] - 0.2) << "restart " << i + 1 << " did not wait";
    EXPECT_LE(observed[i], declared[i] + 5.0) << "restart " << i + 1 << " waited too long";
  }
}

}  // namespace
}  // namespace lockstep::failures::testing
