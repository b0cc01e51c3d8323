#include "operator/api/children.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "operator/api/network_policy.h"
#include "operator/api/token.h"
#include "operator/api/validation.h"
#include "tests/unit/api/test_util.h"

namespace lockstep::api {
namespace {

using nlohmann::json;

ChildrenOptions Options(int32_t attempt = 0) {
  ChildrenOptions o;
  o.launcher_image = "lockstep/launcher:dev";
  o.attempt = attempt;
  return o;
}

std::map<std::string, std::string> EnvOf(const json& container) {
  std::map<std::string, std::string> env;
  for (const json& e : container["env"]) {
    env[e["name"].get<std::string>()] = e.value("value", std::string("<from>"));
  }
  return env;
}

std::vector<json> Pods(const TrainingJob& job, const ChildrenOptions& options = Options()) {
  StatusOr<std::vector<json>> pods = BuildPods(job, options);
  EXPECT_TRUE(pods.ok()) << pods.status();
  return pods.ok() ? *pods : std::vector<json>{};
}

TEST(ChildrenTest, HeadlessService) {
  const json svc = BuildService(testing::MinimalJob());
  EXPECT_EQ(svc["metadata"]["name"], "demo");
  EXPECT_EQ(svc["metadata"]["namespace"], "ns");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  // No selector: the operator writes the Service's EndpointSlice (endpoint_slice.h), so the
  // endpoint controllers leave it alone.
  EXPECT_FALSE(svc["spec"].contains("selector"));
  EXPECT_EQ(svc["spec"]["ports"][0]["port"], kRdzvPort);
  const json& owner = svc["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrainingJob");
  EXPECT_EQ(owner["apiVersion"], "lockstep.dev/v1alpha1");
  EXPECT_EQ(owner["uid"], "uid-1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);
}

TEST(ChildrenTest, RdzvSecretHoldsTheTokenBase64) {
  const json secret = BuildRdzvSecret(testing::MinimalJob(), "abc123");
  EXPECT_EQ(secret["metadata"]["name"], "demo-rdzv");
  EXPECT_EQ(secret["data"]["token"], "YWJjMTIz");
  EXPECT_EQ(secret["immutable"], true);
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["name"], "demo");
}

// Issues 18 and 44 (item 5): the job's own pods reach every port; the operator reaches the
// rendezvous port; anyone else reaches only the ports the templates declare, never the
// launcher's.
TEST(ChildrenTest, NetworkPolicyFencesEveryPortButTheDeclaredOnes) {
  const json np = BuildNetworkPolicy(testing::MinimalJob(),
                                     {"lockstep-system", {{"app.kubernetes.io/name", "lockstep"}}});
  EXPECT_EQ(np["apiVersion"], "networking.k8s.io/v1");
  EXPECT_EQ(np["metadata"]["name"], "demo-launcher");
  EXPECT_EQ(np["metadata"]["ownerReferences"][0]["uid"], "uid-1");
  const json own = {{"matchLabels", {{"lockstep.dev/job-name", "demo"}}}};
  EXPECT_EQ(np["spec"]["podSelector"], own);
  EXPECT_EQ(np["spec"]["policyTypes"], json({"Ingress"}));
  const json& rules = np["spec"]["ingress"];
  // No port declared: no rule for everyone.
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_EQ(rules[0], json({{"from", {{{"podSelector", own}}}}}));  // every port, own pods
  EXPECT_EQ(rules[1], json::parse(R"({"from": [{
      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "lockstep-system"}},
      "podSelector": {"matchLabels": {"app.kubernetes.io/name": "lockstep"}}}],
      "ports": [{"protocol": "TCP", "port": 29400}]})"));
  // An operator outside the cluster has no rule of its own.
  EXPECT_EQ(BuildNetworkPolicy(testing::MinimalJob(), {})["spec"]["ingress"].size(), 1u);
}

