// The job controller's lifecycle against the real apiserver: children, success, failure,
// suspend/resume, TTL, active deadline, and the time-to-running histogram.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <thread>

#include "tests/integration/controller/fixture.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

bool Has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string Env(const json& container, const std::string& name) {
  for (const json& e : container.value("env", json::array())) {
    if (e.value("name", "") == name) return e.contains("value") ? e["value"].get<std::string>() : "<ref>";
  }
  return "";
}

bool StateIs(const json& job, const std::string& state) {
  return job.contains("status") && job["status"].value("state", "") == state;
}

// lockstep_job_time_to_running_seconds_count for the namespace, 0 when absent.
int TimeToRunningCount(int port, const std::string& ns) {
  StatusOr<std::string> body = HttpGet(port, "/metrics");
  if (!body.ok()) return -1;
  const std::regex re("lockstep_job_time_to_running_seconds_count\\{[^}]*namespace=\"" + ns +
                      "\"[^}]*\\} ([0-9]+)");
  std::smatch m;
  return std::regex_search(*body, m, re) ? std::stoi(m[1]) : 0;
}

TEST_F(OperatorTest, FourWorkerJobGetsItsChildrenAndTheyAreCollectedWithIt) {
  json created = CreateJob(MakeJob("four", 4));
  const std::string uid = created["metadata"]["uid"];
  ASSERT_TRUE(WaitForPods("four", 4));
  auto svc = client().Get(kube::resources::Services(), ns(), "four");
  auto secret = client().Get(kube::resources::Secrets(), ns(), "four-rdzv");
  ASSERT_TRUE(svc.ok()) << svc.status();
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ((*svc)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*svc)["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ((*secret)["metadata"]["ownerReferences"][0]["uid"], uid);
  // Issue 18: the job's NetworkPolicy, with the Service and the Secret.
  const kube::ResourceRef policies = kube::resources::NetworkPolicies();
  StatusOr<json> policy = client().Get(policies, ns(), "four-launcher");
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ((*policy)["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ((*policy)["spec"]["podSelector"]["matchLabels"]["lockstep.dev/job-name"], "four");
  EXPECT_EQ((*policy)["spec"]["policyTypes"], json({"Ingress"}));

  auto pods = ListJobPods(client(), ns(), "four");
  ASSERT_TRUE(pods.ok());
  std::vector<std::string> names;
  for (const json& pod : *pods) {
    const std::string name = pod["metadata"]["name"];
    names.push_back(name);
    const json& owner = pod["metadata"]["ownerReferences"][0];
    EXPECT_EQ(owner["uid"], uid);
    EXPECT_EQ(owner["controller"], true);
    EXPECT_EQ(owner["blockOwnerDeletion"], true);
    EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/role"], "worker");
    EXPECT_EQ(pod["metadata"]["labels"]["lockstep.dev/attempt"], "0");
    EXPECT_EQ(pod["spec"]["schedulerName"], "lockstep");
    EXPECT_EQ(pod["spec"]["hostname"], name);
    EXPECT_EQ(pod["spec"]["subdomain"], "four");
    EXPECT_EQ(pod["spec"]["initContainers"][0]["image"], "lockstep/launcher:test");
    const json& trainer = pod["spec"]["containers"][0];
    EXPECT_EQ(trainer["command"][0], "/lockstep/bin/lockstep-launcher");
    EXPECT_EQ(trainer["resources"]["limits"]["nvidia.com/gpu"], "1");  // untouched
    EXPECT_EQ(Env(trainer, "LOCKSTEP_RDZV_ENDPOINT"), "four-worker-0.four." + ns() + ".svc:29400");
    EXPECT_EQ(Env(trainer, "LOCKSTEP_FRAMEWORK"), "pytorch");
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"four-worker-0", "four-worker-1", "four-worker-2",
                                             "four-worker-3"}));

  // The pass that creates the pods writes Pending/CreatingPods (it saw none yet); the status to
  // check is the one written after the operator has seen all four.
  auto job = WaitForJob(client(), ns(), "four", [](const json& j) {
    return j.contains("status") && j["status"].value("state", "") == "Scheduling";
  });
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ((*job)["status"]["selector"], "lockstep.dev/job-name=four");
  EXPECT_EQ((*job)["status"]["replicas"], 4);
  EXPECT_EQ((*job)["status"]["observedGeneration"], 1);
  EXPECT_EQ((*job)["status"]["workersReady"], "0/4");
  EXPECT_EQ((*job)["status"]["reason"], "WaitingForScheduler");
  // Scheduled is the gang scheduler's alone (off here: --gang-scheduler=false).
  EXPECT_EQ(ConditionReason(*job, "Scheduled"), "");
  EXPECT_TRUE((*job)["status"].contains("startTime"));

  kube::DeleteOptions del;
  del.propagation_policy = "Background";
  ASSERT_TRUE(client().Delete(kube::resources::TrainingJobs(), ns(), "four", del).ok());
  EXPECT_TRUE(WaitForPods("four", 0, std::chrono::seconds(90)))
      << "the garbage collector did not remove the pods";
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        return IsNotFound(client().Get(kube::resources::Services(), ns(), "four").status()) &&
               IsNotFound(client().Get(kube::resources::Secrets(), ns(), "four-rdzv").status()) &&
               IsNotFound(client().Get(policies, ns(), "four-launcher").status());
      },
      seconds(30)));
}

