// Issue 45 item 2 against the real apiserver: a job whose pod cannot pull its image says so within
// seconds (status.message, the StartupFailing condition, the STATE column of `kubectl get tj`
// and `-o wide`), and after
// spec.runPolicy.startupTimeoutSeconds the attempt ends per the failure policy with that reason.
// The test plays the kubelet: it writes the container's waiting state through the pod's status
// subresource before binding the pod, with a pod IP, so kwok (whose ready stage takes only pods
// without one) leaves that pod as written.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <iostream>

#include "operator/api/time.h"
#include "tests/integration/controller/fixture.h"
#include "tests/integration/crd/kubectl.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// What a kubelet writes for a container it cannot start (pod Pending, container waiting).
Status WriteWaiting(kube::RestClient& client, const std::string& ns, const std::string& pod,
                    const std::string& reason, const std::string& message) {
  const json patch = {
      {"status",
       {{"phase", "Pending"},
        {"podIP", "10.244.254.7"},
        {"podIPs", json::array({{{"ip", "10.244.254.7"}}})},
        {"containerStatuses",
         json::array({{{"name", "trainer"},
                       {"ready", false},
                       {"restartCount", 0},
                       {"image", "lockstep/missing:none"},
                       {"imageID", ""},
                       {"state", {{"waiting", {{"reason", reason}, {"message", message}}}}}}})}}}};
  return client.MergePatch(kube::resources::Pods(), ns, pod, patch, "status").status();
}

// Short enough for a test of a few seconds, long enough that the waiting state is seen (and
// `kubectl get` run) well before the attempt ends.
constexpr int kTimeout = 4;

const json* Condition(const json& job, const std::string& type) {
  const json::json_pointer conditions("/status/conditions");
  if (!job.contains(conditions) || !job[conditions].is_array()) return nullptr;
  for (const json& c : job[conditions]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

TEST_F(OperatorTest, APodThatCannotPullItsImageIsNamedAtOnceAndEndsTheAttemptAfterItsTimeout) {
  CreateJob(MakeJob("pull", 2, [](json& j) {
    j["spec"]["runPolicy"] = {{"startupTimeoutSeconds", kTimeout}};
    j["spec"]["failurePolicy"]["maxRestarts"] = 1;
  }));
  ASSERT_TRUE(WaitForPods("pull", 2));
  const std::string pull_error =
      "failed to pull and unpack image \"lockstep/missing:none\": not found";
  const auto written = std::chrono::steady_clock::now();
  ASSERT_TRUE(WriteWaiting(client(), ns(), "pull-worker-1", "ErrImagePull", pull_error).ok());
  ASSERT_TRUE(BindJobPods(client(), ns(), "pull").ok());

  const std::string said = "pull-worker-1: ErrImagePull: " + pull_error + " (container trainer)";
  StatusOr<json> shown = WaitForJob(
      client(), ns(), "pull",
      [&](const json& j) {
        const json* c = Condition(j, "StartupFailing");
        return j.value("/status/message"_json_pointer, "") == said && c != nullptr &&
               c->value("status", "") == "True" && c->value("message", "") == said;
      },
      seconds(10));
  ASSERT_TRUE(shown.ok()) << shown.status();
  std::cout << "[startup] status.message and StartupFailing named the pod "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - written).count()
            << " s after the waiting state was written\n";
  EXPECT_EQ((*shown)["status"]["reason"], "ErrImagePull");
  EXPECT_EQ(ConditionReason(*shown, "StartupFailing"), "ErrImagePull");
  const std::string since = (*Condition(*shown, "StartupFailing"))["lastTransitionTime"];

  // The default table says it too: STATE is the waiting reason while the job cannot start.
  const crdtest::KubectlResult table = crdtest::Kubectl({"get", "tj", "pull", "-n", ns()});
  ASSERT_TRUE(table.ok()) << table.output;
  EXPECT_THAT(table.output,
              ::testing::ContainsRegex("NAME +STATE +WORKERS[^\n]*\n"
                                       "pull +ErrImagePull +[0-9]+/2 "))
      << table.output;
  const crdtest::KubectlResult wide =
      crdtest::Kubectl({"get", "tj", "pull", "-n", ns(), "-o", "wide"});
  ASSERT_TRUE(wide.ok()) << wide.output;
  EXPECT_THAT(wide.output,
              ::testing::ContainsRegex("STARTUP +REASON +TEMPLATE\n"
                                       "pull +.* ErrImagePull +ErrImagePull *\n"))
      << wide.output;

  // maxRestarts 1: the timeout restarts the gang as attempt 1, a failure of the job's own.
  StatusOr<json> restarted = WaitForJob(
      client(), ns(), "pull",
      [](const json& j) { return j.value("/status/attempt"_json_pointer, 0) == 1; },
      seconds(kTimeout + 15));
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  const json& status = (*restarted)["status"];
  const json last = status.value("lastRestart", json::object());
  EXPECT_EQ(last.value("reason", ""), "ErrImagePull") << last.dump();
  EXPECT_NE(last.value("message", "").find(said), std::string::npos) << last.dump();
  EXPECT_NE(last.value("message", "").find("startupTimeoutSeconds"), std::string::npos)
      << last.dump();
  EXPECT_EQ(status.value("/restarts/failures"_json_pointer, -1), 1);
  // Not before the timeout: both times are the API's, to the second.
  const auto from = api::ParseTime(since);
  const auto to = api::ParseTime(last.value("time", ""));
  ASSERT_TRUE(from.ok() && to.ok()) << since << " " << last.dump();
  EXPECT_GE(*to - *from, seconds(kTimeout)) << since << " " << last.dump();
  // The next attempt's pods start their own timer.
  EXPECT_EQ(Condition(*restarted, "StartupFailing"), nullptr) << status.dump();
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        const std::vector<std::string> reasons = EventReasons(client(), ns(), "pull");
        return std::find(reasons.begin(), reasons.end(), "StartupFailing") != reasons.end();
      },
      seconds(10)));
}

}  // namespace
}  // namespace lockstep::controller::testing
