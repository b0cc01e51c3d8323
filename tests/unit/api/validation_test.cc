#include "operator/api/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

TEST(ValidationTest, MinimalJobIsValid) {
  EXPECT_TRUE(Validate(testing::MinimalJob()).empty());
  EXPECT_TRUE(ToStatus(Validate(testing::MinimalJob())).ok());
}

Role MakeRole(std::string name, int32_t replicas = 1) {
  return Role{std::move(name), replicas, std::nullopt, testing::MinimalJob().spec.pod_template};
}

struct Case {
  std::string name;
  std::function<void(TrainingJob*)> mutate;
  std::string want_field;
  std::string want_message;  // substring
};

class ValidateTest : public ::testing::TestWithParam<Case> {};

TEST_P(ValidateTest, ReportsTheField) {
  TrainingJob job = testing::MinimalJob();
  GetParam().mutate(&job);
  const std::vector<FieldError> errors = Validate(job);
  ASSERT_FALSE(errors.empty());
  bool found = false;
  for (const FieldError& e : errors) {
    if (e.field == GetParam().want_field &&
        e.message.find(GetParam().want_message) != std::string::npos) {
      found = true;
    }
  }
  EXPECT_TRUE(found) << ToStatus(errors);
}

INSTANTIATE_TEST_SUITE_P(
    Table, ValidateTest,
    ::testing::Values(
        Case{"NameTooLong", [](TrainingJob* j) { j->metadata.name = std::string(41, 'a'); },
             "metadata.name", "at most 40"},
        Case{"NameStartsWithDigit", [](TrainingJob* j) { j->metadata.name = "1job"; },
             "metadata.name", "DNS-1035"},
        Case{"NegativeReplicas", [](TrainingJob* j) { j->spec.replicas = -1; }, "spec.replicas",
             "must be in 0..10000"},
        Case{"ZeroReplicasWithoutRoles", [](TrainingJob* j) { j->spec.replicas = 0; },
             "spec.replicas", "unless spec.roles"},
        Case{"ElasticMinAboveMax",
             [](TrainingJob* j) {
               j->spec.elastic = ElasticPolicy{4, 2};
             },
             "spec.elastic.minReplicas", "must be <= maxReplicas"},
        Case{"ReplicasOutsideElastic",
             [](TrainingJob* j) {
               j->spec.elastic = ElasticPolicy{3, 8};
             },
             "spec.replicas", "within [spec.elastic.minReplicas"},
        Case{"RoleNamedWorker", [](TrainingJob* j) { j->spec.roles.push_back(MakeRole("worker")); },
             "spec.roles[0].name", "must not be 'worker'"},
        Case{"DuplicateRoles",
             [](TrainingJob* j) {
               j->spec.roles.push_back(MakeRole("ps"));
               j->spec.roles.push_back(MakeRole("ps"));
             },
             "spec.roles[1].name", "duplicate role name"},
        Case{"RoleZeroReplicas", [](TrainingJob* j) { j->spec.roles.push_back(MakeRole("ps", 0)); },
             "spec.roles[0].replicas", "must be in 1..1024"},
        Case{"TrainerWithoutCommand",
             [](TrainingJob* j) { j->spec.pod_template["spec"]["containers"][0].erase("command"); },
             "spec.template.spec.containers", "non-empty command"},
        Case{"RoleTrainerEmptyCommand",
             [](TrainingJob* j) {
               j->spec.roles.push_back(MakeRole("ps"));
               j->spec.roles[0].pod_template["spec"]["containers"][0]["command"] = json::array();
             },
             "spec.roles[0].template.spec.containers", "non-empty command"},
        Case{"NoContainers",
             [](TrainingJob* j) { j->spec.pod_template["spec"]["containers"] = json::array(); },
             "spec.template.spec.containers", "at least one container"},
        Case{"DuplicateContainers",
             [](TrainingJob* j) {
               json& cs = j->spec.pod_template["spec"]["containers"];
               cs.push_back(cs[0]);
             },
             "spec.template.spec.containers[1].name", "duplicate container name"},
        Case{"NegativeMaxRestarts",
             [](TrainingJob* j) { j->spec.failure_policy.max_restarts = -1; },
             "spec.failurePolicy.maxRestarts", "must be in 0.."},
        Case{"NegativeHangTimeout",
             [](TrainingJob* j) { j->spec.failure_policy.hang_timeout_seconds = -5; },
             "spec.failurePolicy.hangTimeoutSeconds", "must be in 0.."},
        Case{"BackoffInitialAboveMax",
             [](TrainingJob* j) {
               j->spec.failure_policy.backoff = Backoff{100, 10, 600};
             },
             "spec.failurePolicy.backoff.initialSeconds", "must be <= maxSeconds"},
        Case{"RuleWithoutExitCodes",
             [](TrainingJob* j) { j->spec.failure_policy.rules.push_back(FailureRule{}); },
             "spec.failurePolicy.rules[0].onExitCodes.values", "at least one"},
        Case{"ZeroDeadline", [](TrainingJob* j) { j->spec.run_policy.active_deadline_seconds = 0; },
             "spec.runPolicy.activeDeadlineSeconds", "must be in 1.."},
        Case{"ZeroStartupTimeout",
             [](TrainingJob* j) { j->spec.run_policy.startup_timeout_seconds = 0; },
             "spec.runPolicy.startupTimeoutSeconds", "must be in 1.."},
        Case{"RequiredKeyNotInKeys",
             [](TrainingJob* j) {
               j->spec.placement = Placement{{"rack"}, "block"};
             },
             "spec.placement.requiredTopologyKey", "must be one of"},
        // Hole 4 (docs/reliability.md): 300 KB of env x 1,000 workers is 286 MiB of pods.
        Case{"WorkerTemplatesOverThePodBytesCap",
             [](TrainingJob* j) {
               j->spec.pod_template["spec"]["containers"][0]["env"] =
                   json::array({{{"name", "BIG"}, {"value", std::string(300 << 10, 'x')}}});
               j->spec.replicas = 1000;
             },
             "spec.template", "over the 256 MiB one job may create"},
        // An elastic job is counted at its maximum (30 KB x 10,000), not at spec.replicas.
        Case{"ElasticMaximumOverThePodBytesCap",
             [](TrainingJob* j) {
               j->spec.pod_template["spec"]["containers"][0]["args"] =
                   json::array({std::string(30 << 10, 'a')});
               j->spec.replicas = 1;
               j->spec.elastic = ElasticPolicy{1, 10000};
             },
             "spec.template", "MiB of templates (template bytes x replicas)"},
        // The heaviest template is the one named: 300 KB x 1,024 parameter servers.
        Case{"RoleTemplatesOverThePodBytesCap",
             [](TrainingJob* j) {
               j->spec.roles.push_back(MakeRole("ps", 1024));
               j->spec.roles[0].pod_template["spec"]["containers"][0]["args"] =
                   json::array({std::string(300 << 10, 'a')});
             },
             "spec.roles[0].template", "over the 256 MiB one job may create"},
        Case{"UnknownSuccessRole",
             [](TrainingJob* j) {
               j->spec.success_policy = SuccessPolicy{SuccessOperator::kAll, {"chief"}};
             },
             "spec.successPolicy.targetRoles", "must name 'worker' or a role"},
        Case{"NegativeSpares", [](TrainingJob* j) { j->spec.failure_policy.spare_replicas = -1; },
             "spec.failurePolicy.spareReplicas", "must be in 0..16"},
        Case{"TooManySpares", [](TrainingJob* j) { j->spec.failure_policy.spare_replicas = 17; },
             "spec.failurePolicy.spareReplicas", "must be in 0..16"},
        Case{"SparesWithRoles",
             [](TrainingJob* j) {
               j->spec.failure_policy.spare_replicas = 1;
               j->spec.roles = {MakeRole("ps")};
             },
             "spec.failurePolicy.spareReplicas", "stand in for workers only"},
        Case{"SparesWithElastic",
             [](TrainingJob* j) {
               j->spec.failure_policy.spare_replicas = 1;
               j->spec.replicas = 4;
               j->spec.elastic = ElasticPolicy{2, 4, 60};
             },
             "spec.failurePolicy.spareReplicas", "not supported with spec.elastic"},
        Case{"TemplateNamesAnotherPriorityClass",
             [](TrainingJob* j) {
               j->spec.priority_class_name = "high";
               j->spec.pod_template["spec"]["priorityClassName"] = "low";
             },
             "spec.template.spec.priorityClassName", "must equal spec.priorityClassName"},
        Case{"RoleNamesAClassTheJobDoesNot",
             [](TrainingJob* j) {
               j->spec.roles = {MakeRole("ps")};
               j->spec.roles[0].pod_template["spec"]["priorityClassName"] = "high";
             },
             "spec.roles[0].template.spec.priorityClassName", "must equal spec.priorityClassName"},
        Case{"TemplateSetsThePriorityInteger",
             [](TrainingJob* j) { j->spec.pod_template["spec"]["priority"] = 1000000; },
             "spec.template.spec.priority", "must not be set"},
        Case{"TemplateClaimsADraResource",
             [](TrainingJob* j) {
               j->spec.pod_template["spec"]["resourceClaims"] =
                   json::array({{{"name", "gpu"}, {"resourceClaimName", "gpu-claim"}}});
             },
             "spec.template.spec.resourceClaims", "nvidia.com/gpu"},
        Case{"RoleContainerClaimsADraResource",
             [](TrainingJob* j) {
               j->spec.roles.push_back(MakeRole("chief"));
               j->spec.roles[0].pod_template["spec"]["containers"][0]["resources"]["claims"] =
                   json::array({{{"name", "gpu"}}});
             },
             "spec.roles[0].template.spec.containers[0].resources.claims", "not supported"},
        Case{"SparesForOnePod",
             [](TrainingJob* j) {
               j->spec.failure_policy.spare_replicas = 1;
               j->spec.replicas = 1;
             },
             "spec.failurePolicy.spareReplicas", "a job of one pod has none to take"}),
    [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

TEST(ValidationTest, ATemplateMayRepeatTheJobsPriorityClass) {
  TrainingJob job = testing::MinimalJob();
  job.spec.priority_class_name = "high";
  job.spec.pod_template["spec"]["priorityClassName"] = "high";
  job.spec.roles = {MakeRole("ps")};
  job.spec.roles[0].pod_template["spec"]["priorityClassName"] = "high";
  EXPECT_TRUE(Validate(job).empty()) << ToStatus(Validate(job));
}

TEST(ValidationTest, SparesForAWorkerGangAreValid) {
  TrainingJob job = testing::MinimalJob();
  job.spec.failure_policy.spare_replicas = 2;
  EXPECT_TRUE(Validate(job).empty()) << ToStatus(Validate(job));
}

TEST(ValidationTest, LargeTemplatesUnderThePodBytesCapAreValid) {
  TrainingJob job = testing::MinimalJob();
  job.spec.pod_template["spec"]["containers"][0]["env"] =
      json::array({{{"name", "BIG"}, {"value", std::string(100 << 10, 'x')}}});
  job.spec.replicas = 2000;  // ~196 MiB
  EXPECT_TRUE(Validate(job).empty()) << ToStatus(Validate(job));
}

TEST(ValidationTest, RolesAllowZeroWorkers) {
  TrainingJob job = testing::MinimalJob();
  job.spec.replicas = 0;
  job.spec.roles.push_back(MakeRole("head"));
  EXPECT_TRUE(Validate(job).empty()) << ToStatus(Validate(job));
}

TEST(ValidationTest, UpdateRejectsImmutableChanges) {
  const TrainingJob old_job = testing::MinimalJob();
  TrainingJob scaled = old_job;
  scaled.spec.replicas = 7;  // mutable: the scale subresource writes it
  scaled.spec.run_policy.suspend = true;
  EXPECT_TRUE(ValidateUpdate(old_job, scaled).empty());

  TrainingJob changed = old_job;
  changed.spec.framework = Framework::kJAX;
  changed.spec.procs_per_pod = 4;
  changed.spec.placement = Placement{{"rack"}, std::nullopt};
  changed.spec.elastic = ElasticPolicy{1, 4};
  changed.spec.roles.push_back(MakeRole("ps"));
  std::vector<std::string> fields;
  for (const FieldError& e : ValidateUpdate(old_job, changed)) fields.push_back(e.field);
  EXPECT_THAT(fields,
              ::testing::UnorderedElementsAre("spec.framework", "spec.procsPerPod",
                                              "spec.placement", "spec.elastic", "spec.roles"));
}

TEST(ValidationTest, ToStatusJoinsErrors) {
  const Status s = ToStatus({{"spec.a", "bad"}, {"spec.b", "worse"}});
  EXPECT_TRUE(IsInvalidArgument(s));
  EXPECT_EQ(s.message(), "spec.a: bad; spec.b: worse");
}

}  // namespace
}  // namespace lockstep::api
