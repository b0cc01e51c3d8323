// Graceful stop through Kubernetes (issue 17, part 3): a real PyTorch job is suspended
// (`spec.runPolicy.suspend: true`) mid-training. The operator deletes its pods with their own
// grace; the node agent, as the kubelet, sends each trainer container SIGTERM and waits for the
// pod's terminationGracePeriodSeconds; the launcher forwards SIGTERM to its ranks and waits up to
// LOCKSTEP_GRACE_PERIOD (the pod's grace - 1); the ranks agree on one step, rank 0 checkpoints it
// and every rank prints STOPPED. Resumed, the job starts from that step and ends with the same
// final weights, bit for bit, as the same job run beside it without interruption.
//
// Preemption (issue 17, part 2, the same stop): a high-priority job that does not fit makes the
// scheduler evict a running low-priority one as a whole gang; the victim's ranks checkpoint on
// the SIGTERM, it waits in the queue, resumes from that step when capacity returns, and ends with
// the same weights as the preemptor, which trained the same model uninterrupted.
//
// When it fails it prints what each side said (the trainers' and launchers' lines from the
// container logs, the agent's and the operator's log tails), so the next reader sees which link
// of the chain broke: the deletion's grace, the launcher's env, the forwarding, the trainers.

#include <filesystem>
#include <set>
#include <sstream>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;
using std::chrono::seconds;

class GracefulStop : public SharedClusterTest<GracefulStop> {
 public:
  // --kueue: the Kueue test below needs it; the others' jobs carry no queue label, so it changes
  // nothing for them.
  static ClusterOptions Options() { return ClusterOptions{.operator_args = {"--kueue=true"}}; }

