// The TrainingJob CRD against the real kube-apiserver: installation, examples, kubectl explain,
// short name, categories, printer columns, defaults, the status and scale subresources, and
// server-side apply merging roles by name. The C++ codec reads what the server stores and writes
// the status the server accepts, so the two schemas cannot drift apart unnoticed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>

#include "operator/api/children.h"
#include "operator/api/codec.h"
#include "operator/api/network_policy.h"
#include "operator/api/template_merge.h"
#include "operator/api/time.h"
#include "operator/api/validation.h"
#include "tests/integration/crd/kubectl.h"

namespace lockstep::crdtest {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class CrdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LS_REQUIRE_CLUSTER();
    InstallCrd();
  }

  // Applies a file from the source tree into the test namespace.
  void ApplyFile(const std::string& relative) {
    const KubectlResult r = Kubectl({"apply", "-n", ns_.name(), "-f", SourcePath(relative)});
    ASSERT_TRUE(r.ok()) << r.output;
  }

  json GetJob(const std::string& name) {
    const KubectlResult r = Kubectl({"get", "trainingjob", name, "-n", ns_.name(), "-o", "json"});
    EXPECT_TRUE(r.ok()) << r.output;
    return r.ok() ? json::parse(r.output, nullptr, false) : json();
  }

  void PatchStatus(const std::string& name, const api::TrainingJobStatus& status) {
    const json patch = {{"status", api::EncodeStatus(status)}};
    const KubectlResult r = Kubectl({"patch", "trainingjob", name, "-n", ns_.name(),
                                     "--subresource=status", "--type=merge", "-p", patch.dump()});
    ASSERT_TRUE(r.ok()) << r.output;
  }

  static api::TrainingJobStatus RunningStatus(const std::string& name) {
    api::TrainingJobStatus s;
    s.observed_generation = 1;
    s.state = api::JobState::kRunning;
    s.reason = "AllRanksJoined";
    s.message = "4 pods running";
    s.replicas = 4;
    s.ready_replicas = 3;
    s.workers_ready = "3/4";
    s.selector = "lockstep.dev/job-name=" + name;
    s.attempt = 2;
    s.restarts = {1, 1, 1};
    s.spares = api::SpareStatus{};
    s.spares->desired = 1;
    s.spares->ready = 1;
    s.spares->promotions = 3;
    s.start_time = *api::ParseTime("2026-11-29T10:00:00Z");
    s.last_restart = api::LastRestart{*api::ParseTime("2026-11-29T10:05:00Z"), "PodFailed",
                                      "pod x-worker-1 exited with code 1", 2, 10,
                                      api::RestartMode::kRecreate,
                                      {"gpu-node-3"}};
    s.excluded_nodes.push_back(
        api::ExcludedNode{"gpu-node-3", "NodeLeaseExpired", *api::ParseTime("2026-11-29T10:10:00Z")});
    s.progress =
        api::JobProgress{420, 1000, 42, 812.5, 600, *api::ParseTime("2026-11-29T10:09:00Z"), 400};
    s.goodput = api::JobGoodput{0.875, 87, 700, 30, 20, 50, {{"PodFailed", 50}}, 0, 0.25,
                                *api::ParseTime("2026-11-29T10:09:00Z")};
    s.conditions.push_back(api::Condition{"Running", api::ConditionStatus::kTrue, 1,
                                          *api::ParseTime("2026-11-29T10:06:00Z"), "AllRanksJoined",
                                          "4 pods running"});
    return s;
  }

  TestNamespace ns_;
};