// Issue 18, hole 9: a `<job>-rdzv` Secret that exists before the job, not created by it, holds
// a token someone else chose: the job's pods must never mount it. The operator refuses with a
// SecretNotOwned event and creates no pod until the Secret is gone, then makes its own.
TEST_F(OperatorTest, ARendezvousSecretTheJobDoesNotOwnIsRefused) {
  const json foreign = {{"apiVersion", "v1"},
                        {"kind", "Secret"},
                        {"metadata", {{"name", "taken-rdzv"}}},
                        {"stringData", {{"token", "chosen-by-someone-else"}}}};
  ASSERT_TRUE(client().Create(kube::resources::Secrets(), ns(), foreign).ok());
  CreateJob(MakeJob("taken", 2));
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        const std::vector<std::string> reasons = EventReasons(client(), ns(), "taken");
        return std::find(reasons.begin(), reasons.end(), "SecretNotOwned") != reasons.end();
      },
      seconds(30)))
      << "no SecretNotOwned event; log: " << op_->log_path();
  auto pods = ListJobPods(client(), ns(), "taken");
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->empty()) << pods->size() << " pods created with a foreign token";

  ASSERT_TRUE(client().Delete(kube::resources::Secrets(), ns(), "taken-rdzv").ok());
  ASSERT_TRUE(WaitForPods("taken", 2)) << "log: " << op_->log_path();
  StatusOr<json> own = client().Get(kube::resources::Secrets(), ns(), "taken-rdzv");
  ASSERT_TRUE(own.ok()) << own.status();
  ASSERT_TRUE((*own)["metadata"].contains("ownerReferences"));
  StatusOr<json> job = client().Get(kube::resources::TrainingJobs(), ns(), "taken");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ((*own)["metadata"]["ownerReferences"][0]["uid"], (*job)["metadata"]["uid"]);
}