 protected:
  // examples/local/pytorch-ddp.yaml, 3 epochs of 6 steps, under `name`, with a pod grace long
  // enough for a loaded machine (the example's 5 s is for quick clean-ups).
  StatusOr<json> Job(const std::string& name, double sleep_per_step) {
    StatusOr<json> job = cluster_->LoadExample("pytorch-ddp.yaml");
    if (!job.ok()) return job;
    (*job)["metadata"]["name"] = name;
    SetFlag(*job, "--epochs", "3");
    SetFlag(*job, "--steps-per-epoch", "6");
    if (sleep_per_step > 0) SetFlag(*job, "--sleep-per-step", std::to_string(sleep_per_step));
    (*job)["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = kPodGrace;
    // A step may take seconds at load 30: the ranks' watchdog for a stop stuck in a collective
    // (docs/frameworks.md "Graceful stop") must not fire on a slow but healthy one.
    json& env = (*job)["spec"]["template"]["spec"]["containers"][0]["env"];
    if (!env.is_array()) env = json::array();
    env.push_back({{"name", "TRAIN_STUCK_STOP_TIMEOUT"}, {"value", "20"}});
    return job;
  }

  static std::string State(const json& job) {
    return job.value("status", json::object()).value("state", "");
  }

  Status Suspend(const std::string& name, bool suspend) {
    return cluster_->client()
        .MergePatch(kube::resources::TrainingJobs(), cluster_->ns(), name,
                    {{"spec", {{"runPolicy", {{"suspend", suspend}}}}}})
        .status();
  }

  // Pods of the job still in the API.
  size_t LivePods(const std::string& name) {
    kube::ListOptions options;
    options.label_selector = "lockstep.dev/job-name=" + name;
    StatusOr<kube::ListResult> pods =
        cluster_->client().List(kube::resources::Pods(), cluster_->ns(), options);
    // An error counts as pods left: the wait goes on rather than passing on a failed read.
    return pods.ok() && pods->items.is_array() ? pods->items.size() : 1;
  }

  // Everything that says why a stop went wrong.
  std::string Diagnose(const std::string& name) {
    const JobRun run = cluster_->Collect(name);
    return "job status: " + run.job.value("status", json::object()).dump(2) + "\n" +
           "container logs (trainers and launchers):\n" + run.AllLogs() + "\nagent log tail:\n" +
           Tail(cluster_->agent_log()) + "\noperator log tail:\n" + Tail(cluster_->operator_log());
  }

  // A PriorityClass named after this run's namespace (cluster-scoped: deleted by the test).
  StatusOr<std::string> CreatePriorityClass(const std::string& name, int value) {
    const std::string full = cluster_->ns() + "-" + name;
    const json pc = {{"apiVersion", "scheduling.k8s.io/v1"},
                     {"kind", "PriorityClass"},
                     {"metadata", {{"name", full}}},
                     {"value", value}};
    Status created = cluster_->client().Create(kPriorityClasses, "", pc).status();
    if (!created.ok()) return created;
    priority_classes_.push_back(full);
    return full;
  }

  void TearDown() override {
    for (const std::string& pc : priority_classes_) {
      cluster_->client().Delete(kPriorityClasses, "", pc).status().IgnoreError();
    }
    for (const auto& [ref, name] : kueue_objects_) {
      cluster_->client().Delete(ref, "", name).status().IgnoreError();
    }
  }

  // Each pod takes a whole agent node's 8 GPUs (the training itself stays on CPU, gloo), under
  // `priority_class`.
  static void WholeNodes(json& job, const std::string& priority_class) {
    json& resources = job["spec"]["template"]["spec"]["containers"][0]["resources"];
    resources["requests"]["nvidia.com/gpu"] = "8";
    resources["limits"]["nvidia.com/gpu"] = "8";
    if (!priority_class.empty()) job["spec"]["priorityClassName"] = priority_class;
  }

  // A cluster-scoped Kueue object named after this run's namespace, deleted by the test.
  Status CreateKueueObject(const std::string& resource, json object) {
    const kube::ResourceRef ref{"kueue.x-k8s.io", "v1beta2", resource, false};
    Status created = cluster_->client().Create(ref, "", object).status();
    if (created.ok()) kueue_objects_.emplace(kueue_objects_.begin(), ref, object["metadata"]["name"]);
    return created;
  }

  // A ClusterQueue of `gpus` GPUs of flavor `flavor` in `cohort`, preempting lower priorities
  // within itself, and a LocalQueue `local` in the test's namespace that points to it.
  Status CreateQueue(const std::string& name, const std::string& local, const std::string& flavor,
                     const std::string& cohort, int gpus) {
    const json quota = json::array({{{"name", "cpu"}, {"nominalQuota", "64"}},
                                    {{"name", "memory"}, {"nominalQuota", "256Gi"}},
                                    {{"name", "nvidia.com/gpu"}, {"nominalQuota", gpus}}});
    LS_RETURN_IF_ERROR(CreateKueueObject(
        "clusterqueues",
        {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
         {"kind", "ClusterQueue"},
         {"metadata", {{"name", name}}},
         {"spec",
          {{"cohortName", cohort},
           {"namespaceSelector", json::object()},
           {"preemption", {{"withinClusterQueue", "LowerPriority"}}},
           {"resourceGroups",
            json::array({{{"coveredResources", {"cpu", "memory", "nvidia.com/gpu"}},
                          {"flavors", json::array({{{"name", flavor}, {"resources", quota}}})}}})}}}}));
    return cluster_->client()
        .Create({"kueue.x-k8s.io", "v1beta2", "localqueues", true}, cluster_->ns(),
                {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                 {"kind", "LocalQueue"},
                 {"metadata", {{"name", local}}},
                 {"spec", {{"clusterQueue", name}}}})
        .status();
  }

  // Waits until `name` runs and rank 0 has written its first epoch's checkpoint (mid-training).
  StatusOr<json> WaitRunningWithCheckpoint(const std::string& name) {
    const std::string ckpt = cluster_->HostPathDir(name, "checkpoints") + "/checkpoint.pt";
    return cluster_->WaitFor(
        name, [&](const json& j) { return State(j) == "Running" && std::filesystem::exists(ckpt); },
        seconds(420));
  }

  // The one step every rank of `name` printed STOPPED at ("" after a failure it reported).
  std::string StoppedStep(const std::string& name) {
    const std::vector<std::string> stops = cluster_->Collect(name).Lines("STOPPED ");
    EXPECT_EQ(stops.size(), 4u) << Diagnose(name);
    if (stops.size() != 4u) return "";
    EXPECT_EQ(Fields(stops, "step").size(), 1u) << "ranks stopped at different steps\n"
                                                << Diagnose(name);
    return Fields(stops, "step").size() == 1u ? Field(stops.front(), "step") : "";
  }

  // `reference` runs the same model uninterrupted and ends; `stopped`, stopped at `step`, then
  // resumes from it and ends with the same weights, no failure counted. Its final object (null
  // after a failure it reported).
  json EndsLikeTheUninterruptedRun(const std::string& stopped, const std::string& reference,
                                   const std::string& step) {
    auto ended = [](const json& j) { return State(j) == "Succeeded" || State(j) == "Failed"; };
    StatusOr<json> reference_done = cluster_->WaitFor(reference, ended, seconds(420));
    EXPECT_TRUE(reference_done.ok()) << reference_done.status() << "\n" << Diagnose(reference);
    const JobRun uninterrupted = cluster_->Collect(reference);
    EXPECT_EQ(uninterrupted.state(), "Succeeded") << Diagnose(reference);
    StatusOr<json> done = cluster_->WaitFor(stopped, ended, seconds(420));
    EXPECT_TRUE(done.ok()) << done.status() << "\n" << Diagnose(stopped);
    if (!reference_done.ok() || !done.ok()) return nullptr;
    const JobRun resumed = cluster_->Collect(stopped);
    EXPECT_EQ(resumed.state(), "Succeeded") << Diagnose(stopped);
    EXPECT_EQ(Fields(resumed.Lines("RESUMED "), "step"), std::set<std::string>{step})
        << Diagnose(stopped);
    // A preemption or an eviction is a disruption: maxRestarts untouched.
    const json restarts = done->value("status", json::object()).value("restarts", json::object());
    EXPECT_EQ(restarts.value("failures", -1), 0) << restarts.dump();
    const std::set<std::string> digest = Fields(resumed.Lines("WEIGHTS "), "sha");
    EXPECT_EQ(digest.size(), 1u) << Diagnose(stopped);
    EXPECT_EQ(digest, Fields(uninterrupted.Lines("WEIGHTS "), "sha"))
        << "the stopped job's weights differ from the uninterrupted run's\n"
        << resumed.AllLogs() << "\n"
        << uninterrupted.AllLogs();
    if (digest.size() == 1u) {
      std::cout << "[ job ] " << stopped << " resumed from step " << step << "; final digest "
                << *digest.begin() << " equals " << reference << "'s uninterrupted run"
                << std::endl;
    }
    ExpectNoProcessesLeft(stopped);
    ExpectNoProcessesLeft(reference);
    return *done;
  }

  static constexpr int kPodGrace = 30;
  inline static const kube::ResourceRef kPriorityClasses{"scheduling.k8s.io", "v1",
                                                         "priorityclasses", false};
  std::vector<std::string> priority_classes_;
  std::vector<std::pair<kube::ResourceRef, std::string>> kueue_objects_;  // delete in this order
};

TEST_F(GracefulStop, SuspendedMidTrainingEveryRankStopsAndTheResumedJobEndsIdentical) {
  const std::string whole = "pytorch-ddp-whole";
  const std::string name = "pytorch-ddp-suspend";
  StatusOr<json> reference = Job(whole, 0);
  StatusOr<json> job = Job(name, 1.0);
  ASSERT_TRUE(reference.ok() && job.ok()) << reference.status() << job.status();
  // The uninterrupted run beside the suspended one: the imports are most of a run's time here.
  ASSERT_TRUE(cluster_->Create(*reference).ok());
  ASSERT_TRUE(cluster_->Create(*job).ok());

  // Step 1: mid-training: Running, and the first epoch's checkpoint written.
  StatusOr<json> running = WaitRunningWithCheckpoint(name);
  ASSERT_TRUE(running.ok()) << running.status() << "\n" << Diagnose(name);

  // Step 2: suspend. Every rank stops at one step and the pods go away within their grace.
  const auto suspended_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(Suspend(name, true).ok());
  StatusOr<json> suspended = cluster_->WaitFor(
      name,
      [&](const json& j) {
        return State(j) == "Suspended" && LivePods(name) == 0 &&
               cluster_->Collect(name).Lines("STOPPED ").size() >= 4;
      },
      seconds(kPodGrace + 60));
  ASSERT_TRUE(suspended.ok()) << suspended.status() << "\n" << Diagnose(name);
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - suspended_at).count();
  const JobRun stopped = cluster_->Collect(name);
  const std::vector<std::string> stops = stopped.Lines("STOPPED ");
  ASSERT_EQ(stops.size(), 4u) << Diagnose(name);
  EXPECT_EQ(Fields(stops, "rank"), (std::set<std::string>{"0", "1", "2", "3"}));
  ASSERT_EQ(Fields(stops, "step").size(), 1u) << "ranks stopped at different steps\n"
                                              << Diagnose(name);
  const std::string step = Field(stops.front(), "step");
  EXPECT_GE(std::stoi(step), 6) << Diagnose(name);  // after the first epoch's checkpoint
  EXPECT_TRUE(stopped.Lines("WEIGHTS ").empty()) << "finished before the suspend\n"
                                                 << Diagnose(name);
  // Each launcher was told the pod's grace (the env reached it) and stopped as a signal's stop.
  ASSERT_EQ(stopped.pods.size(), 2u) << Diagnose(name);
  for (const JobRun::Pod& pod : stopped.pods) {
    EXPECT_NE(pod.log.find("grace_ms=" + std::to_string((kPodGrace - 1) * 1000)), std::string::npos)
        << pod.name << "\n"
        << Diagnose(name);
    EXPECT_NE(pod.log.find("exit_code=143 reason=terminated"), std::string::npos)
        << pod.name << "\n"
        << Diagnose(name);
    EXPECT_EQ(pod.log.find("past the grace period"), std::string::npos) << pod.name;
  }
  // The deletion kept the pod's grace all the way: the operator's delete passed none of its own
  // (not 0) and the agent, as the kubelet, gave each pod its 30 s before any SIGKILL.
  std::vector<std::string> deletions;
  {
    std::istringstream agent(cluster_->agent_log());
    for (std::string line; std::getline(agent, line);) {
      if (line.find("pod deletion requested") != std::string::npos &&
          line.find("/" + name + "-") != std::string::npos) {
        deletions.push_back(line);
      }
    }
  }
  ASSERT_EQ(deletions.size(), 2u) << Diagnose(name);
  for (const std::string& line : deletions) {
    EXPECT_EQ(Field(line, "grace_s"), std::to_string(kPodGrace)) << line;
  }
  // The stop as each launcher saw it (when the SIGTERM came, when the ranks and it ended).
  for (const JobRun::Pod& pod : stopped.pods) {
    std::istringstream log(pod.log);
    for (std::string line; std::getline(log, line);) {
      if (line.find("signal received") != std::string::npos ||
          line.find("child exited") != std::string::npos ||
          line.find("launcher exiting") != std::string::npos) {
        std::cout << "[ stop ] " << pod.name << ": " << line << std::endl;
      }
    }
  }
  std::cout << "[ job ] suspended at step " << step << " of 18; pods gone and every rank "
            << "STOPPED " << stop_s << " s after the suspend" << std::endl;