TEST_F(CrdTest, IsEstablishedWithNamesAndSubresources) {
  const KubectlResult r = Kubectl({"get", "crd", "trainingjobs.lockstep.dev", "-o", "json"});
  ASSERT_TRUE(r.ok()) << r.output;
  const json crd = json::parse(r.output);
  EXPECT_EQ(crd["spec"]["names"]["shortNames"], json({"tj"}));
  EXPECT_EQ(crd["spec"]["names"]["categories"], json({"all", "lockstep"}));
  EXPECT_EQ(crd["spec"]["scope"], "Namespaced");
  const json& version = crd["spec"]["versions"][0];
  EXPECT_EQ(version["name"], "v1alpha1");
  EXPECT_EQ(version["subresources"]["scale"]["specReplicasPath"], ".spec.replicas");
  EXPECT_EQ(version["subresources"]["scale"]["statusReplicasPath"], ".status.replicas");
  EXPECT_EQ(version["subresources"]["scale"]["labelSelectorPath"], ".status.selector");
  EXPECT_TRUE(version["subresources"].contains("status"));
  const KubectlResult resources = Kubectl({"api-resources", "--api-group=lockstep.dev"});
  ASSERT_TRUE(resources.ok()) << resources.output;
  EXPECT_THAT(resources.output, HasSubstr("trainingjobs"));
  EXPECT_THAT(resources.output, HasSubstr("tj"));
}