TEST(ChildrenTest, NetworkPolicyOpensTheDeclaredPortsToEveryoneButNeverTheLaunchers) {
  TrainingJob job = testing::MinimalJob();
  json& trainer = job.spec.pod_template["spec"]["containers"][0];
  trainer["ports"] = json::parse(R"([
      {"name": "dashboard", "containerPort": 8265},
      {"containerPort": 9090, "protocol": "TCP"},
      {"containerPort": 8265},
      {"containerPort": 29400}, {"containerPort": 29500}, {"containerPort": 29501},
      {"containerPort": 70000}, {"containerPort": 0}, {"containerPort": "80"},
      {"containerPort": 5353, "protocol": "UDP"}, {"containerPort": 7, "protocol": "ICMP"}])");
  Role ps;
  ps.name = "ps";
  ps.replicas = 1;
  ps.pod_template = json::parse(R"({"spec": {
      "initContainers": [{"name": "exporter", "restartPolicy": "Always",
                          "ports": [{"containerPort": 9100}]}],
      "containers": [{"name": "ps", "ports": [{"containerPort": 2222}]}]}})");
  job.spec.roles.push_back(ps);
  const json everyone = BuildNetworkPolicy(job, {})["spec"]["ingress"][1];
  EXPECT_FALSE(everyone.contains("from"));
  EXPECT_EQ(everyone["ports"], json::parse(R"([
      {"protocol": "TCP", "port": 2222}, {"protocol": "TCP", "port": 8265},
      {"protocol": "TCP", "port": 9090}, {"protocol": "TCP", "port": 9100},
      {"protocol": "UDP", "port": 5353}])"));
}

TEST(ChildrenTest, TokensAreRandomHex) {
  StatusOr<std::string> a = GenerateRdzvToken();
  StatusOr<std::string> b = GenerateRdzvToken();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(std::regex_match(*a, std::regex("^[0-9a-f]{64}$"))) << *a;
  EXPECT_NE(*a, *b);
}

