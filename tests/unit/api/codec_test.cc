#include "operator/api/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <vector>

#include "operator/api/conditions.h"
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
      "ttlSecondsAfterFinished": 60, "suspend": true, "cleanPodPolicy": "All",
      "startupTimeoutSeconds": 120})");
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
  EXPECT_EQ(s.run_policy.startup_timeout_seconds, 120);

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
        // Found by tests/fuzz/api_codec: a float beyond int64 was cast first (undefined; the
        // fuzz build's clang UBSan aborts, GCC's in build-asan/ has no float-cast-overflow
        // check), then compared.
        BadInput{"ReplicasHugeFloat", "/spec/replicas", 1e300, "spec.replicas: integer out of"},
        BadInput{"DeadlineBelowInt64", "/spec/runPolicy", json{{"activeDeadlineSeconds", -1e19}},
                 "spec.runPolicy.activeDeadlineSeconds: integer out of range"},
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
        BadInput{"ExcludedNodeWithoutName", "/status",
                 json::parse(R"({"excludedNodes":[{"reason":"NodeDeleted"}]})"),
                 "status.excludedNodes[0].name: required"},
        BadInput{"ExcludedNodeBadUntil", "/status",
                 json::parse(R"({"excludedNodes":[{"name":"n","until":"later"}]})"),
                 "status.excludedNodes[0].until: not an RFC 3339 time"},
        BadInput{"LastRestartNodesNotStrings", "/status",
                 json::parse(R"({"lastRestart":{"nodes":[1]}})"), "status.lastRestart.nodes"},
        BadInput{"CapacityNotObject", "/status", json{{"capacity", 6}},
                 "status.capacity: expected an object"},
        BadInput{"GrowCooldownString", "/spec/elastic",
                 json{{"minReplicas", 1}, {"maxReplicas", 2}, {"growCooldownSeconds", "1m"}},
                 "spec.elastic.growCooldownSeconds: expected an integer"},
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
  s.restarts = {1, 1, 1};
  s.start_time = *ParseTime("2026-11-29T10:00:00Z");
  s.last_restart = LastRestart{*ParseTime("2026-11-29T10:05:00Z"), "PodFailed", "exit 1", 2, 10,
                               RestartMode::kRecreate, {}};
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

// restarts.total, the RESTARTS column: every gang restart (the attempt number) plus every
// in-place restart, whatever caused them; the demo's job, restarted once when its node died,
// shows 1 where restarts.failures showed 0.
TEST(CodecTest, TotalRestartsCountsGangAndInPlaceRestartsOfEveryCause) {
  struct Case {
    int32_t attempt, failures, disruptions, in_place, want;
  };
  for (const Case& c : {Case{0, 0, 0, 0, 0}, Case{1, 0, 1, 0, 1}, Case{0, 2, 0, 2, 2},
                        Case{3, 1, 2, 4, 7}, Case{INT32_MAX, 0, 0, 5, INT32_MAX},
                        Case{-1, 0, 0, 1, 1}}) {
    TrainingJobStatus s;
    s.attempt = c.attempt;
    s.restarts.failures = c.failures;
    s.restarts.disruptions = c.disruptions;
    s.restarts.in_place = c.in_place;
    EXPECT_EQ(TotalRestarts(s), c.want) << "attempt " << c.attempt << " inPlace " << c.in_place;
    EXPECT_EQ(EncodeStatus(s)["restarts"]["total"], c.want);
  }
}