// Issue 44 item 5: the job's `<job>-launcher` NetworkPolicy cannot be squatted. One made before
// the job by someone else (here: allow everything) would stand in for the job's fence; the
// operator refuses it as it refuses a foreign Secret, then makes its own once it is gone.
TEST_F(OperatorTest, ANetworkPolicyTheJobDoesNotOwnIsRefused) {
  const kube::ResourceRef policies = kube::resources::NetworkPolicies();
  const json allow_all = {
      {"apiVersion", "networking.k8s.io/v1"},
      {"kind", "NetworkPolicy"},
      {"metadata", {{"name", "squat-launcher"}}},
      {"spec", {{"podSelector", json::object()}, {"ingress", json::array({json::object()})}}}};
  ASSERT_TRUE(client().Create(policies, ns(), allow_all).ok());
  CreateJob(MakeJob("squat", 2));
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        const std::vector<std::string> reasons = EventReasons(client(), ns(), "squat");
        return std::find(reasons.begin(), reasons.end(), "NetworkPolicyNotOwned") !=
               reasons.end();
      },
      seconds(30)))
      << "no NetworkPolicyNotOwned event; log: " << op_->log_path();
  auto pods = ListJobPods(client(), ns(), "squat");
  ASSERT_TRUE(pods.ok());
  EXPECT_TRUE(pods->empty()) << pods->size() << " pods created behind a foreign NetworkPolicy";

  ASSERT_TRUE(client().Delete(policies, ns(), "squat-launcher").ok());
  ASSERT_TRUE(WaitForPods("squat", 2)) << "log: " << op_->log_path();
  StatusOr<json> own = client().Get(policies, ns(), "squat-launcher");
  ASSERT_TRUE(own.ok()) << own.status();
  StatusOr<json> job = client().Get(kube::resources::TrainingJobs(), ns(), "squat");
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE((*own)["metadata"].contains("ownerReferences")) << own->dump(2);
  EXPECT_EQ((*own)["metadata"]["ownerReferences"][0]["uid"], (*job)["metadata"]["uid"]);
  for (const json& rule : (*own)["spec"]["ingress"]) {  // no allow-all rule is left
    EXPECT_TRUE(rule.contains("from") || rule.contains("ports")) << own->dump(2);
  }
}

TEST_F(OperatorTest, SuccessfulJobRunsSucceedsAndMovesTheTimeToRunningHistogram) {
  EXPECT_EQ(TimeToRunningCount(op_->metrics_port(), ns()), 0);
  CreateJob(MakeJob("ok", 2));
  ASSERT_TRUE(WaitForPods("ok", 2));
  ASSERT_TRUE(BindJobPods(client(), ns(), "ok").ok());
  auto running = WaitForJob(client(), ns(), "ok", [](const json& j) { return StateIs(j, "Running"); });
  ASSERT_TRUE(running.ok()) << running.status();
  EXPECT_EQ(ConditionStatus(*running, "Running"), "True");
  EXPECT_EQ(ConditionStatus(*running, "Scheduled"), "");  // the gang scheduler's; off here
  EXPECT_EQ((*running)["status"]["workersReady"], "2/2");
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] { return TimeToRunningCount(op_->metrics_port(), ns()) == 1; }, seconds(10)));

  for (const char* pod : {"ok-worker-0", "ok-worker-1"}) {
    ASSERT_TRUE(FinishPod(client(), ns(), pod, /*succeeded=*/true).ok());
  }
  auto done = WaitForJob(client(), ns(), "ok", [](const json& j) { return StateIs(j, "Succeeded"); });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(ConditionStatus(*done, "Succeeded"), "True");
  EXPECT_EQ(ConditionStatus(*done, "Running"), "False");
  EXPECT_TRUE((*done)["status"].contains("completionTime"));
  // status.goodput went through the real apiserver (docs/goodput.md): the job ran, and its
  // ratio is exported while it exists.
  const json goodput = (*done)["status"].value("goodput", json::object());
  EXPECT_TRUE(goodput.contains("updatedAt")) << (*done)["status"].dump(2);
  EXPECT_GE(goodput.value("ratio", -1.0), 0.0) << goodput.dump();
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        auto m = HttpGet(op_->metrics_port(), "/metrics");
        return m.ok() && m->find("lockstep_job_goodput_ratio{name=\"ok\",namespace=\"" + ns() +
                                 "\"}") != std::string::npos;
      },
      seconds(10)));
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        auto reasons = EventReasons(client(), ns(), "ok");
        return Has(reasons, "Running") && Has(reasons, "Succeeded");
      },
      seconds(10)));
  auto metrics = HttpGet(op_->metrics_port(), "/metrics");
  ASSERT_TRUE(metrics.ok());
  EXPECT_NE(metrics->find("lockstep_job_outcomes_total{framework=\"PyTorch\",namespace=\"" + ns() +
                          "\",outcome=\"Succeeded\"} 1"),
            std::string::npos);
  EXPECT_NE(metrics->find("lockstep_job_time_to_running_seconds_bucket"), std::string::npos);
  EXPECT_NE(metrics->find("workqueue_adds_total"), std::string::npos);
  EXPECT_NE(metrics->find("rest_client_requests_total"), std::string::npos);
  EXPECT_NE(metrics->find("controller_runtime_reconcile_total"), std::string::npos);
}

