#include "operator/api/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "operator/api/time.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(CodecTest, DecodesMinimalJobWithSchemaDefaults) {
  StatusOr<TrainingJob> job = DecodeTrainingJob(testing::MinimalJobJson());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->metadata.name, "demo");
  EXPECT_EQ(job->metadata.namespace_name, "ns");
  EXPECT_EQ(job->metadata.generation, 1);
  EXPECT_EQ(job->spec.framework, Framework::kPyTorch);
  EXPECT_EQ(job->spec.replicas, 2);
  EXPECT_FALSE(job->spec.procs_per_pod.has_value());
  EXPECT_EQ(job->spec.failure_policy.max_restarts, 3);
  EXPECT_EQ(job->spec.failure_policy.restart_mode, RestartMode::kInPlace);
  EXPECT_EQ(job->spec.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(job->spec.run_policy.suspend);
  EXPECT_EQ(job->spec.pod_template["spec"]["containers"][0]["name"], "trainer");
}

TEST(CodecTest, DecodesEveryField) {
  json j = testing::MinimalJobJson();
  j["spec"]["procsPerPod"] = 8;
  j["spec"]["roles"] = json::parse(R"([{"name": "chief", "replicas": 1, "procsPerPod": 1,
      "template": {"spec": {"containers": [{"name": "c", "image": "i", "command": ["x"]}]}}}])");
  j["spec"]["elastic"] = {{"minReplicas", 1}, {"maxReplicas", 4}};
  j["spec"]["placement"] = {{"topologyKeys", {"block", "rack"}}, {"requiredTopologyKey", "block"}};
  j["spec"]["priorityClassName"] = "high";
  j["spec"]["successPolicy"] = {{"operator", "Any"}, {"targetRoles", {"chief"}}};
  j["spec"]["failurePolicy"] = json::parse(R"({"maxRestarts": 5, "maxDisruptions": 7,
      "restartMode": "Recreate", "hangTimeoutSeconds": 900,
      "backoff": {"initialSeconds": 2, "maxSeconds": 60, "resetAfterSeconds": 120},
      "rules": [{"name": "usage", "action": "FailJob",
                 "onExitCodes": {"containerName": "c", "operator": "NotIn", "values": [1, 2]}}]})");
  j["spec"]["runPolicy"] = json::parse(R"({"activeDeadlineSeconds": 86400,
      "ttlSecondsAfterFinished": 60, "suspend": true, "cleanPodPolicy": "All"})");
  StatusOr<TrainingJob> job = DecodeTrainingJob(j);
  ASSERT_TRUE(job.ok()) << job.status();
  const TrainingJobSpec& s = job->spec;
  EXPECT_EQ(s.procs_per_pod, 8);
  ASSERT_EQ(s.roles.size(), 1u);
  EXPECT_EQ(s.roles[0].name, "chief");
  EXPECT_EQ(s.roles[0].procs_per_pod, 1);
  EXPECT_EQ(s.elastic->max_replicas, 4);
  EXPECT_EQ(s.placement->required_topology_key, "block");
  EXPECT_EQ(s.placement->topology_keys, (std::vector<std::string>{"block", "rack"}));
  EXPECT_EQ(s.priority_class_name, "high");
  EXPECT_EQ(s.success_policy->op, SuccessOperator::kAny);
  EXPECT_EQ(s.failure_policy.max_disruptions, 7);
  EXPECT_EQ(s.failure_policy.restart_mode, RestartMode::kRecreate);
  EXPECT_EQ(s.failure_policy.backoff.reset_after_seconds, 120);
  ASSERT_EQ(s.failure_policy.rules.size(), 1u);
  EXPECT_EQ(s.failure_policy.rules[0].action, RuleAction::kFailJob);
  EXPECT_EQ(s.failure_policy.rules[0].on_exit_codes.op, ExitCodeOperator::kNotIn);
  EXPECT_EQ(s.failure_policy.rules[0].on_exit_codes.container_name, "c");
  EXPECT_EQ(s.failure_policy.rules[0].on_exit_codes.values, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(s.run_policy.active_deadline_seconds, 86400);
  EXPECT_EQ(s.run_policy.ttl_seconds_after_finished, 60);
  EXPECT_TRUE(s.run_policy.suspend);
  EXPECT_EQ(s.run_policy.clean_pod_policy, CleanPodPolicy::kAll);

  // Round trip: encoding and decoding again gives the same encoding.
  const json encoded = EncodeTrainingJob(*job);
  StatusOr<TrainingJob> again = DecodeTrainingJob(encoded);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(EncodeTrainingJob(*again), encoded);
  EXPECT_EQ(encoded["spec"]["failurePolicy"]["rules"][0]["onExitCodes"]["values"],
            j["spec"]["failurePolicy"]["rules"][0]["onExitCodes"]["values"]);
}

struct BadInput {
  std::string name;
  std::string json_pointer;  // where to write
  json value;
  std::string want;  // substring of the error, naming the field
};

class CodecBadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(CodecBadInputTest, ErrorNamesTheField) {
  json j = testing::MinimalJobJson();
  const BadInput& in = GetParam();
  if (in.value.is_discarded()) {
    j[json::json_pointer(in.json_pointer).parent_pointer()].erase(
        json::json_pointer(in.json_pointer).back());
  } else {
    j[json::json_pointer(in.json_pointer)] = in.value;
  }
  StatusOr<TrainingJob> job = DecodeTrainingJob(j);
  ASSERT_FALSE(job.ok());
  EXPECT_TRUE(IsInvalidArgument(job.status()));
  EXPECT_THAT(job.status().message(), HasSubstr(in.want));
}

const json kRemove = json(json::value_t::discarded);

INSTANTIATE_TEST_SUITE_P(
    Table, CodecBadInputTest,
    ::testing::Values(
        BadInput{"ReplicasString", "/spec/replicas", "4", "spec.replicas: expected an integer"},
        BadInput{"ReplicasFraction", "/spec/replicas", 2.5, "spec.replicas: expected an integer"},
        BadInput{"ReplicasHuge", "/spec/replicas", 1LL << 40, "spec.replicas: integer out of"},
        BadInput{"UnknownFramework", "/spec/framework", "MXNet",
                 "spec.framework: unsupported value \"MXNet\""},
        BadInput{"MissingFramework", "/spec/framework", kRemove, "spec.framework: required"},
        BadInput{"MissingTemplate", "/spec/template", kRemove, "spec.template: required"},
        BadInput{"ContainersNotArray", "/spec/template/spec/containers", json::object(),
                 "spec.template.spec.containers: expected an array"},
        BadInput{"CommandNotStrings", "/spec/template/spec/containers/0/command", json{1, 2},
                 "spec.template.spec.containers[0].command[0]: expected a string"},
        BadInput{"BadRestartMode", "/spec/failurePolicy", json{{"restartMode", "Sometimes"}},
                 "spec.failurePolicy.restartMode: unsupported value"},
        BadInput{"BadRuleOperator", "/spec/failurePolicy",
                 json::parse(R"({"rules":[{"action":"FailJob",
                     "onExitCodes":{"operator":"Maybe","values":[1]}}]})"),
                 "spec.failurePolicy.rules[0].onExitCodes.operator: unsupported value"},
        BadInput{"ExitCodeOutOfRange", "/spec/failurePolicy",
                 json::parse(R"({"rules":[{"action":"FailJob",
                     "onExitCodes":{"operator":"In","values":[1, 300]}}]})"),
                 "spec.failurePolicy.rules[0].onExitCodes.values[1]: exit code must be"},
        BadInput{"RoleNotObject", "/spec/roles", json{"ps"}, "spec.roles[0]: expected an object"},
        BadInput{"SuspendString", "/spec/runPolicy", json{{"suspend", "yes"}},
                 "spec.runPolicy.suspend: expected a boolean"},
        BadInput{"BadStatusTime", "/status", json{{"startTime", "yesterday"}},
                 "status.startTime: not an RFC 3339 time"},
        BadInput{"BadConditionStatus", "/status",
                 json::parse(R"({"conditions":[{"type":"Running","status":"Maybe"}]})"),
                 "status.conditions[0].status: unsupported value"},
        BadInput{"WrongKind", "/kind", "Pod", "kind: expected TrainingJob"},
        BadInput{"SpecNotObject", "/spec", "x", "spec: expected an object"}),
    [](const ::testing::TestParamInfo<BadInput>& p) { return p.param.name; });

TEST(CodecTest, StatusRoundTrip) {
  TrainingJobStatus s;
  s.observed_generation = 4;
  s.state = JobState::kRestarting;
  s.reason = "PodFailed";
  s.message = "pod demo-worker-1 exited with 1";
  s.replicas = 4;
  s.ready_replicas = 3;
  s.workers_ready = "3/4";
  s.selector = "lockstep.dev/job-name=demo";
  s.attempt = 2;
  s.restarts = {1, 1};
  s.start_time = *ParseTime("2026-11-29T10:00:00Z");
  s.last_restart = LastRestart{*ParseTime("2026-11-29T10:05:00Z"), "PodFailed", "exit 1"};
  s.conditions.push_back(Condition{"Running", ConditionStatus::kFalse, 4,
                                   *ParseTime("2026-11-29T10:05:00Z"), "Restarting", "m"});
  const json encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["state"], "Restarting");
  EXPECT_EQ(encoded["restarts"]["disruptions"], 1);
  EXPECT_EQ(encoded["lastRestart"]["time"], "2026-11-29T10:05:00Z");
  EXPECT_EQ(encoded["conditions"][0]["lastTransitionTime"], "2026-11-29T10:05:00Z");
  EXPECT_FALSE(encoded.contains("completionTime"));
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(EncodeStatus(*decoded), encoded);
}

TEST(CodecTest, EmptyStatusDecodesToZeroValues) {
  StatusOr<TrainingJobStatus> s = DecodeStatus(json(nullptr));
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->state.has_value());
  EXPECT_EQ(s->attempt, 0);
  EXPECT_TRUE(s->conditions.empty());
}

}  // namespace
}  // namespace lockstep::api