// status.displayState, the STATE column: the state, or why a job that is not running yet cannot
// start (the StartupFailing condition's reason), as `kubectl get pods` shows ImagePullBackOff.
TEST(CodecTest, DisplayStateShowsWhyAJobNotRunningYetCannotStart) {
  struct Case {
    std::optional<JobState> state;
    std::optional<ConditionStatus> startup;  // StartupFailing's status, if present
    std::string reason, want;
  };
  const std::vector<Case> cases = {
      {std::nullopt, std::nullopt, "", ""},
      {JobState::kRunning, std::nullopt, "", "Running"},
      {JobState::kScheduling, std::nullopt, "", "Scheduling"},
      {JobState::kScheduling, ConditionStatus::kTrue, "ImagePullBackOff", "ImagePullBackOff"},
      {JobState::kPending, ConditionStatus::kTrue, "CreateContainerConfigError",
       "CreateContainerConfigError"},
      {JobState::kRestarting, ConditionStatus::kTrue, "CrashLoopBackOff", "CrashLoopBackOff"},
      {JobState::kScheduling, ConditionStatus::kFalse, "PodsStarting", "Scheduling"},
      {JobState::kScheduling, ConditionStatus::kTrue, "", "Scheduling"},
      // A running or ended job is what it is: a failing spare does not hide that it runs.
      {JobState::kRunning, ConditionStatus::kTrue, "ErrImagePull", "Running"},
      {JobState::kFailed, ConditionStatus::kTrue, "ErrImagePull", "Failed"},
      {JobState::kQueued, ConditionStatus::kTrue, "ErrImagePull", "Queued"},
  };
  for (const Case& c : cases) {
    TrainingJobStatus s;
    s.state = c.state;
    if (c.startup) {
      Condition startup;
      startup.type = std::string(kConditionStartupFailing);
      startup.status = *c.startup;
      startup.reason = c.reason;
      s.conditions.push_back(startup);
    }
    EXPECT_EQ(DisplayState(s), c.want) << c.want;
    const json encoded = EncodeStatus(s);
    EXPECT_EQ(encoded.value("displayState", ""), c.want) << encoded.dump();
  }
}

// The failure-handling fields of issue 6: restarts.consecutive, lastRestart.{attempt,
// backoffSeconds,mode,nodes}, excludedNodes, and capacity (the scheduler's, written apart).
TEST(CodecTest, RestartStatusFieldsRoundTrip) {
  TrainingJobStatus s;
  s.attempt = 3;
  s.restarts = {2, 5, 1, 4};
  s.last_restart = LastRestart{*ParseTime("2026-11-29T10:05:00Z"),
                               "NodeLeaseExpired",
                               "node n-7: lease not renewed for 23s",
                               3,
                               0,
                               RestartMode::kRecreate,
                               {"n-7", "n-9"}};
  s.excluded_nodes = {{"n-7", "NodeLeaseExpired", *ParseTime("2026-11-29T10:10:00Z")},
                      {"n-9", "NodeNotReady", *ParseTime("2026-11-29T10:11:00Z")}};
  const json encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["restarts"],
            json::parse(R"({"failures": 2, "disruptions": 5, "consecutive": 1, "inPlace": 4,
                            "total": 7})"));
  EXPECT_EQ(encoded["lastRestart"], json::parse(R"({"time": "2026-11-29T10:05:00Z",
      "reason": "NodeLeaseExpired", "message": "node n-7: lease not renewed for 23s",
      "attempt": 3, "backoffSeconds": 0, "mode": "Recreate", "nodes": ["n-7", "n-9"]})"));
  EXPECT_EQ(encoded["excludedNodes"], json::parse(R"([
      {"name": "n-7", "reason": "NodeLeaseExpired", "until": "2026-11-29T10:10:00Z"},
      {"name": "n-9", "reason": "NodeNotReady", "until": "2026-11-29T10:11:00Z"}])"));
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->restarts.consecutive, 1);
  ASSERT_TRUE(decoded->last_restart.has_value());
  EXPECT_EQ(decoded->last_restart->attempt, 3);
  EXPECT_EQ(decoded->last_restart->mode, RestartMode::kRecreate);
  EXPECT_EQ(decoded->last_restart->nodes, (std::vector<std::string>{"n-7", "n-9"}));
  ASSERT_EQ(decoded->excluded_nodes.size(), 2u);
  EXPECT_EQ(decoded->excluded_nodes[1].name, "n-9");
  EXPECT_EQ(decoded->excluded_nodes[1].until, *ParseTime("2026-11-29T10:11:00Z"));
  EXPECT_EQ(EncodeStatus(*decoded), encoded);
}

