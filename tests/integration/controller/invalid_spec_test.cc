// An object that bypassed validation: the CRD is replaced by a copy without its CEL rules, a job
// breaking one (elastic minReplicas > maxReplicas) is stored, the CRD is restored. The operator
// must report Stalled/InvalidSpec, create nothing, and keep running.
#include <gtest/gtest.h>

#include <thread>

#include "tests/integration/controller/fixture.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;

kube::ResourceRef Crds() { return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false}; }
constexpr char kCrdName[] = "trainingjobs.lockstep.dev";

void StripValidations(json& node) {
  if (node.is_object()) {
    node.erase("x-kubernetes-validations");
    for (auto& [key, child] : node.items()) StripValidations(child);
  } else if (node.is_array()) {
    for (json& child : node) StripValidations(child);
  }
}

// Puts `spec` back on the CRD, retrying on conflicts.
Status PutCrdSpec(kube::RestClient& client, const json& spec) {
  Status last;
  for (int i = 0; i < 10; ++i) {
    StatusOr<json> crd = client.Get(Crds(), "", kCrdName);
    if (!crd.ok()) return crd.status();
    (*crd)["spec"] = spec;
    StatusOr<json> r = client.Update(Crds(), "", kCrdName, *crd);
    if (r.ok()) return Status::Ok();
    last = r.status();
  }
  return last;
}

TEST_F(OperatorTest, JobThatBypassedValidationIsStalledAndTheOperatorKeepsRunning) {
  StatusOr<json> crd = client().Get(Crds(), "", kCrdName);
  ASSERT_TRUE(crd.ok()) << crd.status();
  const json original = (*crd)["spec"];
  json loose = original;
  StripValidations(loose);
  ASSERT_TRUE(PutCrdSpec(client(), loose).ok());

  const json bad = MakeJob("sneaky", 3, [](json& j) {
    j["spec"]["elastic"] = {{"minReplicas", 4}, {"maxReplicas", 2}};
  });
  // The apiserver applies the looser schema shortly after the update.
  Status created = kube::testing::WaitFor(
                       [&] {
                         return client().Create(kube::resources::TrainingJobs(), ns(), bad).ok();
                       },
                       std::chrono::seconds(20), std::chrono::milliseconds(200))
                       ? Status::Ok()
                       : InternalError("the loosened CRD never accepted the job");
  const Status restored = PutCrdSpec(client(), original);
  ASSERT_TRUE(created.ok()) << created;
  ASSERT_TRUE(restored.ok()) << restored;

  auto stalled = WaitForJob(client(), ns(), "sneaky", [](const json& j) {
    return ConditionStatus(j, "Stalled") == "True";
  });
  ASSERT_TRUE(stalled.ok()) << stalled.status();
  EXPECT_EQ(ConditionReason(*stalled, "Stalled"), "InvalidSpec");
  const std::string message = (*stalled)["status"]["message"];
  EXPECT_NE(message.find("spec.elastic"), std::string::npos) << message;
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        auto r = EventReasons(client(), ns(), "sneaky");
        return std::find(r.begin(), r.end(), "InvalidSpec") != r.end();
      },
      std::chrono::seconds(10)));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto pods = ListJobPods(client(), ns(), "sneaky");
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->empty()) << "the operator acted on an invalid spec";
  EXPECT_TRUE(HttpGet(op_->health_port(), "/healthz").ok());

  // A valid job next to it still runs normally.
  CreateJob(MakeJob("fine", 1));
  EXPECT_TRUE(WaitForPods("fine", 1));
}

}  // namespace
}  // namespace lockstep::controller::testing