  // Step 3: resume. The new pods start from the checkpointed step and finish.
  ASSERT_TRUE(Suspend(name, false).ok());
  StatusOr<json> done = cluster_->WaitFor(
      name, [](const json& j) { return State(j) == "Succeeded" || State(j) == "Failed"; },
      seconds(420));
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << Diagnose(name);
  const JobRun resumed = cluster_->Collect(name);
  ASSERT_EQ(resumed.state(), "Succeeded") << Diagnose(name);
  const std::vector<std::string> starts = resumed.Lines("RESUMED ");
  ASSERT_EQ(starts.size(), 4u) << Diagnose(name);
  EXPECT_EQ(Fields(starts, "step"), std::set<std::string>{step}) << Diagnose(name);
  const std::vector<std::string> weights = resumed.Lines("WEIGHTS ");
  ASSERT_EQ(weights.size(), 4u) << Diagnose(name);
  ASSERT_EQ(Fields(weights, "sha").size(), 1u) << Diagnose(name);

  // Step 4: the same weights as the run never interrupted.
  StatusOr<json> reference_done = cluster_->WaitFor(
      whole, [](const json& j) { return State(j) == "Succeeded" || State(j) == "Failed"; },
      seconds(420));
  ASSERT_TRUE(reference_done.ok()) << reference_done.status() << "\n" << Diagnose(whole);
  const JobRun ref = cluster_->Collect(whole);
  ASSERT_EQ(ref.state(), "Succeeded") << Diagnose(whole);
  const std::vector<std::string> ref_weights = ref.Lines("WEIGHTS ");
  ASSERT_EQ(ref_weights.size(), 4u) << Diagnose(whole);
  EXPECT_EQ(Fields(ref_weights, "sha"), Fields(weights, "sha"))
      << "the resumed job's weights differ from the uninterrupted run's\n"
      << resumed.AllLogs() << "\n"
      << ref.AllLogs();
  std::cout << "[ job ] resumed from step " << step << "; final digest "
            << *Fields(weights, "sha").begin() << " equals the uninterrupted run's" << std::endl;
  ExpectNoProcessesLeft(name);
  ExpectNoProcessesLeft(whole);
}