TEST(ChildrenTest, FourWorkerPyTorchPods) {
  TrainingJob job = testing::MinimalJob();
  job.spec.replicas = 4;
  job.spec.procs_per_pod = 8;
  job.spec.failure_policy.hang_timeout_seconds = 900;
  job.spec.pod_template["spec"]["containers"][0]["resources"] = {
      {"limits", {{"nvidia.com/gpu", "8"}}}};
  ChildrenOptions options = Options(2);
  options.launcher_max_restarts = 3;
  const std::vector<json> pods = Pods(job, options);
  ASSERT_EQ(pods.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    const json& pod = pods[static_cast<size_t>(i)];
    const std::string name = "demo-worker-" + std::to_string(i);
    EXPECT_EQ(pod["metadata"]["name"], name);
    EXPECT_EQ(pod["metadata"]["labels"], json({{"lockstep.dev/job-name", "demo"},
                                               {"lockstep.dev/role", "worker"},
                                               {"lockstep.dev/replica-index", std::to_string(i)},
                                               {"lockstep.dev/attempt", "2"}}));
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["controller"], true);
    const json& spec = pod["spec"];
    EXPECT_EQ(spec["schedulerName"], "lockstep");
    EXPECT_EQ(spec["hostname"], name);
    EXPECT_EQ(spec["subdomain"], "demo");
    EXPECT_EQ(spec["restartPolicy"], "Never");
    const json& trainer = spec["containers"][0];
    EXPECT_EQ(trainer["command"], json({"/lockstep/bin/lockstep-launcher", "--", "python",
                                        "train.py", "--epochs", "3"}));
    EXPECT_FALSE(trainer.contains("args"));
    EXPECT_EQ(trainer["resources"], json({{"limits", {{"nvidia.com/gpu", "8"}}}}));  // untouched
    const auto env = EnvOf(trainer);
    EXPECT_EQ(env.at("LOCKSTEP_FRAMEWORK"), "pytorch");
    EXPECT_EQ(env.at("LOCKSTEP_JOB_NAME"), "demo");
    EXPECT_EQ(env.at("LOCKSTEP_ROLE"), "worker");
    EXPECT_EQ(env.at("LOCKSTEP_ROLE_INDEX"), std::to_string(i));
    EXPECT_EQ(env.at("LOCKSTEP_NODE_RANK"), std::to_string(i));
    EXPECT_EQ(env.at("LOCKSTEP_NNODES"), "4");
    EXPECT_EQ(env.at("LOCKSTEP_NPROC_PER_NODE"), "8");
    EXPECT_EQ(env.at("LOCKSTEP_RDZV_ENDPOINT"), "demo-worker-0.demo.ns.svc:29400");
    EXPECT_EQ(env.at("LOCKSTEP_RDZV_ID"), "uid-1");
    EXPECT_EQ(env.at("LOCKSTEP_ATTEMPT"), "2");
    EXPECT_EQ(env.at("LOCKSTEP_TOKEN_FILE"), "/var/run/lockstep/rdzv/token");
    EXPECT_EQ(env.at("LOCKSTEP_MAX_RESTARTS"), "3");
    EXPECT_EQ(env.at("LOCKSTEP_HANG_TIMEOUT"), "900");
    EXPECT_EQ(env.at("LOCKSTEP_ADVERTISE_ADDR"), name + ".demo.ns.svc");
    EXPECT_EQ(env.at("LOCKSTEP_MASTER_PORT"), "29500");  // the ports the NetworkPolicy names
    EXPECT_EQ(env.at("LOCKSTEP_KV_PORT"), "29501");
    EXPECT_EQ(env.count("LOCKSTEP_TOKEN"), 0u);  // the token is only in the mounted file
    // The pod and node names come from the downward API (a lost member is named by them).
    std::map<std::string, std::string> field_refs;
    for (const json& e : trainer["env"]) {
      if (e.contains("valueFrom")) {
        field_refs[e["name"]] = e["valueFrom"]["fieldRef"]["fieldPath"].get<std::string>();
      }
    }
    EXPECT_EQ(field_refs["LOCKSTEP_POD_NAME"], "metadata.name");
    EXPECT_EQ(field_refs["LOCKSTEP_NODE_NAME"], "spec.nodeName");
    EXPECT_EQ(field_refs["LOCKSTEP_POD_UID"], "metadata.uid");

    const json& init = spec["initContainers"][0];
    EXPECT_EQ(init["name"], "lockstep-launcher-install");
    EXPECT_EQ(init["image"], "lockstep/launcher:dev");
    EXPECT_EQ(init["command"],
              json({"cp", "/lockstep-launcher", "/lockstep/bin/lockstep-launcher"}));
    // Pod Security "restricted" (issue 18).
    const json& sc = init["securityContext"];
    EXPECT_EQ(sc["allowPrivilegeEscalation"], false);
    EXPECT_EQ(sc["capabilities"]["drop"], json({"ALL"}));
    EXPECT_EQ(sc["runAsNonRoot"], true);
    EXPECT_EQ(sc["runAsUser"], 65532);
    EXPECT_EQ(sc["seccompProfile"]["type"], "RuntimeDefault");
    EXPECT_THAT(spec["volumes"].dump(), ::testing::HasSubstr(R"("secretName":"demo-rdzv")"));
    EXPECT_THAT(spec["volumes"].dump(), ::testing::HasSubstr(R"("emptyDir":{})"));
    EXPECT_THAT(trainer["volumeMounts"].dump(),
                ::testing::HasSubstr(R"("mountPath":"/var/run/lockstep/rdzv")"));
  }
}

TEST(ChildrenTest, SparesAreWorkerPodsWithoutANodeRankAndServedRanksAreNotRecreated) {
  TrainingJob job = testing::MinimalJob();
  job.spec.replicas = 3;
  job.spec.failure_policy.spare_replicas = 1;
  ChildrenOptions options = Options(1);
  options.spare_indexes = {1};
  options.served_node_ranks = {2};  // spare 0 serves node-rank 2: demo-worker-2 is not built
  options.role_placement["worker"].node_selector = {{"pool", "gpu"}};
  const std::vector<json> pods = Pods(job, options);
  ASSERT_EQ(pods.size(), 3u);
  EXPECT_EQ(pods[0]["metadata"]["name"], "demo-worker-0");
  EXPECT_EQ(pods[1]["metadata"]["name"], "demo-worker-1");
  const json& spare = pods[2];
  EXPECT_EQ(spare["metadata"]["name"], "demo-spare-1");
  EXPECT_EQ(spare["metadata"]["labels"]["lockstep.dev/role"], "spare");
  EXPECT_EQ(spare["metadata"]["labels"]["lockstep.dev/replica-index"], "1");
  EXPECT_EQ(spare["metadata"]["labels"]["lockstep.dev/attempt"], "1");
  EXPECT_EQ(spare["spec"]["hostname"], "demo-spare-1");
  EXPECT_EQ(spare["spec"]["nodeSelector"], json({{"pool", "gpu"}}));  // the workers' placement
  const auto env = EnvOf(spare["spec"]["containers"][0]);
  EXPECT_EQ(env.at("LOCKSTEP_SPARE"), "1");
  EXPECT_EQ(env.count("LOCKSTEP_NODE_RANK"), 0u);
  EXPECT_EQ(env.at("LOCKSTEP_ROLE_INDEX"), "1");
  EXPECT_EQ(env.at("LOCKSTEP_NNODES"), "3");
  EXPECT_EQ(env.at("LOCKSTEP_RDZV_ENDPOINT"), "demo-worker-0.demo.ns.svc:29400");
  EXPECT_EQ(env.at("LOCKSTEP_ADVERTISE_ADDR"), "demo-spare-1.demo.ns.svc");
}

