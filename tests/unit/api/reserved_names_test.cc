// The launcher's reserved names in user templates (issue 44 item 1): volumes, mounts, the
// operator's init container and the LOCKSTEP_* variables the operator sets are refused, naming
// the field; the launcher's tuning knobs and ordinary names are not. The CRD's CEL rules say the
// same (tests/integration/crd/invalid/reserved-*.yaml against the real apiserver); the last test
// keeps their env list and the operator's in step.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "operator/api/children.h"
#include "operator/api/validation.h"
#include "protocol/contract.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;
namespace contract = protocol::contract;

// The fields Validate names for `job` (empty: valid).
std::set<std::string> Fields(const TrainingJob& job) {
  std::set<std::string> out;
  for (const FieldError& e : Validate(job)) out.insert(e.field);
  return out;
}

json& Trainer(TrainingJob& job) { return job.spec.pod_template["spec"]["containers"][0]; }

TrainingJob WithMountPath(const std::string& path) {
  TrainingJob job = testing::MinimalJob();
  job.spec.pod_template["spec"]["volumes"] = {{{"name", "data"}, {"emptyDir", json::object()}}};
  Trainer(job)["volumeMounts"] = {{{"name", "data"}, {"mountPath", path}}};
  return job;
}

TEST(ReservedNamesTest, MountPathsOfTheLauncherAndUncleanSpellingsAreRefused) {
  const std::string field = "spec.template.spec.containers[0].volumeMounts[0].mountPath";
  struct Row {
    std::string path;
    bool refused;
  };
  const Row rows[] = {
      {"/lockstep", true},           {"/lockstep/", true},
      {"/lockstep/bin", true},       {"lockstep/bin", true},
      {"/var/run/lockstep/rdzv", true}, {"/run/lockstep", true},
      {"var/run/lockstep", true},    {"//lockstep/bin", true},
      {"/./lockstep", true},         {"/data/../lockstep", true},
      {"./lockstep", true},          {"/data/..", true},
      {"..", true},                  {"/data/.", true},
      {"/lockstep-data", false},     {"/data/lockstep", false},
      {"/var/run/lockstepx", false}, {"/var/lockstep", false},
      {"/data/", false},             {"/root/.cache", false},
      {"/data/..x", false},          {"/opt/...", false},
  };
  for (const Row& row : rows) {
    EXPECT_EQ(Fields(WithMountPath(row.path)).count(field) == 1, row.refused) << row.path;
  }
}

TEST(ReservedNamesTest, TheLaunchersVolumesAndInitContainerAreRefused) {
  TrainingJob job = testing::MinimalJob();
  job.spec.pod_template["spec"]["volumes"] = {{{"name", "data"}, {"emptyDir", json::object()}},
                                              {{"name", kLauncherVolume}, {"emptyDir", json::object()}}};
  job.spec.pod_template["spec"]["initContainers"] = {
      {{"name", "setup"},
       {"image", "busybox"},
       {"volumeMounts", {{{"name", kTokenVolume}, {"mountPath", "/mnt"}}}}},
      {{"name", kInitContainerName}, {"image", "busybox"}}};
  EXPECT_EQ(Fields(job), (std::set<std::string>{
                             "spec.template.spec.volumes[1].name",
                             "spec.template.spec.initContainers[0].volumeMounts[0].name",
                             "spec.template.spec.initContainers[1].name",
                         }));
  // A role's template too; the trainer may not mount lockstep-bin either (the operator does).
  TrainingJob roles = testing::MinimalJob();
  roles.spec.roles.push_back(Role{"chief", 1, std::nullopt, roles.spec.pod_template});
  roles.spec.roles[0].pod_template["spec"]["containers"][0]["volumeMounts"] = {
      {{"name", kLauncherVolume}, {"mountPath", "/mnt/bin"}}};
  EXPECT_EQ(Fields(roles), (std::set<std::string>{
                               "spec.roles[0].template.spec.containers[0].volumeMounts[0].name"}));
}