// The headless Service has no selector: the operator writes its EndpointSlice, each pod's address
// under its hostname (what cluster DNS serves as <pod>.<job>.<ns>.svc), the endpoint controllers of
// kube-controller-manager write none, and the slice follows the pods (emptied once they ended).
TEST_F(OperatorTest, TheOperatorWritesTheServiceSliceWithEveryPodAddress) {
  const std::string uid = CreateJob(MakeJob("dns", 2))["metadata"]["uid"];
  ASSERT_TRUE(WaitForPods("dns", 2));
  auto svc = client().Get(kube::resources::Services(), ns(), "dns");
  ASSERT_TRUE(svc.ok()) << svc.status();
  EXPECT_FALSE((*svc)["spec"].contains("selector"));
  ASSERT_TRUE(BindJobPods(client(), ns(), "dns").ok());
  ASSERT_TRUE(WaitForJob(client(), ns(), "dns", [](const json& j) { return StateIs(j, "Running"); })
                  .ok());
  std::map<std::string, std::string> addresses;  // hostname -> IP, as kwok set them
  StatusOr<std::vector<json>> pods = ListJobPods(client(), ns(), "dns");
  ASSERT_TRUE(pods.ok()) << pods.status();
  for (const json& pod : *pods) {
    addresses[pod["metadata"]["name"]] = pod["status"].value("podIP", "");
    ASSERT_FALSE(addresses[pod["metadata"]["name"]].empty()) << pod["status"].dump();
  }
  kube::ListOptions by_service;
  by_service.label_selector = "kubernetes.io/service-name=dns";
  const auto slices = [&] {
    StatusOr<kube::ListResult> list =
        client().List(kube::resources::EndpointSlices(), ns(), by_service);
    std::vector<json> out;
    if (list.ok()) {
      for (const json& item : list->items) out.push_back(item);
    }
    return out;
  };
  const auto published = [&](const json& slice) {
    std::map<std::string, std::string> out;
    for (const json& e : slice.value("endpoints", json::array())) {
      out[e.value("hostname", "")] = e["addresses"][0];
    }
    return out;
  };
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        std::vector<json> items = slices();
        return items.size() == 1 && published(items[0]) == addresses;
      },
      seconds(20)))
      << "want one slice with " << json(addresses).dump() << "; have " << json(slices()).dump();
  const json slice = slices()[0];
  EXPECT_EQ(slice["metadata"]["name"], "dns");
  EXPECT_EQ(slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
            "lockstep-operator.lockstep.dev");
  EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], uid);
  EXPECT_EQ(slice["endpoints"][0]["targetRef"]["kind"], "Pod");
  EXPECT_EQ(slice["endpoints"][0]["conditions"]["ready"], true);
  EXPECT_EQ(slice["ports"][0]["port"], 29400);

  for (const char* pod : {"dns-worker-0", "dns-worker-1"}) {
    ASSERT_TRUE(FinishPod(client(), ns(), pod, /*succeeded=*/true).ok());
  }
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        std::vector<json> items = slices();
        return items.size() == 1 && items[0].value("endpoints", json::array()).empty();
      },
      seconds(20)))
      << "the finished pods stay published: " << json(slices()).dump();
}

TEST_F(OperatorTest, FailedPodWithNoRestartsLeftFailsTheJobWithItsExitCode) {
  json job = MakeJob("bad", 2);
  job["spec"]["failurePolicy"]["maxRestarts"] = 0;  // the default would restart the gang
  CreateJob(job);
  ASSERT_TRUE(WaitForPods("bad", 2));
  ASSERT_TRUE(BindJobPods(client(), ns(), "bad").ok());
  ASSERT_TRUE(WaitForJob(client(), ns(), "bad", [](const json& j) { return StateIs(j, "Running"); }).ok());
  ASSERT_TRUE(FinishPod(client(), ns(), "bad-worker-1", /*succeeded=*/false, 3).ok());
  auto failed = WaitForJob(client(), ns(), "bad", [](const json& j) { return StateIs(j, "Failed"); });
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(ConditionStatus(*failed, "Failed"), "True");
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "MaxRestartsExceeded");
  const std::string message = (*failed)["status"]["message"];
  EXPECT_NE(message.find("bad-worker-1"), std::string::npos) << message;
  EXPECT_NE(message.find("exited with code 3"), std::string::npos) << message;
  EXPECT_NE(message.find("maxRestarts (0) used up"), std::string::npos) << message;
  // cleanPodPolicy Running (the default): the pod still running is deleted, the failed one kept.
  EXPECT_TRUE(WaitForPods("bad", 1));
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] { return Has(EventReasons(client(), ns(), "bad"), "MaxRestartsExceeded"); }, seconds(10)));
}