TEST_F(CrdTest, EveryExampleIsAcceptedByServerDryRunAndDecodesInCxx) {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(SourcePath("examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    ++examples;
    const KubectlResult r = Kubectl(
        {"apply", "--dry-run=server", "-n", ns_.name(), "-o", "json", "-f", entry.path().string()});
    ASSERT_TRUE(r.ok()) << entry.path() << ": " << r.output;
    // The object as the server would store it (defaults applied) is valid for the operator too.
    StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(json::parse(r.output));
    ASSERT_TRUE(job.ok()) << entry.path() << ": " << job.status();
    EXPECT_TRUE(api::Validate(*job).empty())
        << entry.path() << ": " << api::ToStatus(api::Validate(*job));
  }
  EXPECT_GE(examples, 7);
  // Dry run stored nothing.
  const KubectlResult listed = Kubectl({"get", "tj", "-n", ns_.name(), "-o", "name"});
  ASSERT_TRUE(listed.ok()) << listed.output;
  EXPECT_EQ(listed.output, "");
}

// The children the C++ builder makes for every example are objects the real apiserver accepts
// (names, DNS fields, env, volumes, init container, ownerReferences), so the controller's creates
// cannot fail on shape.
TEST_F(CrdTest, ChildrenBuiltForEveryExampleAreAcceptedByTheApiserver) {
  for (const auto& entry : fs::directory_iterator(SourcePath("examples"))) {
    if (entry.path().extension() != ".yaml") continue;
    const KubectlResult created =
        Kubectl({"create", "-n", ns_.name(), "-o", "json", "-f", entry.path().string()});
    ASSERT_TRUE(created.ok()) << entry.path() << ": " << created.output;
    StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(json::parse(created.output));
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_FALSE(job->metadata.uid.empty());
    api::ChildrenOptions options;
    options.launcher_image = "lockstep/launcher:dev";
    options.attempt = 1;
    StatusOr<std::vector<json>> pods = api::BuildPods(*job, options);
    ASSERT_TRUE(pods.ok()) << pods.status();
    json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    list["items"].push_back(api::BuildService(*job));
    list["items"].push_back(api::BuildRdzvSecret(*job, "0123456789abcdef"));
    list["items"].push_back(api::BuildNetworkPolicy(*job, {"lockstep-system", {{"app", "op"}}}));
    for (json& pod : *pods) list["items"].push_back(std::move(pod));
    const KubectlResult children =
        Kubectl({"create", "--dry-run=server", "-n", ns_.name(), "-f", "-"}, list.dump());
    EXPECT_TRUE(children.ok()) << entry.path() << ": " << children.output;
    EXPECT_THAT(children.output, HasSubstr("service/" + job->metadata.name + " created"));
    EXPECT_THAT(children.output, HasSubstr("networkpolicy.networking.k8s.io/" +
                                           job->metadata.name + "-launcher created"));
    EXPECT_THAT(children.output,
                HasSubstr("pod/" + job->metadata.name + "-worker-0 created (server dry run)"));
  }
}

TEST_F(CrdTest, ExplainTeachesTheApi) {
  const KubectlResult r = Kubectl({"explain", "trainingjob.spec.failurePolicy"});
  ASSERT_TRUE(r.ok()) << r.output;
  for (const char* want : {"How failures are handled", "maxRestarts", "maxDisruptions",
                           "restartMode", "hangTimeoutSeconds", "backoff", "rules",
                           "Gang restarts allowed for failures of the job itself"}) {
    EXPECT_THAT(r.output, HasSubstr(want));
  }
  const KubectlResult deep =
      Kubectl({"explain", "trainingjob.spec.failurePolicy.rules.onExitCodes.operator"});
  ASSERT_TRUE(deep.ok()) << deep.output;
  EXPECT_THAT(deep.output, HasSubstr("the exit code is one of values"));
  const KubectlResult status = Kubectl({"explain", "tj.status.restarts.disruptions"});
  ASSERT_TRUE(status.ok()) << status.output;
  EXPECT_THAT(status.output, HasSubstr("node loss, eviction or preemption"));
  const KubectlResult startup =
      Kubectl({"explain", "trainingjob.spec.runPolicy.startupTimeoutSeconds"});
  ASSERT_TRUE(startup.ok()) << startup.output;
  EXPECT_THAT(startup.output, HasSubstr("StartupFailing condition"));
  EXPECT_THAT(startup.output, HasSubstr("Default"));
}

// The two template kinds (generated from the TrainingJob CRD, tests/unit/api/template_crd_test.cc)
// are served with their scopes, explained, and accept the examples; a job of examples/templates/
// stored by the server (defaults applied) merges with its template, as the server stored it, into
// a spec the operator decodes and validates.
TEST_F(CrdTest, TemplatesAreServedExplainedAndMergeIntoValidJobs) {
  const KubectlResult resources = Kubectl({"api-resources", "--api-group=lockstep.dev"});
  ASSERT_TRUE(resources.ok()) << resources.output;
  EXPECT_THAT(resources.output, ::testing::ContainsRegex("clustertrainingtemplates +ctt .* false"));
  EXPECT_THAT(resources.output, ::testing::ContainsRegex("trainingtemplates +tt .* true"));
  const KubectlResult explain = Kubectl({"explain", "clustertrainingtemplate.spec"});
  ASSERT_TRUE(explain.ok()) << explain.output;
  EXPECT_THAT(explain.output, HasSubstr("(status.resolvedTemplate)"));
  EXPECT_THAT(explain.output, HasSubstr("failurePolicy"));
  const KubectlResult env =
      Kubectl({"explain", "trainingtemplate.spec.template.spec.containers.env.name"});
  ASSERT_TRUE(env.ok()) << env.output;
  const KubectlResult ref = Kubectl({"explain", "trainingjob.spec.templateRef"});
  ASSERT_TRUE(ref.ok()) << ref.output;
  EXPECT_THAT(ref.output, HasSubstr("TemplateReady=False"));

  std::map<std::string, json> templates;
  std::vector<json> jobs;
  for (const auto& entry : fs::directory_iterator(SourcePath("examples/templates"))) {
    const KubectlResult r = Kubectl(
        {"apply", "--dry-run=server", "-n", ns_.name(), "-o", "json", "-f", entry.path().string()});
    ASSERT_TRUE(r.ok()) << entry.path() << ": " << r.output;
    const json stored = json::parse(r.output);
    if (stored["kind"] == "TrainingJob") {
      EXPECT_FALSE(stored["spec"].contains("framework")) << entry.path();
      jobs.push_back(stored);
    } else {
      templates[stored["kind"].get<std::string>() + "/" +
                stored["metadata"]["name"].get<std::string>()] = stored["spec"];
    }
  }
  ASSERT_GE(jobs.size(), 2u);
  for (json& stored : jobs) {
    StatusOr<std::optional<api::TemplateRef>> r = api::DecodeTemplateRef(stored["spec"]);
    ASSERT_TRUE(r.ok() && r->has_value()) << stored.dump();
    ASSERT_EQ(templates.count(api::Describe(**r)), 1u) << api::Describe(**r);
    StatusOr<json> merged = api::MergeTemplateSpec(templates[api::Describe(**r)], stored["spec"]);
    ASSERT_TRUE(merged.ok()) << merged.status();
    stored["spec"] = *merged;
    StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(stored);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_TRUE(api::Validate(*job).empty()) << api::ToStatus(api::Validate(*job));
  }
  // Without templateRef a job still needs its framework, template and image.
  const KubectlResult bare = Kubectl(
      {"apply", "--dry-run=server", "-n", ns_.name(), "-f", "-"},
      "apiVersion: lockstep.dev/v1alpha1\nkind: TrainingJob\nmetadata: {name: bare}\n"
      "spec: {framework: PyTorch, template: {spec: {containers: [{name: t, command: [x]}]}}}\n");
  EXPECT_FALSE(bare.ok());
  EXPECT_THAT(bare.output, HasSubstr("spec.template.spec.containers[].image is required"));
}

TEST_F(CrdTest, ShortNameCategoriesAndPrinterColumns) {
  ApplyFile("examples/pytorch-ddp.yaml");
  PatchStatus("pytorch-ddp", RunningStatus("pytorch-ddp"));

  const KubectlResult get = Kubectl({"get", "tj", "-n", ns_.name()});
  ASSERT_TRUE(get.ok()) << get.output;
  // What a user reads at a glance (issue 45 item 5).
  EXPECT_THAT(get.output,
              ::testing::ContainsRegex("NAME +STATE +WORKERS +RESTARTS +PROGRESS +GOODPUT +AGE\n"
                                       "pytorch-ddp +Running +3/4 +2 +42 +87 +[0-9]+s\n"));
  const KubectlResult wide = Kubectl({"get", "tj", "-n", ns_.name(), "-o", "wide"});
  ASSERT_TRUE(wide.ok()) << wide.output;
  // FRAMEWORK where it stood; RESTARTS is the total (gang attempts + in-place), and wide splits
  // it by cause, shows the standby spares and the promotions (status.spares), the Kueue queue
  // and why a pod cannot start (both empty here), and the template it names (none).
  EXPECT_THAT(wide.output,
              ::testing::ContainsRegex(
                  "NAME +FRAMEWORK +STATE +WORKERS +RESTARTS +PROGRESS +GOODPUT +AGE +ATTEMPT "
                  "+FAILURES "
                  "+DISRUPTIONS +SPARES +PROMOTIONS +INPLACE +QUEUE +STARTUP +REASON +TEMPLATE\n"
                  "pytorch-ddp +PyTorch +Running "));
  EXPECT_THAT(wide.output, ::testing::ContainsRegex("s +2 +1 +1 +1 +3 +0 +AllRanksJoined"));

  for (const char* category : {"lockstep", "all"}) {
    const KubectlResult r = Kubectl({"get", category, "-n", ns_.name(), "-o", "name"});
    ASSERT_TRUE(r.ok()) << r.output;
    EXPECT_THAT(r.output, HasSubstr("trainingjob.lockstep.dev/pytorch-ddp")) << category;
  }
}

TEST_F(CrdTest, StatusWrittenByTheCodecRoundTripsThroughTheSubresource) {
  ApplyFile("examples/pytorch-ddp.yaml");
  const api::TrainingJobStatus written = RunningStatus("pytorch-ddp");
  PatchStatus("pytorch-ddp", written);
  const json stored = GetJob("pytorch-ddp");
  StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(stored);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(api::EncodeStatus(job->status), api::EncodeStatus(written));
  EXPECT_EQ(job->metadata.generation, 1);  // status writes do not bump the generation

  // The main resource ignores status: a spec write cannot clobber what the operator wrote.
  json edit = stored;
  edit["status"]["state"] = "Failed";
  edit["spec"]["runPolicy"]["suspend"] = true;
  const KubectlResult replaced = Kubectl({"replace", "-n", ns_.name(), "-f", "-"}, edit.dump());
  ASSERT_TRUE(replaced.ok()) << replaced.output;
  const json after = GetJob("pytorch-ddp");
  EXPECT_EQ(after["status"]["state"], "Running");
  EXPECT_EQ(after["spec"]["runPolicy"]["suspend"], true);
  EXPECT_EQ(after["metadata"]["generation"], 2);
}

// Issue 18, hole 3: a status the operator could not read (a condition without a type, a counter
// beyond int32 or negative, a time without its zone, an excluded node without a name) is
// refused when written, whoever writes it; what the codec writes is still accepted.
TEST_F(CrdTest, AStatusTheOperatorCannotReadIsRefusedAtWrite) {
  ApplyFile("examples/pytorch-ddp.yaml");
  const json good = api::EncodeStatus(RunningStatus("pytorch-ddp"));
  auto patch = [&](const json& status) {
    return Kubectl({"patch", "trainingjob", "pytorch-ddp", "-n", ns_.name(),
                    "--subresource=status", "--type=merge", "-p",
                    json{{"status", status}}.dump()});
  };
  ASSERT_TRUE(patch(good).ok());
  struct Case {
    std::string field;
    std::function<void(json&)> breaks;
    bool codec_refuses = true;  // false: readable, but not what the operator ever writes
  };
  const std::vector<Case> cases = {
      {"status.conditions[0].type", [](json& s) { s["conditions"][0]["type"] = ""; }},
      {"status.conditions[0].type", [](json& s) { s["conditions"][0]["type"] = "two words"; },
       false},
      {"status.conditions[0].status", [](json& s) { s["conditions"][0]["status"] = "Maybe"; }},
      {"status.conditions[0].lastTransitionTime",
       [](json& s) { s["conditions"][0]["lastTransitionTime"] = "2026-11-29T10:06:00"; }},
      {"status.state", [](json& s) { s["state"] = "Exploded"; }},
      {"status.attempt", [](json& s) { s["attempt"] = 3000000000LL; }},
      {"status.restarts.failures", [](json& s) { s["restarts"]["failures"] = -1; }, false},
      {"status.excludedNodes[0].name", [](json& s) { s["excludedNodes"][0]["name"] = ""; }},
      {"status.startTime", [](json& s) { s["startTime"] = "yesterday"; }},
  };
  for (const Case& c : cases) {
    json bad = good;
    c.breaks(bad);
    // The codec cannot read it either: that is why the server must not store it.
    if (c.codec_refuses) {
      EXPECT_FALSE(api::DecodeStatus(bad).ok()) << c.field;
    }
    const KubectlResult r = patch(bad);
    EXPECT_FALSE(r.ok()) << c.field << " was accepted";
    EXPECT_THAT(r.output, HasSubstr(c.field)) << r.output;
  }
  StatusOr<api::TrainingJob> stored = api::DecodeTrainingJob(GetJob("pytorch-ddp"));
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(api::EncodeStatus(stored->status), good);
}

// Issue 18, hole 9: the pods the operator builds, its init container included, pass Pod Security
// "restricted" when the user's template does: created (server dry run) in a namespace that
// enforces it.
TEST_F(CrdTest, PodsOfARestrictedTemplatePassPodSecurityRestricted) {
  const KubectlResult labelled = Kubectl(
      {"label", "namespace", ns_.name(), "pod-security.kubernetes.io/enforce=restricted"});
  ASSERT_TRUE(labelled.ok()) << labelled.output;
  json tj = json::parse(R"({"apiVersion": "lockstep.dev/v1alpha1", "kind": "TrainingJob",
    "metadata": {"name": "restricted"},
    "spec": {"framework": "PyTorch", "replicas": 2, "template": {"spec": {
      "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
      "containers": [{"name": "trainer", "image": "trainer:1", "command": ["python", "t.py"],
        "securityContext": {"allowPrivilegeEscalation": false, "runAsUser": 1000,
                            "capabilities": {"drop": ["ALL"]}}}]}}}})");
  const KubectlResult created =
      Kubectl({"create", "-n", ns_.name(), "-o", "json", "-f", "-"}, tj.dump());
  ASSERT_TRUE(created.ok()) << created.output;
  StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(json::parse(created.output));
  ASSERT_TRUE(job.ok()) << job.status();
  api::ChildrenOptions options;
  options.launcher_image = "lockstep/launcher:dev";
  StatusOr<std::vector<json>> pods = api::BuildPods(*job, options);
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& pod : *pods) {
    const KubectlResult r =
        Kubectl({"create", "--dry-run=server", "-n", ns_.name(), "-f", "-"}, pod.dump());
    EXPECT_TRUE(r.ok()) << r.output;
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("violate"))) << r.output;
  }
}

