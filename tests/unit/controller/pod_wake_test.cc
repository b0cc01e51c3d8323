// Which pod changes wake their job at once and which wait out the batch period
// (operator/controller/pod_wake.h): one row per state a pod can be seen in after a change.
#include "operator/controller/pod_wake.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using testing::Pod;

kube::ContainerStatus Container(const std::string& state, const std::string& reason = "",
                                int restarts = 0, std::optional<int32_t> exit_code = {}) {
  kube::ContainerStatus c;
  c.name = "trainer";
  c.state = state;
  c.reason = reason;
  c.restart_count = restarts;
  c.exit_code = exit_code;
  return c;
}

struct Row {
  std::string name;
  std::function<kube::Pod()> pod;
  bool urgent;
};

TEST(PodWakeTest, ProgressWaitsAndPossibleBadNewsWakesAtOnce) {
  const std::vector<Row> rows = {
      {"created, no phase yet", [] { return Pod("worker", 0, "", ""); }, false},
      {"pending, unbound", [] { return Pod("worker", 0, "Pending", ""); }, false},
      {"pending, bound, creating",
       [] {
         kube::Pod p = Pod("worker", 0, "Pending");
         p.container_statuses = {Container("waiting", "ContainerCreating")};
         return p;
       },
       false},
      {"pending, init container done, main initializing",
       [] {
         kube::Pod p = Pod("worker", 0, "Pending");
         p.init_container_statuses = {Container("terminated", "Completed", 0, 0)};
         p.container_statuses = {Container("waiting", "PodInitializing")};
         return p;
       },
       false},
      {"running", [] { return Pod("worker", 0, "Running"); }, false},
      {"running, container running",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.container_statuses = {Container("running")};
         return p;
       },
       false},
      {"being deleted", [] { return testing::Terminating(Pod("worker", 0, "Running")); }, true},
      {"failed", [] { return testing::FailedPod("worker", 0, 1); }, true},
      {"succeeded", [] { return Pod("worker", 0, "Succeeded"); }, true},
      {"unknown phase", [] { return Pod("worker", 0, "Unknown"); }, true},
      {"disruption target",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.conditions.push_back({"DisruptionTarget", "True", "EvictionByEvictionAPI", "", "", ""});
         return p;
       },
       true},
      {"disruption target false",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.conditions.push_back({"DisruptionTarget", "False", "", "", "", ""});
         return p;
       },
       false},
      {"running, a container restarted",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.container_statuses = {Container("running", "", 1)};
         return p;
       },
       true},
      {"running, a container terminated",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.container_statuses = {Container("running"), Container("terminated", "Error", 0, 1)};
         return p;
       },
       true},
      {"running, a container exited 0",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.container_statuses = {Container("terminated", "Completed", 0, 0)};
         return p;
       },
       true},
      {"crash loop",
       [] {
         kube::Pod p = Pod("worker", 0, "Running");
         p.container_statuses = {Container("waiting", "CrashLoopBackOff")};
         return p;
       },
       true},
      {"image pull back-off",
       [] {
         kube::Pod p = Pod("worker", 0, "Pending");
         p.container_statuses = {Container("waiting", "ImagePullBackOff")};
         return p;
       },
       true},
      {"init container failed",
       [] {
         kube::Pod p = Pod("worker", 0, "Pending");
         p.init_container_statuses = {Container("terminated", "Error", 0, 2)};
         return p;
       },
       true},
      {"init container restarting",
       [] {
         kube::Pod p = Pod("worker", 0, "Pending");
         p.init_container_statuses = {Container("waiting", "PodInitializing", 2)};
         return p;
       },
       true},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(PodChangeIsUrgent(row.pod()), row.urgent) << row.name;
  }
}

}  // namespace
}  // namespace lockstep::controller