// The pass that ends a job writes its status before it deletes pods (reconciler.cc): when the
// apiserver refuses the write, no pod is deleted, and the pods are cleaned once it is accepted.
TEST_F(OperatorTest, AnEndWhoseStatusWriteIsRefusedDeletesNoPodUntilItIsWritten) {
  json job = MakeJob("refused", 2);
  job["spec"]["failurePolicy"]["maxRestarts"] = 0;
  CreateJob(job);
  ASSERT_TRUE(WaitForPods("refused", 2));
  ASSERT_TRUE(BindJobPods(client(), ns(), "refused").ok());
  ASSERT_TRUE(WaitForJob(client(), ns(), "refused",
                         [](const json& j) { return StateIs(j, "Running"); }).ok());
  RefuseStatusWrites policy(
      ns(), "!has(object.status) || !has(object.status.state) || object.status.state != 'Failed'",
      "this test refuses Failed");
  ASSERT_TRUE(policy.ok());
  // The policy is enforced once the apiserver's admission plugin has seen it: probe with dry runs.
  const std::string probe = "patch trainingjob refused -n " + ns() +
                            " --subresource=status --type=merge --dry-run=server"
                            " -p '{\"status\":{\"state\":\"Failed\"}}' >/dev/null 2>&1";
  ASSERT_TRUE(kube::testing::WaitFor([&] { return Kubectl(probe) != 0; }, seconds(30)));

  ASSERT_TRUE(FinishPod(client(), ns(), "refused-worker-1", /*succeeded=*/false, 3).ok());
  // Several passes decide Failed and are refused; the running pod stays.
  const auto until = std::chrono::steady_clock::now() + seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    auto pods = ListJobPods(client(), ns(), "refused");
    ASSERT_TRUE(pods.ok()) << pods.status();
    ASSERT_EQ(pods->size(), 2u);
    for (const json& pod : *pods) {
      EXPECT_FALSE(pod["metadata"].contains("deletionTimestamp")) << pod["metadata"]["name"];
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  auto current = client().Get(kube::resources::TrainingJobs(), ns(), "refused");
  ASSERT_TRUE(current.ok());
  EXPECT_FALSE(StateIs(*current, "Failed"));

  policy.Remove();
  auto failed = WaitForJob(client(), ns(), "refused",
                           [](const json& j) { return StateIs(j, "Failed"); }, seconds(60));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "MaxRestartsExceeded");
  EXPECT_TRUE(WaitForPods("refused", 1)) << "cleanPodPolicy Running deletes the running pod";
}