// Every variable the operator sets on a pod (LauncherEnv, through BuildPod) is refused in a
// template; the knobs it leaves to users are not.
TEST(ReservedNamesTest, EveryVariableTheOperatorSetsIsRefusedAndTheKnobsAreNot) {
  TrainingJob built = testing::MinimalJob();
  built.spec.framework = Framework::kTensorFlow;  // adds LOCKSTEP_FRAMEWORK_PORT
  std::set<std::string> operator_env;
  ChildrenOptions options;
  options.launcher_image = "lockstep/launcher:dev";
  StatusOr<std::vector<json>> pods = BuildPods(built, options);
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& pod : *pods) {
    for (const json& e : pod["spec"]["containers"][0]["env"]) {
      const std::string name = e["name"].get<std::string>();
      if (name.starts_with("LOCKSTEP_")) operator_env.insert(name);
    }
  }
  ASSERT_GE(operator_env.size(), 15u);
  operator_env.insert(std::string(contract::kEnvToken));
  operator_env.insert(std::string(contract::kEnvInsecureNoAuth));
  operator_env.insert(std::string(contract::kEnvSpare));  // a spare pod's, instead of the rank
  operator_env.insert(std::string(contract::kEnvFailExitCodes));  // with FailJob rules
  for (const std::string& name : operator_env) {
    TrainingJob job = testing::MinimalJob();
    Trainer(job)["env"] = {{{"name", "A"}, {"value", "1"}}, {{"name", name}, {"value", "1"}}};
    EXPECT_EQ(Fields(job), std::set<std::string>{"spec.template.spec.containers[0].env[1].name"})
        << name;
  }
  for (const std::string_view knob :
       {contract::kEnvPeerTimeout, contract::kEnvHeartbeatInterval, contract::kEnvJoinTimeout,
        contract::kEnvLastCall, contract::kEnvLogFormat, contract::kEnvNcclLibrary}) {
    TrainingJob job = testing::MinimalJob();
    Trainer(job)["env"] = {{{"name", knob}, {"value", "1"}}};
    EXPECT_TRUE(Fields(job).empty()) << knob;
  }
}

// The CRD's CEL list of reserved variables (one rule, four places) is the operator's.
TEST(ReservedNamesTest, TheCrdRefusesTheSameVariables) {
  const std::vector<json> docs =
      testing::LoadYamlFile(testing::SourcePath("crds/lockstep.dev_trainingjobs.yaml"));
  ASSERT_EQ(docs.size(), 1u);
  const std::string text = docs[0].dump();
  const std::regex rule(R"(!\(self in \[('LOCKSTEP_[A-Z_]+',? ?)+\]\))");
  std::set<std::string> lists;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), rule);
       it != std::sregex_iterator(); ++it) {
    lists.insert(it->str());
  }
  ASSERT_EQ(lists.size(), 1u) << "the four copies of the rule differ";
  const std::string list = *lists.begin();
  const std::regex name("'(LOCKSTEP_[A-Z_]+)'");
  int names = 0;
  for (auto it = std::sregex_iterator(list.begin(), list.end(), name);
       it != std::sregex_iterator(); ++it) {
    ++names;
    TrainingJob job = testing::MinimalJob();
    Trainer(job)["env"] = {{{"name", (*it)[1].str()}, {"value", "1"}}};
    EXPECT_FALSE(Fields(job).empty()) << (*it)[1] << " is refused by the CRD, not by Validate";
  }
  EXPECT_EQ(names, 25);
  const size_t copies = [&] {
    size_t n = 0;
    for (size_t pos = text.find(list); pos != std::string::npos; pos = text.find(list, pos + 1)) {
      ++n;
    }
    return n;
  }();
  EXPECT_EQ(copies, 4u);  // containers and initContainers, of the workers' and the roles' template
}

}  // namespace
}  // namespace lockstep::api