// In-place restarts (docs/failures.md "In place"): status.rendezvous, status.restartRequest and
// spec.failurePolicy.inPlaceTimeoutSeconds.
TEST(CodecTest, InPlaceFieldsRoundTrip) {
  TrainingJobStatus s;
  s.rendezvous = RendezvousStatus{2, 5, 1, 3};
  s.restart_request = RestartRequestStatus{"1732900000", *ParseTime("2026-11-29T10:05:00Z"),
                                           RestartMode::kInPlace,
                                           RestartRequestState::kPending, 2, -1};
  json encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["rendezvous"], json::parse(R"({"attempt": 2, "round": 5,
      "failureRestarts": 1, "requestedRestarts": 3})"));
  EXPECT_EQ(encoded["restartRequest"], json::parse(R"({"value": "1732900000",
      "time": "2026-11-29T10:05:00Z", "mode": "InPlace", "state": "Pending", "attempt": 2})"));
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(decoded->restart_request.has_value());
  EXPECT_EQ(decoded->restart_request->round, -1);  // unset until the launchers answered
  EXPECT_EQ(EncodeStatus(*decoded), encoded);
  s.restart_request->round = 4;
  encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["restartRequest"]["round"], 4);
  decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->restart_request->round, 4);
  EXPECT_EQ(decoded->rendezvous->requested_restarts, 3);
  EXPECT_FALSE(EncodeStatus(TrainingJobStatus{}).contains("rendezvous"));
  EXPECT_FALSE(EncodeStatus(TrainingJobStatus{}).contains("restartRequest"));
}

TEST(CodecTest, SpareFieldsRoundTrip) {
  json job = testing::MinimalJobJson();
  StatusOr<TrainingJob> plain = DecodeTrainingJob(job);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->spec.failure_policy.spare_replicas, 0);  // the schema's default
  EXPECT_EQ(EncodeSpec(plain->spec)["failurePolicy"]["spareReplicas"], 0);
  job["spec"]["failurePolicy"] = {{"spareReplicas", 2}};
  StatusOr<TrainingJob> spared = DecodeTrainingJob(job);
  ASSERT_TRUE(spared.ok()) << spared.status();
  EXPECT_EQ(spared->spec.failure_policy.spare_replicas, 2);
  EXPECT_EQ(EncodeSpec(spared->spec)["failurePolicy"]["spareReplicas"], 2);
  job["spec"]["failurePolicy"] = {{"spareReplicas", "two"}};
  StatusOr<TrainingJob> bad = DecodeTrainingJob(job);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.failurePolicy.spareReplicas"), std::string::npos)
      << bad.status();

  TrainingJobStatus s;
  s.spares = SpareStatus{2, 1, 3, 1, 2, {SpareServing{2, 0, "demo-spare-0", 4}}};
  const json encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["spares"], json::parse(R"({"desired": 2, "ready": 1, "promotions": 3,
      "attempt": 1, "attemptPromotions": 2,
      "serving": [{"nodeRank": 2, "spareIndex": 0, "pod": "demo-spare-0", "round": 4}]})"));
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->spares, s.spares);
  EXPECT_FALSE(EncodeStatus(TrainingJobStatus{}).contains("spares"));
}

TEST(CodecTest, GoodputRoundTrips) {
  TrainingJobStatus s;
  s.goodput = JobGoodput{0.5, 50, 100, 40, 20, 30, {{"Hang", 10}, {"NodeLost", 20}}, 10, 0.25,
                         *ParseTime("2026-11-29T10:09:00Z")};
  const json encoded = EncodeStatus(s);
  EXPECT_EQ(encoded["goodput"], json::parse(R"({"ratio": 0.5, "percent": 50,
      "productiveSeconds": 100, "placementSeconds": 40, "startupSeconds": 20,
      "recoverySeconds": 30, "recoveryByCause": [{"cause": "Hang", "seconds": 10},
      {"cause": "NodeLost", "seconds": 20}], "recomputeSeconds": 10, "stepSeconds": 0.25,
      "updatedAt": "2026-11-29T10:09:00Z"})"));
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(encoded);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->goodput, s.goodput);
  EXPECT_FALSE(EncodeStatus(TrainingJobStatus{}).contains("goodput"));
}

