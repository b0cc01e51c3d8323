#include "operator/api/defaults.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "operator/api/codec.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

// Collects every `default:` in the CRD schema as (JSON pointer in an object, value).
void CollectDefaults(const json& schema, const std::string& pointer,
                     std::vector<std::pair<std::string, json>>* out) {
  if (schema.contains("default") && !schema["default"].is_object()) {
    out->emplace_back(pointer, schema["default"]);
  }
  if (schema.contains("properties")) {
    for (const auto& [name, sub] : schema["properties"].items()) {
      CollectDefaults(sub, pointer + "/" + name, out);
    }
  }
}

// The schema's defaults and the C++ member initializers must agree, or objects stored before a
// default existed would behave differently from new ones.
TEST(DefaultsTest, CxxDefaultsMirrorTheCrdSchema) {
  const std::vector<json> docs =
      testing::LoadYamlFile(testing::SourcePath("crds/lockstep.dev_trainingjobs.yaml"));
  ASSERT_EQ(docs.size(), 1u);
  const json& schema = docs[0]["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  std::vector<std::pair<std::string, json>> defaults;
  CollectDefaults(schema["properties"]["spec"], "/spec", &defaults);
  ASSERT_GE(defaults.size(), 9u);  // replicas, failurePolicy.*, backoff.*, runPolicy.*, ...

  json minimal = testing::MinimalJobJson();
  minimal["spec"].erase("replicas");
  minimal["spec"]["successPolicy"] = json::object();  // so its nested default is reachable
  minimal["spec"]["elastic"] = {{"minReplicas", 1}, {"maxReplicas", 1}};  // growCooldownSeconds
  StatusOr<TrainingJob> job = DecodeTrainingJob(minimal);
  ASSERT_TRUE(job.ok()) << job.status();
  const json encoded = EncodeTrainingJob(*job);
  for (const auto& [pointer, value] : defaults) {
    ASSERT_TRUE(encoded.contains(json::json_pointer(pointer))) << pointer;
    EXPECT_EQ(encoded[json::json_pointer(pointer)], value) << pointer;
  }
}

json TemplateWithResources(json resources) {
  return {{"spec",
           {{"containers", json::array({{{"name", "t"},
                                         {"image", "i"},
                                         {"command", {"x"}},
                                         {"resources", std::move(resources)}}})}}}};
}

struct GpuCase {
  std::string name;
  json resources;
  int32_t want_gpus;
};

class TrainerGpuCountTest : public ::testing::TestWithParam<GpuCase> {};

TEST_P(TrainerGpuCountTest, ReadsTheFirstContainer) {
  EXPECT_EQ(TrainerGpuCount(TemplateWithResources(GetParam().resources)), GetParam().want_gpus);
}

INSTANTIATE_TEST_SUITE_P(
    Table, TrainerGpuCountTest,
    ::testing::Values(GpuCase{"LimitsString", {{"limits", {{"nvidia.com/gpu", "8"}}}}, 8},
                      GpuCase{"LimitsNumber", {{"limits", {{"nvidia.com/gpu", 4}}}}, 4},
                      GpuCase{"RequestsOnly", {{"requests", {{"nvidia.com/gpu", "2"}}}}, 2},
                      GpuCase{"LimitsWin",
                              {{"limits", {{"nvidia.com/gpu", "1"}}},
                               {"requests", {{"nvidia.com/gpu", "2"}}}},
                              1},
                      GpuCase{"CpuOnly", {{"limits", {{"cpu", "4"}}}}, 0},
                      GpuCase{"NotWhole", {{"limits", {{"nvidia.com/gpu", "500m"}}}}, 0},
                      GpuCase{"NoResources", json::object(), 0}),
    [](const ::testing::TestParamInfo<GpuCase>& p) { return p.param.name; });

TEST(DefaultsTest, ProcsPerPodFallsBackToGpusThenOne) {
  const json gpu8 = TemplateWithResources({{"limits", {{"nvidia.com/gpu", "8"}}}});
  EXPECT_EQ(EffectiveProcsPerPod(std::nullopt, gpu8), 8);
  EXPECT_EQ(EffectiveProcsPerPod(2, gpu8), 2);
  EXPECT_EQ(EffectiveProcsPerPod(std::nullopt, TemplateWithResources(json::object())), 1);
}

TEST(DefaultsTest, SuccessRolesPreferLeaderRole) {
  TrainingJobSpec spec;
  EXPECT_EQ(EffectiveSuccessRoles(spec), std::vector<std::string>{"worker"});
  spec.roles.push_back(Role{"ps", 2, std::nullopt, json::object()});
  EXPECT_EQ(EffectiveSuccessRoles(spec), std::vector<std::string>{"worker"});
  spec.roles.push_back(Role{"chief", 1, std::nullopt, json::object()});
  EXPECT_EQ(EffectiveSuccessRoles(spec), std::vector<std::string>{"chief"});
  spec.success_policy = SuccessPolicy{SuccessOperator::kAll, {"worker", "chief"}};
  EXPECT_EQ(EffectiveSuccessRoles(spec), (std::vector<std::string>{"worker", "chief"}));
}

TEST(DefaultsTest, ApplyDefaultsResolvesDependentFields) {
  TrainingJobSpec spec;
  spec.pod_template = TemplateWithResources({{"limits", {{"nvidia.com/gpu", "4"}}}});
  spec.roles.push_back(Role{"head", 1, std::nullopt, TemplateWithResources(json::object())});
  ApplyDefaults(&spec);
  EXPECT_EQ(spec.procs_per_pod, 4);
  EXPECT_EQ(spec.roles[0].procs_per_pod, 1);
  ASSERT_TRUE(spec.success_policy.has_value());
  EXPECT_EQ(spec.success_policy->target_roles, std::vector<std::string>{"head"});
}

}  // namespace
}  // namespace lockstep::api