TEST_F(CrdTest, ScaleSubresourceMovesSpecReplicasWithinElasticBounds) {
  ApplyFile("examples/pytorch-elastic.yaml");  // replicas 4, elastic 2..8
  PatchStatus("pytorch-elastic", RunningStatus("pytorch-elastic"));

  const KubectlResult scaled =
      Kubectl({"scale", "-n", ns_.name(), "tj/pytorch-elastic", "--replicas", "3"});
  ASSERT_TRUE(scaled.ok()) << scaled.output;
  EXPECT_EQ(GetJob("pytorch-elastic")["spec"]["replicas"], 3);

  const KubectlResult raw = Kubectl({"get", "--raw",
                                     "/apis/lockstep.dev/v1alpha1/namespaces/" + ns_.name() +
                                         "/trainingjobs/pytorch-elastic/scale"});
  ASSERT_TRUE(raw.ok()) << raw.output;
  const json scale = json::parse(raw.output);
  EXPECT_EQ(scale["spec"]["replicas"], 3);
  EXPECT_EQ(scale["status"]["replicas"], 4);
  EXPECT_EQ(scale["status"]["selector"], "lockstep.dev/job-name=pytorch-elastic");

  const KubectlResult too_big =
      Kubectl({"scale", "-n", ns_.name(), "tj/pytorch-elastic", "--replicas", "9"});
  EXPECT_FALSE(too_big.ok());
  EXPECT_THAT(too_big.output, HasSubstr("spec.replicas must be within"));
  EXPECT_EQ(GetJob("pytorch-elastic")["spec"]["replicas"], 3);
}