// goodput is the operator's own account: seconds beyond int64 saturate, and one it cannot read
// is dropped (the account starts again), never an unreadable status that stalls the job.
TEST(CodecTest, GoodputSaturatesAndIsDroppedRatherThanStallingTheJob) {
  json status = {{"goodput",
                  {{"ratio", 0.5},
                   {"productiveSeconds", 18446744073709551615ULL},
                   {"placementSeconds", 1e300},
                   {"recoveryByCause", {{{"cause", "Hang"}, {"seconds", 1e30}}}},
                   {"updatedAt", "2026-11-29T10:09:00Z"}}}};
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(status);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(decoded->goodput.has_value());
  EXPECT_EQ(decoded->goodput->productive_seconds, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(decoded->goodput->placement_seconds, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(decoded->goodput->recovery_by_cause.at(0).seconds,
            std::numeric_limits<int64_t>::max());
  for (const json& bad : {json("x"), json{{"ratio", 0.5}}, json{{"ratio", "half"}},
                          json{{"ratio", 0.5}, {"updatedAt", "yesterday"}},
                          json{{"ratio", 0.5},
                               {"updatedAt", "2026-11-29T10:09:00Z"},
                               {"recoveryByCause", {1}}}}) {
    status["goodput"] = bad;
    decoded = DecodeStatus(status);
    ASSERT_TRUE(decoded.ok()) << bad << ": " << decoded.status();
    EXPECT_FALSE(decoded->goodput.has_value()) << bad;
  }
}

TEST(CodecTest, EmptyExcludedNodesAreWrittenSoAMergePatchClearsThem) {
  const json encoded = EncodeStatus(TrainingJobStatus{});
  ASSERT_TRUE(encoded.contains("excludedNodes"));
  EXPECT_EQ(encoded["excludedNodes"], json::array());
  EXPECT_FALSE(encoded.contains("lastRestart"));
  EXPECT_FALSE(encoded.contains("capacity"));
}

TEST(CodecTest, CapacityIsDecodedButLeftToTheScheduler) {
  TrainingJobStatus s;
  s.capacity = Capacity{6, *ParseTime("2026-11-29T10:06:00Z")};
  EXPECT_FALSE(EncodeStatus(s).contains("capacity"));  // the controller never writes it
  const json capacity = EncodeCapacity(*s.capacity);
  EXPECT_EQ(capacity, json::parse(R"({"feasibleReplicas": 6,
      "observedTime": "2026-11-29T10:06:00Z"})"));
  json status = EncodeStatus(s);
  status["capacity"] = capacity;
  StatusOr<TrainingJobStatus> decoded = DecodeStatus(status);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_TRUE(decoded->capacity.has_value());
  EXPECT_EQ(decoded->capacity->feasible_replicas, 6);
  EXPECT_EQ(decoded->capacity->observed_time, *ParseTime("2026-11-29T10:06:00Z"));
}

// A status written before these fields existed decodes to their zero values.
TEST(CodecTest, StatusWithoutTheRestartFieldsDecodes) {
  StatusOr<TrainingJobStatus> s = DecodeStatus(json::parse(R"({"attempt": 1,
      "restarts": {"failures": 1, "disruptions": 0},
      "lastRestart": {"time": "2026-11-29T10:05:00Z", "reason": "PodFailed", "message": "m"}})"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->restarts.consecutive, 0);
  EXPECT_EQ(s->last_restart->attempt, 0);
  EXPECT_EQ(s->last_restart->backoff_seconds, 0);
  EXPECT_FALSE(s->last_restart->mode.has_value());
  EXPECT_TRUE(s->last_restart->nodes.empty());
  EXPECT_TRUE(s->excluded_nodes.empty());
  EXPECT_FALSE(s->capacity.has_value());
}

TEST(CodecTest, ElasticGrowCooldownRoundTripsAndDefaults) {
  json j = testing::MinimalJobJson();
  j["spec"]["replicas"] = 4;
  j["spec"]["elastic"] = {{"minReplicas", 2}, {"maxReplicas", 4}};
  StatusOr<TrainingJob> job = DecodeTrainingJob(j);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec.elastic->grow_cooldown_seconds, 60);  // the schema default
  j["spec"]["elastic"]["growCooldownSeconds"] = 15;
  job = DecodeTrainingJob(j);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->spec.elastic->grow_cooldown_seconds, 15);
  const json encoded = EncodeTrainingJob(*job);
  EXPECT_EQ(encoded["spec"]["elastic"]["growCooldownSeconds"], 15);
  StatusOr<TrainingJob> again = DecodeTrainingJob(encoded);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(EncodeTrainingJob(*again), encoded);
}