TEST(ChildrenTest, TensorFlowChiefIsRankZeroAndHostsRendezvous) {
  TrainingJob job = testing::MinimalJob();
  job.spec.framework = Framework::kTensorFlow;
  const json tmpl = job.spec.pod_template;
  job.spec.roles = {Role{"ps", 2, std::nullopt, tmpl}, Role{"chief", 1, std::nullopt, tmpl}};
  const std::vector<json> pods = Pods(job);
  std::vector<std::string> names;
  for (const json& p : pods) names.push_back(p["metadata"]["name"]);
  EXPECT_THAT(names, ::testing::ElementsAre("demo-chief-0", "demo-worker-0", "demo-worker-1",
                                            "demo-ps-0", "demo-ps-1"));
  const auto ps1 = EnvOf(pods[4]["spec"]["containers"][0]);
  EXPECT_EQ(ps1.at("LOCKSTEP_ROLE"), "ps");
  EXPECT_EQ(ps1.at("LOCKSTEP_ROLE_INDEX"), "1");
  EXPECT_EQ(ps1.at("LOCKSTEP_NODE_RANK"), "4");
  EXPECT_EQ(ps1.at("LOCKSTEP_NNODES"), "5");
  EXPECT_EQ(ps1.at("LOCKSTEP_FRAMEWORK"), "tensorflow");
  EXPECT_EQ(ps1.at("LOCKSTEP_RDZV_ENDPOINT"), "demo-chief-0.demo.ns.svc:29400");
  EXPECT_EQ(pods[4]["metadata"]["labels"]["lockstep.dev/role"], "ps");
}

TEST(ChildrenTest, ElasticNnodesIsARangeAndAttemptSizeIsHonoured) {
  TrainingJob job = testing::MinimalJob();
  job.spec.replicas = 4;
  job.spec.elastic = ElasticPolicy{2, 6, 60};
  job.spec.roles = {Role{"head", 1, std::nullopt, job.spec.pod_template}};
  ChildrenOptions options = Options();
  options.worker_replicas = 3;  // capacity was short this attempt
  const std::vector<json> pods = Pods(job, options);
  ASSERT_EQ(pods.size(), 4u);
  EXPECT_EQ(EnvOf(pods[0]["spec"]["containers"][0]).at("LOCKSTEP_NNODES"), "3:7");
}

// InPlace: the launchers get what is left of maxRestarts (their restarts count as failures).
// The budget is the controller's to compute (operator/controller/inplace_policy.h); the pods
// carry what they are given, and no in-place restart when nothing is given.
TEST(ChildrenTest, TheLaunchersGetTheRestartBudgetTheyAreGiven) {
  const TrainingJob job = testing::MinimalJob();
  EXPECT_EQ(EnvOf(Pods(job)[0]["spec"]["containers"][0]).at("LOCKSTEP_MAX_RESTARTS"), "0");
  ChildrenOptions options = Options();
  options.launcher_max_restarts = 4;
  for (const json& pod : Pods(job, options)) {
    EXPECT_EQ(EnvOf(pod["spec"]["containers"][0]).at("LOCKSTEP_MAX_RESTARTS"), "4");
  }
}

