// Every verb and subresource of RestClient against the real kube-apiserver.
#include <gtest/gtest.h>

#include <algorithm>

#include "operator/kube/api_error.h"
#include "operator/kube/objects.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::kube {
namespace {

using nlohmann::json;

json ConfigMap(const std::string& name, json data, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"data", std::move(data)}};
}

json PendingPod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{"lockstep.dev/job-name", "crud"}}}}},
          {"spec",
           {{"schedulerName", "lockstep"},
            {"tolerations", json::array({{{"operator", "Exists"}}})},
            {"containers", json::array({{{"name", "trainer"},
                                         {"image", "busybox"},
                                         {"resources", {{"requests", {{"cpu", "250m"}}}}}}})}}}};
}

class CrudTest : public testing::NamespaceTest {
 protected:
  CrudTest() : NamespaceTest("kube-crud") {}
};

TEST_F(CrudTest, ConfigMapLifecycleWithConflictsAndPreconditions) {
  const auto cms = resources::ConfigMaps();
  auto created = client().Create(cms, ns(), ConfigMap("c", {{"a", "1"}}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(IsAlreadyExists(client().Create(cms, ns(), ConfigMap("c", {})).status()));

  auto got = client().Get(cms, ns(), "c");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["data"]["a"], "1");
  const std::string uid = (*got)["metadata"]["uid"];

  json fresh = *got;
  fresh["data"]["a"] = "2";
  auto updated = client().Update(cms, ns(), "c", fresh);
  ASSERT_TRUE(updated.ok()) << updated.status();
  json stale = *got;  // still carries the old resourceVersion
  stale["data"]["a"] = "3";
  EXPECT_TRUE(IsConflict(client().Update(cms, ns(), "c", stale).status()));

  auto patched = client().MergePatch(cms, ns(), "c", {{"data", {{"b", "x"}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ((*patched)["data"]["a"], "2");
  EXPECT_EQ((*patched)["data"]["b"], "x");

  // Server-side apply: field "b" is owned by the merge patch's manager, so taking it over needs
  // force; a field nobody else owns applies without.
  auto applied = client().Apply(cms, ns(), "c", ConfigMap("c", {{"z", "applied"}}));
  ASSERT_TRUE(applied.ok()) << applied.status();
  EXPECT_EQ((*applied)["data"]["z"], "applied");
  auto conflicting = client().Apply(cms, ns(), "c", ConfigMap("c", {{"b", "mine"}}));
  EXPECT_TRUE(IsConflict(conflicting.status())) << conflicting.status();
  auto forced = client().Apply(cms, ns(), "c", ConfigMap("c", {{"b", "mine"}}), /*force=*/true);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_EQ((*forced)["data"]["b"], "mine");

  DeleteOptions wrong_uid;
  wrong_uid.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_TRUE(IsConflict(client().Delete(cms, ns(), "c", wrong_uid).status()));
  DeleteOptions stale_rv;
  stale_rv.precondition_resource_version = (*got)["metadata"]["resourceVersion"];
  EXPECT_TRUE(IsConflict(client().Delete(cms, ns(), "c", stale_rv).status()));
  DeleteOptions right;
  right.precondition_uid = uid;
  right.propagation_policy = "Background";
  ASSERT_TRUE(client().Delete(cms, ns(), "c", right).ok());
  EXPECT_TRUE(IsNotFound(client().Get(cms, ns(), "c").status()));
  EXPECT_TRUE(IsNotFound(client().Delete(cms, ns(), "c").status()));
}

TEST_F(CrudTest, InvalidObjectsNameTheField) {
  auto bad_name = client().Create(resources::ConfigMaps(), ns(), ConfigMap("Bad_Name", {}));
  EXPECT_TRUE(IsInvalid(bad_name.status()));
  EXPECT_NE(bad_name.status().message().find("metadata.name"), std::string::npos)
      << bad_name.status();
  json pod = PendingPod("no-image");
  pod["spec"]["containers"][0].erase("image");
  auto no_image = client().Create(resources::Pods(), ns(), pod);
  EXPECT_TRUE(IsInvalid(no_image.status()));
  EXPECT_NE(no_image.status().message().find("spec.containers[0].image"), std::string::npos)
      << no_image.status();
}

// The transport's upload buffer is 16 KiB (curl_transport.cc): a body many times larger is
// still sent whole, by create, update and patch alike, and stored byte for byte (the three
// values together stay under a ConfigMap's 1 MiB).
TEST_F(CrudTest, BodiesLargerThanTheUploadBufferArriveWhole) {
  const auto cms = resources::ConfigMaps();
  std::string big;
  for (int i = 0; big.size() < 300 * 1024; ++i) big += std::to_string(i) + ",";
  auto created = client().Create(cms, ns(), ConfigMap("big", {{"a", big}}));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ((*created)["data"]["a"], big);

  const std::string bigger = big + big.substr(0, 100 * 1024 + 7);
  json fresh = *created;
  fresh["data"]["a"] = bigger;
  auto updated = client().Update(cms, ns(), "big", fresh);
  ASSERT_TRUE(updated.ok()) << updated.status();
  auto patched = client().MergePatch(cms, ns(), "big", {{"data", {{"b", big}}}});
  ASSERT_TRUE(patched.ok()) << patched.status();

  auto got = client().Get(cms, ns(), "big");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)["data"]["a"], bigger);
  EXPECT_EQ((*got)["data"]["b"], big);
}

TEST_F(CrudTest, ListPaginatesWithContinue) {
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(client()
                    .Create(resources::ConfigMaps(), ns(),
                            ConfigMap("p" + std::to_string(i), {}, {{"page", "yes"}}))
                    .ok());
  }
  ListOptions options;
  options.label_selector = "page=yes";
  options.limit = 3;
  auto first = client().List(resources::ConfigMaps(), ns(), options);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->items.size(), 3u);
  EXPECT_FALSE(first->continue_token.empty());
  int seen = 0;
  std::string rv;
  ASSERT_TRUE(client()
                  .ListEach(resources::ConfigMaps(), ns(), options,
                            [&](json&& item) {
                              EXPECT_EQ(item["metadata"]["labels"]["page"], "yes");
                              ++seen;
                              return Status::Ok();
                            },
                            &rv)
                  .ok());
  EXPECT_EQ(seen, 7);
  EXPECT_FALSE(rv.empty());
}

TEST_F(CrudTest, BindingAndStatusSubresourcesOnPods) {
  const auto pods = resources::Pods();
  ASSERT_TRUE(client().Create(pods, ns(), PendingPod("bound")).ok());
  json binding = {{"apiVersion", "v1"},
                  {"kind", "Binding"},
                  {"metadata", {{"name", "bound"}}},
                  {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", "gpu-node-0"}}}};
  auto bound = client().CreateSubresource(pods, ns(), "bound", "binding", binding);
  ASSERT_TRUE(bound.ok()) << bound.status();
  auto bound_json = client().Get(pods, ns(), "bound");
  ASSERT_TRUE(bound_json.ok()) << bound_json.status();
  auto pod = DecodePod(*bound_json);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->node_name, "gpu-node-0");
  // A pod is bound once: a second binding is a Conflict.
  EXPECT_TRUE(IsConflict(client().CreateSubresource(pods, ns(), "bound", "binding", binding).status()));

  ASSERT_TRUE(client().Create(pods, ns(), PendingPod("status")).ok());
  json patch = {{"status",
                 {{"conditions", json::array({{{"type", "lockstep.dev/Probe"},
                                               {"status", "True"},
                                               {"reason", "WrittenByTest"}}})}}}};
  auto patched = client().MergePatch(pods, ns(), "status", patch, "status");
  ASSERT_TRUE(patched.ok()) << patched.status();
  auto status_json = client().Get(pods, ns(), "status");
  ASSERT_TRUE(status_json.ok()) << status_json.status();
  const json& conditions = (*status_json)["status"]["conditions"];
  ASSERT_TRUE(conditions.is_array()) << status_json->dump();
  const auto probe = std::find_if(conditions.begin(), conditions.end(), [](const json& c) {
    return c.value("type", "") == "lockstep.dev/Probe";
  });
  ASSERT_NE(probe, conditions.end()) << status_json->dump();
  EXPECT_EQ(probe->value("reason", ""), "WrittenByTest");
  // The caches keep only the condition types the operator reads (kPodConditionsKept).
  auto status_pod = DecodePod(*status_json);
  ASSERT_TRUE(status_pod.ok());
  EXPECT_EQ(status_pod->FindCondition("lockstep.dev/Probe"), nullptr);
  // PUT on /status too.
  auto full = client().Get(pods, ns(), "status");
  ASSERT_TRUE(full.ok());
  (*full)["status"]["message"] = "written by the status subresource";
  ASSERT_TRUE(client().Update(pods, ns(), "status", *full, "status").ok());
  auto rewritten = client().Get(pods, ns(), "status");
  ASSERT_TRUE(rewritten.ok());
  EXPECT_EQ((*rewritten)["status"]["message"], "written by the status subresource");

  // Force delete: gracePeriodSeconds=0 removes the bound pod at once.
  DeleteOptions force;
  force.grace_period_seconds = 0;
  ASSERT_TRUE(client().Delete(pods, ns(), "bound", force).ok());
  EXPECT_TRUE(IsNotFound(client().Get(pods, ns(), "bound").status()));
}

TEST_F(CrudTest, ScaleSubresourceOnDeployment) {
  const auto deployments = resources::Deployments();
  json deployment = {
      {"apiVersion", "apps/v1"},
      {"kind", "Deployment"},
      {"metadata", {{"name", "web"}}},
      {"spec",
       {{"replicas", 1},
        {"selector", {{"matchLabels", {{"app", "web"}}}}},
        {"template",
         {{"metadata", {{"labels", {{"app", "web"}}}}},
          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}}}}}};
  ASSERT_TRUE(client().Create(deployments, ns(), deployment).ok());
  // The Deployment controller writes the new Deployment's status at about the same time, which
  // changes its resourceVersion: a compare-and-swap Update of the scale may meet a Conflict, and
  // a client retries it from a fresh read (client-go's RetryOnConflict).
  Status updated = AbortedError("not tried");
  for (int attempt = 0; attempt < 5 && !updated.ok(); ++attempt) {
    auto scale = client().Get(deployments, ns(), "web", "scale");
    ASSERT_TRUE(scale.ok()) << scale.status();
    EXPECT_EQ((*scale)["kind"], "Scale");
    EXPECT_EQ((*scale)["spec"]["replicas"], 1);
    (*scale)["spec"]["replicas"] = 3;
    updated = client().Update(deployments, ns(), "web", *scale, "scale").status();
    if (!updated.ok() && !IsConflict(updated)) break;
  }
  ASSERT_TRUE(updated.ok()) << updated;
  auto scaled = client().Get(deployments, ns(), "web");
  ASSERT_TRUE(scaled.ok());
  EXPECT_EQ((*scaled)["spec"]["replicas"], 3);
  ASSERT_TRUE(client().MergePatch(deployments, ns(), "web", {{"spec", {{"replicas", 2}}}}, "scale").ok());
  auto rescaled = client().Get(deployments, ns(), "web", "scale");
  ASSERT_TRUE(rescaled.ok());
  EXPECT_EQ((*rescaled)["spec"]["replicas"], 2);

  DeleteOptions foreground;
  foreground.propagation_policy = "Foreground";
  ASSERT_TRUE(client().Delete(deployments, ns(), "web", foreground).ok());
  EXPECT_TRUE(testing::WaitFor(
      [&] { return IsNotFound(client().Get(deployments, ns(), "web").status()); },
      std::chrono::seconds(30)));
}

TEST_F(CrudTest, RawGetAndMetrics) {
  prometheus::Registry registry;
  KubeMetrics metrics(registry);
  RestClient measured(cluster_.transport, testing::NoLimits(), &metrics);
  auto version = measured.RawGet("/version");
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->status, 200);
  EXPECT_TRUE(IsNotFound(measured.Get(resources::ConfigMaps(), ns(), "missing").status()));
  double total = 0;
  bool saw_404 = false;
  for (const auto& family : registry.Collect()) {
    if (family.name != "rest_client_requests_total") continue;
    for (const auto& m : family.metric) {
      total += m.counter.value;
      for (const auto& label : m.label) saw_404 = saw_404 || (label.name == "code" && label.value == "404");
    }
  }
  EXPECT_EQ(total, 2);
  EXPECT_TRUE(saw_404);
}

}  // namespace
}  // namespace lockstep::kube
