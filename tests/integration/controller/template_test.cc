// Templates (docs/api.md "Templates", operator/controller/template_resolve.h) against the real
// apiserver and the real operator: a job naming a template that does not exist waits with a
// condition and an event naming it and runs once it is created; a template edited while its job
// runs changes nothing of that job, not even its next attempt.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/integration/controller/fixture.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

const kube::ResourceRef kClusterTemplates{"lockstep.dev", "v1alpha1", "clustertrainingtemplates",
                                          false};
const kube::ResourceRef kTemplates{"lockstep.dev", "v1alpha1", "trainingtemplates", true};

json Template(const std::string& kind, const std::string& name, const std::string& image) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", kind},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"framework", "PyTorch"},
            {"template",
             {{"spec",
               {{"containers",
                 {{{"name", "trainer"},
                   {"image", image},
                   {"env", {{{"name", "NCCL_DEBUG"}, {"value", "WARN"}}}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}}}},
            {"failurePolicy",
             {{"restartMode", "Recreate"}, {"backoff", {{"initialSeconds", 0}, {"maxSeconds", 0}}}}}}}};
}

// What the job states: its template, its size, its command.
json TemplatedJob(const std::string& name, const std::string& kind, const std::string& tmpl) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"templateRef", {{"kind", kind}, {"name", tmpl}}},
            {"replicas", 2},
            {"template",
             {{"spec",
               {{"containers", {{{"name", "trainer"}, {"command", {"python", "train.py"}}}}}}}}}}}};
}

std::string TrainerImage(const json& pod) { return pod["spec"]["containers"][0]["image"]; }

bool HasEnv(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e.value("name", "") == name) return true;
  }
  return false;
}

TEST_F(OperatorTest, AMissingTemplateHoldsTheJobUntilItIsCreated) {
  const std::string tmpl = ns() + "-late";  // cluster-scoped: unique to this test
  CreateJob(TemplatedJob("late", "ClusterTrainingTemplate", tmpl));
  StatusOr<json> held = WaitForJob(client(), ns(), "late", [](const json& j) {
    return ConditionReason(j, "TemplateReady") == "TemplateNotFound";
  });
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(ConditionStatus(*held, "TemplateReady"), "False");
  EXPECT_EQ((*held)["status"]["state"], "Pending");
  const std::string message = (*held)["status"]["message"];
  EXPECT_NE(message.find("ClusterTrainingTemplate/" + tmpl), std::string::npos) << message;
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        const std::vector<std::string> r = EventReasons(client(), ns(), "late");
        return std::find(r.begin(), r.end(), "TemplateNotFound") != r.end();
      },
      seconds(10)));
  StatusOr<std::vector<json>> none = ListJobPods(client(), ns(), "late");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(client().Create(kClusterTemplates, "", Template("ClusterTrainingTemplate", tmpl,
                                                              "registry.test/pytorch:1")).ok());
  const bool pods = WaitForPods("late", 2);
  client().Delete(kClusterTemplates, "", tmpl).status().IgnoreError();
  ASSERT_TRUE(pods);
  StatusOr<std::vector<json>> created = ListJobPods(client(), ns(), "late");
  ASSERT_TRUE(created.ok());
  for (const json& pod : *created) {
    EXPECT_EQ(TrainerImage(pod), "registry.test/pytorch:1");
    EXPECT_TRUE(HasEnv(pod["spec"]["containers"][0], "NCCL_DEBUG"));
  }
  StatusOr<json> running = WaitForJob(client(), ns(), "late", [](const json& j) {
    return ConditionReason(j, "TemplateReady") == "Snapshotted";
  });
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ((*running)["status"]["resolvedTemplate"]["name"], tmpl);
  EXPECT_EQ((*running)["status"]["resolvedTemplate"]["kind"], "ClusterTrainingTemplate");
}

TEST_F(OperatorTest, EditingATemplateMidRunChangesNothingOfThatRun) {
  ASSERT_TRUE(client().Create(kTemplates, ns(), Template("TrainingTemplate", "team",
                                                         "registry.test/pytorch:1")).ok());
  CreateJob(TemplatedJob("steady", "TrainingTemplate", "team"));
  ASSERT_TRUE(WaitForPods("steady", 2));
  StatusOr<json> started = WaitForJob(client(), ns(), "steady", [](const json& j) {
    return j.contains("status") && j["status"].contains("resolvedTemplate");
  });
  ASSERT_TRUE(started.ok()) << started.status();
  const json snapshot = (*started)["status"]["resolvedTemplate"];
  ASSERT_TRUE(BindJobPods(client(), ns(), "steady").ok());
  ASSERT_TRUE(WaitForJob(client(), ns(), "steady", [](const json& j) {
    return j.contains("status") && j["status"].value("state", "") == "Running";
  }).ok());

  // The edit: a new image, and a failure policy that would fail the job at once.
  json patch = {{"spec",
                 {{"template",
                   {{"spec",
                     {{"containers",
                       {{{"name", "trainer"},
                         {"image", "registry.test/pytorch:2"},
                         {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}}}},
                  {"failurePolicy", {{"maxRestarts", 0}}}}}};
  ASSERT_TRUE(client().MergePatch(kTemplates, ns(), "team", patch).ok());

  // A failure now restarts the gang (the snapshot's maxRestarts, the default 3), and the next
  // attempt's pods are built from the snapshot too.
  ASSERT_TRUE(FinishPod(client(), ns(), "steady-worker-1", /*succeeded=*/false, 3).ok());
  StatusOr<json> restarted = WaitForJob(client(), ns(), "steady", [](const json& j) {
    return j.contains("status") && j["status"].value("attempt", 0) == 1;
  });
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  EXPECT_EQ((*restarted)["status"]["resolvedTemplate"], snapshot);
  EXPECT_NE((*restarted)["status"].value("state", ""), "Failed");
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        StatusOr<std::vector<json>> pods = ListJobPods(client(), ns(), "steady");
        if (!pods.ok() || pods->size() != 2) return false;
        for (const json& pod : *pods) {
          if (pod["metadata"]["labels"].value("lockstep.dev/attempt", "") != "1") return false;
        }
        return true;
      },
      seconds(30)));
  StatusOr<std::vector<json>> pods = ListJobPods(client(), ns(), "steady");
  ASSERT_TRUE(pods.ok());
  for (const json& pod : *pods) EXPECT_EQ(TrainerImage(pod), "registry.test/pytorch:1");
}

}  // namespace
}  // namespace lockstep::controller::testing