// The launchers learn which trainer exit codes end the job, so they spend no in-place restart on
// them: the first matching rule decides, as the controller's does.
TEST(ChildrenTest, FailJobRulesBecomeTheLaunchersFailExitCodes) {
  TrainingJob job = testing::MinimalJob();
  auto env = [&job] { return EnvOf(Pods(job)[0]["spec"]["containers"][0]); };
  EXPECT_EQ(env().count("LOCKSTEP_FAIL_EXIT_CODES"), 0u);
  FailureRule restart_3{"retry-3", RuleAction::kRestartJob, {std::nullopt, ExitCodeOperator::kIn, {3}}};
  FailureRule fail_2_to_4{"bad", RuleAction::kFailJob,
                          {std::nullopt, ExitCodeOperator::kIn, {2, 3, 4, 9}}};
  FailureRule sidecar{"sidecar", RuleAction::kFailJob,
                      {std::string("sidecar"), ExitCodeOperator::kIn, {7}}};
  job.spec.failure_policy.rules = {restart_3, fail_2_to_4, sidecar};
  EXPECT_EQ(env().at("LOCKSTEP_FAIL_EXIT_CODES"), "2,4,9");
  FailureRule all_but_1{"not-1", RuleAction::kFailJob,
                        {std::nullopt, ExitCodeOperator::kNotIn, {1, 137}}};
  job.spec.failure_policy.rules = {all_but_1};
  EXPECT_EQ(env().at("LOCKSTEP_FAIL_EXIT_CODES"), "2-136,138-255");
}

TEST(ChildrenTest, TensorFlowPodsReserveTheTaskPort) {
  TrainingJob job = testing::MinimalJob();
  EXPECT_EQ(EnvOf(Pods(job)[0]["spec"]["containers"][0]).count("LOCKSTEP_FRAMEWORK_PORT"), 0u);
  job.spec.framework = Framework::kTensorFlow;
  EXPECT_EQ(EnvOf(Pods(job)[0]["spec"]["containers"][0]).at("LOCKSTEP_FRAMEWORK_PORT"), "2222");
}

// The grace the kubelet gives a deleted pod (suspend, preemption, eviction) and the launcher's,
// one second less, so the launcher's own SIGKILL of a stuck trainer comes first.
TEST(ChildrenTest, GraceComputation) {
  EXPECT_EQ(PodGracePeriodSeconds(json::object()), 30);
  EXPECT_EQ(PodGracePeriodSeconds(json({{"terminationGracePeriodSeconds", 120}})), 120);
  EXPECT_EQ(PodGracePeriodSeconds(json({{"terminationGracePeriodSeconds", 0}})), 0);
  EXPECT_EQ(PodGracePeriodSeconds(json({{"terminationGracePeriodSeconds", -5}})), 30);
  EXPECT_EQ(PodGracePeriodSeconds(json({{"terminationGracePeriodSeconds", "60"}})), 30);
  EXPECT_EQ(PodGracePeriodSeconds(json({{"terminationGracePeriodSeconds", 2.5}})), 30);
  EXPECT_EQ(PodGracePeriodSeconds(json::array()), 30);
  EXPECT_EQ(LauncherGracePeriodSeconds(30), 29);
  EXPECT_EQ(LauncherGracePeriodSeconds(5), 4);
  EXPECT_EQ(LauncherGracePeriodSeconds(1), 0);
  EXPECT_EQ(LauncherGracePeriodSeconds(0), 0);
}

TEST(ChildrenTest, PodsGetTheirGraceAndTheLauncherKnowsIt) {
  TrainingJob job = testing::MinimalJob();
  ASSERT_FALSE(job.spec.pod_template["spec"].contains("terminationGracePeriodSeconds"));
  for (const json& pod : Pods(job)) {  // none in the template: Kubernetes' default, written out
    EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 30);
    EXPECT_EQ(EnvOf(pod["spec"]["containers"][0]).at("LOCKSTEP_GRACE_PERIOD"), "29");
  }
  job.spec.pod_template["spec"]["terminationGracePeriodSeconds"] = 90;
  job.spec.pod_template["spec"]["containers"][0]["env"] =
      json::array({{{"name", "LOCKSTEP_GRACE_PERIOD"}, {"value", "600"}}});  // the contract wins
  for (const json& pod : Pods(job)) {
    EXPECT_EQ(pod["spec"]["terminationGracePeriodSeconds"], 90);
    const json& env = pod["spec"]["containers"][0]["env"];
    int seen = 0;
    for (const json& e : env) {
      if (e["name"] == "LOCKSTEP_GRACE_PERIOD") {
        ++seen;
        EXPECT_EQ(e["value"], "89");
      }
    }
    EXPECT_EQ(seen, 1) << env.dump();
  }
}