// Issue 18: a huge float where an integer belongs is an error (converting 1e300 to int64 was
// undefined behaviour); an integral float in range is still accepted. The error must be the
// range check's: without it the undefined cast happens and, on x86-64, yields INT64_MIN, which
// the integral test then refuses as "expected an integer" (so a test of the field name alone
// passed with the range check removed; GCC's -fsanitize=undefined does not include
// float-cast-overflow, so the unit tier's UBSan build did not catch the cast either).
TEST(CodecTest, HugeFloatIntegersAreOutOfRangeNotUndefined) {
  for (const char* big : {"1e300", "-1e300", "9.3e18", "-9.3e18"}) {
    StatusOr<TrainingJobStatus> s =
        DecodeStatus(json::parse(std::string(R"({"observedGeneration": )") + big + "}"));
    ASSERT_FALSE(s.ok()) << big;
    EXPECT_NE(s.status().message().find("status.observedGeneration: integer out of range"),
              std::string::npos)
        << big << ": " << s.status();
  }
  StatusOr<TrainingJobStatus> ok = DecodeStatus(json::parse(R"({"observedGeneration": 3.0,
      "attempt": -2147483648.0})"));
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->observed_generation, 3);
  EXPECT_EQ(ok->attempt, std::numeric_limits<int32_t>::min());
}

// Issue 18, hole 3: one field the operator cannot read (a condition with an empty type, an
// enum value of a newer version) costs that field only: the attempt and counters are kept, and
// the unread condition is kept as stored.
TEST(CodecTest, PartialDecodeKeepsEverythingItCanRead) {
  const json status = json::parse(R"({"attempt": 3, "state": "Running",
      "restarts": {"failures": 2, "disruptions": "many", "consecutive": 1},
      "conditions": [
        {"type": "Running", "status": "True", "reason": "Running", "message": "m",
         "lastTransitionTime": "2026-11-29T10:05:00Z"},
        {"type": "", "status": "True", "reason": "X", "message": "m",
         "lastTransitionTime": "2026-11-29T10:05:00Z"},
        {"type": "Quantum", "status": "Maybe", "reason": "X", "message": "m",
         "lastTransitionTime": "2026-11-29T10:05:00Z"}],
      "excludedNodes": [{"name": "n1", "until": "2026-11-29T10:05:00Z"}, {"name": ""}]})");
  UnreadStatus unread;
  const TrainingJobStatus s = DecodeStatusPartial(status, &unread);
  EXPECT_EQ(s.attempt, 3);
  EXPECT_EQ(s.state, JobState::kRunning);
  EXPECT_EQ(s.restarts.failures, 2);
  EXPECT_EQ(s.restarts.disruptions, 0);  // the one field lost
  EXPECT_EQ(s.restarts.consecutive, 1);
  ASSERT_EQ(s.conditions.size(), 1u);
  EXPECT_EQ(s.conditions[0].type, "Running");
  ASSERT_EQ(unread.conditions.size(), 2u);
  EXPECT_EQ(unread.conditions[1], status["conditions"][2]);
  ASSERT_EQ(s.excluded_nodes.size(), 1u);
  ASSERT_EQ(unread.errors.size(), 4u) << json(unread.errors).dump();
  EXPECT_NE(unread.errors[0].find("status.conditions[1].type"), std::string::npos);
  EXPECT_NE(unread.errors[1].find("status.conditions[2].status"), std::string::npos);
  EXPECT_NE(unread.errors[2].find("status.restarts.disruptions"), std::string::npos);
  EXPECT_NE(unread.errors[3].find("status.excludedNodes[1].name"), std::string::npos);
  // The strict decoder reports the first of them.
  StatusOr<TrainingJobStatus> strict = DecodeStatus(status);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().message(), unread.errors[0]);
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