TEST_F(OperatorTest, SuspendDeletesPodsAndResumeRecreatesThem) {
  CreateJob(MakeJob("nap", 3));
  ASSERT_TRUE(WaitForPods("nap", 3));
  json patch = {{"spec", {{"runPolicy", {{"suspend", true}}}}}};
  ASSERT_TRUE(client().MergePatch(kube::resources::TrainingJobs(), ns(), "nap", patch).ok());
  auto suspended = WaitForJob(client(), ns(), "nap", [](const json& j) {
    return StateIs(j, "Suspended") && ConditionStatus(j, "Reconciling") == "False";
  });
  ASSERT_TRUE(suspended.ok()) << suspended.status();
  EXPECT_EQ(ConditionStatus(*suspended, "Suspended"), "True");
  EXPECT_FALSE((*suspended)["status"].contains("startTime")) << "the deadline timer restarts";
  EXPECT_TRUE(WaitForPods("nap", 0));
  // The Service and Secret stay (state is kept).
  EXPECT_TRUE(client().Get(kube::resources::Secrets(), ns(), "nap-rdzv").ok());

  patch["spec"]["runPolicy"]["suspend"] = false;
  ASSERT_TRUE(client().MergePatch(kube::resources::TrainingJobs(), ns(), "nap", patch).ok());
  ASSERT_TRUE(WaitForPods("nap", 3));
  auto resumed = WaitForJob(client(), ns(), "nap", [](const json& j) {
    return ConditionStatus(j, "Suspended") == "False" && j["status"].contains("startTime");
  });
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(ConditionReason(*resumed, "Suspended"), "Resumed");
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        auto reasons = EventReasons(client(), ns(), "nap");
        return Has(reasons, "Suspended") && Has(reasons, "Resumed");
      },
      seconds(10)));
}

TEST_F(OperatorTest, FinishedJobIsDeletedAfterItsTtl) {
  CreateJob(MakeJob("brief", 1, [](json& j) {
    j["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 2}};
  }));
  ASSERT_TRUE(WaitForPods("brief", 1));
  ASSERT_TRUE(BindJobPods(client(), ns(), "brief").ok());
  ASSERT_TRUE(FinishPod(client(), ns(), "brief-worker-0", true).ok());
  auto done = WaitForJob(client(), ns(), "brief",
                         [](const json& j) { return StateIs(j, "Succeeded"); });
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(Has(EventReasons(client(), ns(), "brief"), "Succeeded") ||
              kube::testing::WaitFor(
                  [&] { return Has(EventReasons(client(), ns(), "brief"), "Succeeded"); },
                  seconds(5)));
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] {
        return IsNotFound(client().Get(kube::resources::TrainingJobs(), ns(), "brief").status());
      },
      seconds(20)))
      << "the job outlived its TTL";
  EXPECT_TRUE(WaitForPods("brief", 0));
}

TEST_F(OperatorTest, ActiveDeadlineFailsTheJob) {
  CreateJob(MakeJob("slow", 2, [](json& j) {
    j["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 3}};
  }));
  ASSERT_TRUE(WaitForPods("slow", 2));
  auto failed = WaitForJob(client(), ns(), "slow",
                           [](const json& j) { return StateIs(j, "Failed"); }, seconds(20));
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(ConditionReason(*failed, "Failed"), "DeadlineExceeded");
  EXPECT_EQ((*failed)["status"]["reason"], "DeadlineExceeded");
  EXPECT_TRUE(WaitForPods("slow", 0)) << "cleanPodPolicy Running deletes the pending pods";
  EXPECT_TRUE(kube::testing::WaitFor(
      [&] { return Has(EventReasons(client(), ns(), "slow"), "DeadlineExceeded"); }, seconds(10)));
}

TEST_F(OperatorTest, ChiefSuccessEndsATensorFlowJobAndStopsTheParameterServers) {
  CreateJob(MakeJob("tf", 2, [](json& j) {
    j["spec"]["framework"] = "TensorFlow";
    json tmpl = j["spec"]["template"];
    j["spec"]["roles"] = json::array({{{"name", "chief"}, {"replicas", 1}, {"template", tmpl}},
                                      {{"name", "ps"}, {"replicas", 2}, {"template", tmpl}}});
  }));
  ASSERT_TRUE(WaitForPods("tf", 5));
  ASSERT_TRUE(BindJobPods(client(), ns(), "tf").ok());
  ASSERT_TRUE(WaitForJob(client(), ns(), "tf", [](const json& j) { return StateIs(j, "Running"); }).ok());
  ASSERT_TRUE(FinishPod(client(), ns(), "tf-chief-0", true).ok());
  auto done = WaitForJob(client(), ns(), "tf", [](const json& j) { return StateIs(j, "Succeeded"); });
  ASSERT_TRUE(done.ok()) << done.status();
  // Only the chief's pod remains: workers and parameter servers were stopped.
  EXPECT_TRUE(WaitForPods("tf", 1));
}

}  // namespace
}  // namespace lockstep::controller::testing