TEST_F(CrdTest, ServerDefaultsMatchTheCxxDefaults) {
  const std::string minimal = R"(
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata: {name: minimal}
spec:
  framework: Generic
  template:
    spec:
      containers: [{name: trainer, image: busybox, command: [sleep, "1"]}]
)";
  const KubectlResult r = Kubectl({"apply", "-n", ns_.name(), "-f", "-"}, minimal);
  ASSERT_TRUE(r.ok()) << r.output;
  const json stored = GetJob("minimal");
  EXPECT_EQ(stored["spec"]["replicas"], 1);
  EXPECT_EQ(stored["spec"]["failurePolicy"]["maxRestarts"], 3);
  EXPECT_EQ(stored["spec"]["runPolicy"]["cleanPodPolicy"], "Running");
  // What the server filled in equals what the C++ side assumes for an object stored without it.
  json bare = stored;
  bare["spec"].erase("failurePolicy");
  bare["spec"].erase("runPolicy");
  bare["spec"].erase("replicas");
  StatusOr<api::TrainingJob> job = api::DecodeTrainingJob(bare);
  ASSERT_TRUE(job.ok()) << job.status();
  const json encoded = api::EncodeSpec(job->spec);
  EXPECT_EQ(encoded["replicas"], stored["spec"]["replicas"]);
  EXPECT_EQ(encoded["failurePolicy"], stored["spec"]["failurePolicy"]);
  EXPECT_EQ(encoded["runPolicy"], stored["spec"]["runPolicy"]);
}