TEST(ChildrenTest, KeepsUserFieldsAndLetsTheContractWin) {
  TrainingJob job = testing::MinimalJob();
  job.spec.priority_class_name = "high";
  json& tmpl = job.spec.pod_template;
  tmpl["metadata"] = {{"labels", {{"team", "a"}, {"lockstep.dev/role", "spoofed"}}},
                      {"annotations", {{"note", "x"}}}};
  tmpl["spec"]["nodeSelector"] = {{"gpu", "h100"}};
  tmpl["spec"]["schedulerName"] = "default-scheduler";
  tmpl["spec"]["initContainers"] = json::array({{{"name", "fetch"}, {"image", "busybox"}}});
  tmpl["spec"]["volumes"] = json::array({{{"name", "data"}, {"emptyDir", json::object()}}});
  tmpl["spec"]["containers"][0]["env"] =
      json::array({{{"name", "NCCL_DEBUG"}, {"value", "INFO"}},
                   {{"name", "LOCKSTEP_NNODES"}, {"value", "99"}}});
  tmpl["spec"]["containers"].push_back({{"name", "sidecar"}, {"image", "s"}});
  const json pod = Pods(job)[0];
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "a");
  EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/role"], "worker");
  EXPECT_EQ(pod["metadata"]["annotations"]["note"], "x");
  EXPECT_EQ(pod["spec"]["nodeSelector"]["gpu"], "h100");
  EXPECT_EQ(pod["spec"]["schedulerName"], "lockstep");
  EXPECT_EQ(pod["spec"]["priorityClassName"], "high");
  ASSERT_EQ(pod["spec"]["initContainers"].size(), 2u);
  EXPECT_EQ(pod["spec"]["initContainers"][1]["name"], "fetch");
  EXPECT_EQ(pod["spec"]["volumes"][0]["name"], "data");
  EXPECT_EQ(pod["spec"]["volumes"].size(), 3u);
  const auto env = EnvOf(pod["spec"]["containers"][0]);
  EXPECT_EQ(env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(env.at("LOCKSTEP_NNODES"), "2");
  EXPECT_EQ(pod["spec"]["containers"][1], json({{"name", "sidecar"}, {"image", "s"}}));
}

TEST(ChildrenTest, ErrorsInsteadOfCrashing) {
  TrainingJob job = testing::MinimalJob();
  EXPECT_FALSE(BuildPods(job, ChildrenOptions{}).ok());  // no launcher image
  job.spec.pod_template["spec"]["containers"][0].erase("command");
  StatusOr<std::vector<json>> pods = BuildPods(job, Options());
  ASSERT_FALSE(pods.ok());
  EXPECT_THAT(pods.status().message(), ::testing::HasSubstr("no command"));
}

TEST(ChildrenTest, JobSelector) { EXPECT_EQ(JobSelector("demo"), "lockstep.dev/job-name=demo"); }

}  // namespace
}  // namespace lockstep::api

namespace lockstep::api {
namespace {

// Specs that bypassed every check (built in code, not decoded): the builder and the validator
// must answer with errors, never throw or crash.
class MalformedTemplateTest : public ::testing::TestWithParam<const char*> {};

TEST_P(MalformedTemplateTest, ValidateAndBuildReturnErrors) {
  TrainingJob job = testing::MinimalJob();
  job.spec.pod_template = nlohmann::json::parse(GetParam());
  std::vector<FieldError> errors;
  EXPECT_NO_THROW(errors = Validate(job));
  EXPECT_FALSE(errors.empty());
  ChildrenOptions options;
  options.launcher_image = "l";
  EXPECT_NO_THROW({
    StatusOr<std::vector<nlohmann::json>> pods = BuildPods(job, options);
    EXPECT_FALSE(pods.ok());
  });
}

INSTANTIATE_TEST_SUITE_P(Table, MalformedTemplateTest,
                         ::testing::Values(R"("x")", R"({"spec": "x"})", R"({"spec": {}})",
                                           R"({"spec": {"containers": [5]}})",
                                           R"({"spec": {"containers": [{"name": 5, "image": 7,
                                                "command": "x"}]}})",
                                           R"({"metadata": 3, "spec": {"containers": []}})"));

}  // namespace
}  // namespace lockstep::api