// The cluster has 3 agent nodes of 8 GPUs: the low job holds 2, the high one needs 2.
TEST_F(GracefulStop, PreemptedMidTrainingTheVictimStopsGracefullyAndResumesIdentical) {
  StatusOr<std::string> low_class = CreatePriorityClass("low", 10);
  StatusOr<std::string> high_class = CreatePriorityClass("high", 1000);
  ASSERT_TRUE(low_class.ok() && high_class.ok()) << low_class.status() << high_class.status();
  const std::string low = "pytorch-ddp-low";
  const std::string high = "pytorch-ddp-high";
  StatusOr<json> low_job = Job(low, 1.0);
  StatusOr<json> high_job = Job(high, 0);
  ASSERT_TRUE(low_job.ok() && high_job.ok()) << low_job.status() << high_job.status();
  WholeNodes(*low_job, *low_class);
  WholeNodes(*high_job, *high_class);

  // Step 1: the low job runs and has checkpointed its first epoch.
  ASSERT_TRUE(cluster_->Create(*low_job).ok());
  StatusOr<json> running = WaitRunningWithCheckpoint(low);
  ASSERT_TRUE(running.ok()) << running.status() << "\n" << Diagnose(low);

  // Step 2: the high job does not fit beside it: the low gang is preempted whole, every rank
  // stops at one step, and the high job runs.
  const auto submitted = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster_->Create(*high_job).ok());
  StatusOr<json> preempted = cluster_->WaitFor(
      low,
      [&](const json& j) {
        return Condition(j, "Preempted").value("status", "") == "True" &&
               cluster_->Collect(low).Lines("STOPPED ").size() >= 4;
      },
      seconds(kPodGrace + 120));
  ASSERT_TRUE(preempted.ok()) << preempted.status() << "\n" << Diagnose(low);
  const json preempted_condition = Condition(*preempted, "Preempted");
  EXPECT_NE(preempted_condition.value("message", "").find(cluster_->ns() + "/" + high),
            std::string::npos)
      << preempted_condition.dump();
  const std::string step = StoppedStep(low);
  ASSERT_FALSE(step.empty());
  StatusOr<json> high_running = cluster_->WaitFor(
      high, [](const json& j) { return State(j) == "Running" || State(j) == "Succeeded"; },
      seconds(300));
  ASSERT_TRUE(high_running.ok()) << high_running.status() << "\n" << Diagnose(high);
  std::cout << "[ job ] low preempted at step " << step << " of 18; high running "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count()
            << " s after it was submitted" << std::endl;

  // Step 3: the high job finishes; the low one gets its nodes back, resumes from its step, and
  // finishes with the weights of the preemptor's uninterrupted run of the same model.
  const json low_done = EndsLikeTheUninterruptedRun(low, high, step);
  ASSERT_TRUE(low_done.is_object());
  EXPECT_EQ(Condition(low_done, "Preempted").value("status", ""), "False") << low_done.dump();
}