TEST_F(CrdTest, ServerSideApplyMergesRolesByName) {
  const KubectlResult first =
      Kubectl({"apply", "--server-side", "--field-manager=author", "-n", ns_.name(), "-f",
               SourcePath("examples/tensorflow-ps.yaml")});
  ASSERT_TRUE(first.ok()) << first.output;
  // A second manager owns only the ps role's replica count; the list merges by role name.
  const std::string patch = R"(
apiVersion: lockstep.dev/v1alpha1
kind: TrainingJob
metadata: {name: tensorflow-ps}
spec:
  roles:
  - name: ps
    replicas: 3
)";
  const KubectlResult second = Kubectl({"apply", "--server-side", "--force-conflicts",
                                        "--field-manager=autoscaler", "-n", ns_.name(), "-f", "-"},
                                       patch);
  ASSERT_TRUE(second.ok()) << second.output;
  const json roles = GetJob("tensorflow-ps")["spec"]["roles"];
  ASSERT_EQ(roles.size(), 2u);
  EXPECT_EQ(roles[0]["name"], "chief");
  EXPECT_EQ(roles[1]["name"], "ps");
  EXPECT_EQ(roles[1]["replicas"], 3);
  EXPECT_TRUE(roles[1].contains("template"));
}

}  // namespace
}  // namespace lockstep::crdtest