// Issue 17's acceptance with Kueue (docs/queues.md): two teams' ClusterQueues in a cohort share
// the 3 agent nodes' 24 GPUs (team A 16, team B 8). A job over what the cohort has waits, its
// status saying why in Kueue's words; team A's high-priority job makes Kueue evict its running
// low-priority one; the low job's ranks checkpoint on the SIGTERM, it waits in Kueue's queue,
// is admitted again when the high one ends, resumes from its step and ends with the weights of
// the high job, which trained the same model uninterrupted.
TEST_F(GracefulStop, KueueCohortQueuesOverQuotaWaitsAndAPreemptedJobResumesIdentical) {
  if (!cluster_->client().RawGet("/apis/kueue.x-k8s.io/v1beta2").ok()) {
    GTEST_SKIP() << "Kueue is not running on this cluster (hack/cluster.sh up --with-kueue)";
  }
  const std::string ns = cluster_->ns();
  const std::string flavor = ns + "-agent";
  ASSERT_TRUE(CreateKueueObject("resourceflavors",
                                {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                 {"kind", "ResourceFlavor"},
                                 {"metadata", {{"name", flavor}}},
                                 {"spec", {{"nodeLabels", {{"lockstep.dev/test-node-agent", "true"}}}}}})
                  .ok());
  ASSERT_TRUE(CreateQueue(ns + "-team-a", "team-a", flavor, ns + "-cohort", 16).ok());
  ASSERT_TRUE(CreateQueue(ns + "-team-b", "team-b", flavor, ns + "-cohort", 8).ok());
  for (const auto& [name, value] : {std::pair<std::string, int>{"low", 10}, {"high", 1000}}) {
    ASSERT_TRUE(CreateKueueObject("workloadpriorityclasses",
                                  {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                                   {"kind", "WorkloadPriorityClass"},
                                   {"metadata", {{"name", ns + "-" + name}}},
                                   {"value", value}})
                    .ok());
  }
  auto queued = [&](json& job, const std::string& queue, const std::string& priority) {
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue;
    if (!priority.empty()) job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = ns + "-" + priority;
  };

  // Step 1: 4 pods of 8 GPUs in team B: more than the whole cohort. It waits, saying why.
  const std::string greedy = "pytorch-ddp-greedy";
  StatusOr<json> greedy_job = Job(greedy, 0);
  ASSERT_TRUE(greedy_job.ok()) << greedy_job.status();
  WholeNodes(*greedy_job, "");
  (*greedy_job)["spec"]["replicas"] = 4;
  queued(*greedy_job, "team-b", "");
  ASSERT_TRUE(cluster_->Create(*greedy_job).ok());
  StatusOr<json> waiting = cluster_->WaitFor(
      greedy,
      [](const json& j) {
        return State(j) == "Queued" &&
               j["status"].value("message", "").find("insufficient") != std::string::npos;
      },
      seconds(60));
  ASSERT_TRUE(waiting.ok()) << waiting.status() << "\n" << Diagnose(greedy);
  std::cout << "[ job ] over quota: state Queued, " << (*waiting)["status"]["message"].get<std::string>()
            << std::endl;
  EXPECT_EQ(LivePods(greedy), 0u);
  ASSERT_TRUE(cluster_->client().Delete(kube::resources::TrainingJobs(), ns, greedy).ok());

  // Step 2: team A's low job runs and checkpoints its first epoch.
  const std::string low = "pytorch-ddp-kueue-low";
  const std::string high = "pytorch-ddp-kueue-high";
  StatusOr<json> low_job = Job(low, 1.0);
  StatusOr<json> high_job = Job(high, 0);
  ASSERT_TRUE(low_job.ok() && high_job.ok()) << low_job.status() << high_job.status();
  WholeNodes(*low_job, "");
  WholeNodes(*high_job, "");
  queued(*low_job, "team-a", "low");
  queued(*high_job, "team-a", "high");
  ASSERT_TRUE(cluster_->Create(*low_job).ok());
  StatusOr<json> running = WaitRunningWithCheckpoint(low);
  ASSERT_TRUE(running.ok()) << running.status() << "\n" << Diagnose(low);
  EXPECT_EQ(Condition(*running, "Admitted").value("status", ""), "True") << running->dump(2);

  // Step 3: the high job: 16 + 16 GPUs exceed what team A may use (its 16 and team B's 8), so
  // Kueue evicts the low one; its ranks stop at one step; the high job runs.
  const auto submitted = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster_->Create(*high_job).ok());
  StatusOr<json> evicted = cluster_->WaitFor(
      low,
      [&](const json& j) {
        return Condition(j, "Admitted").value("reason", "") == "Evicted" &&
               cluster_->Collect(low).Lines("STOPPED ").size() >= 4;
      },
      seconds(kPodGrace + 120));
  ASSERT_TRUE(evicted.ok()) << evicted.status() << "\n" << Diagnose(low);
  const std::string step = StoppedStep(low);
  ASSERT_FALSE(step.empty());
  StatusOr<json> high_running = cluster_->WaitFor(
      high, [](const json& j) { return State(j) == "Running" || State(j) == "Succeeded"; },
      seconds(300));
  ASSERT_TRUE(high_running.ok()) << high_running.status() << "\n" << Diagnose(high);
  std::cout << "[ job ] Kueue evicted low at step " << step << " of 18 ("
            << Condition(*evicted, "Admitted").value("message", "") << "); high running "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - submitted).count()
            << " s after it was submitted" << std::endl;

  // Step 4: the high job ends; Kueue admits the low one again; it resumes and ends identical.
  const json low_done = EndsLikeTheUninterruptedRun(low, high, step);
  ASSERT_TRUE(low_done.is_object());
  EXPECT_EQ(Condition(low_done, "Admitted").value("status", ""), "True") << low_done.dump();
}

}  // namespace
}  // namespace lockstep::e2e
