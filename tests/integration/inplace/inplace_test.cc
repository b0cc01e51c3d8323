// In-place restarts against the real kube-apiserver (docs/failures.md "In place"): the operator
// records the launchers' in-place restarts in status while the pods keep running, sends Restart
// for the lockstep.dev/restart-request annotation, and falls back to Recreate when the launchers
// do not form a new round within failurePolicy.inPlaceTimeoutSeconds.
//
// kwok runs the pods (no process); real lockstep-launcher processes on this host play their
// launchers, with the job's uid as run id and its Secret's token. Node 0's launcher listens on
// worker-0's kwok pod IP (added to `lo` for the test), which is where the operator asks.
// The same Status answer carries the trainers' progress (status.progress, issue 21 part 3):
// checked beside the restart request.
#include <signal.h>

#include <cstdlib>
#include <map>
#include <thread>

#include <gmock/gmock.h>

#include "operator/api/children.h"
#include "operator/kube/base64.h"
#include "operator/kube/rest_client.h"
#include "tests/integration/crd/kubectl.h"
#include "tests/integration/failures/failures_env.h"
#include "tests/integration/kube/test_env.h"
#include "tests/launcher/core/harness.h"

namespace lockstep::failures::testing {
namespace {

using kube::testing::WaitFor;
using launcher::testing::FileExists;
using launcher::testing::LauncherProcess;
using launcher::testing::LauncherSpec;
using launcher::testing::TempDir;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The rendezvous token the pods mounted, from the job's Secret.
std::string SecretToken(const json& secret) {
  StatusOr<std::string> token =
      kube::Base64Decode(secret.at("data").at("token").get<std::string>());
  EXPECT_TRUE(token.ok()) << token.status();
  return token.ok() ? *token : std::string();
}

class InPlaceTest : public FailuresTest {
 protected:
  void TearDown() override {
    launchers_.clear();  // SIGKILLs what is left
    if (!address_.empty()) {
      const int rc = std::system(("ip addr del " + address_ + "/32 dev lo 2>/dev/null").c_str());
      EXPECT_EQ(rc, 0) << "could not remove " << address_ << " from lo";
    }
    FailuresTest::TearDown();
  }

  // A 2-worker Generic job, restartMode InPlace, running on this test's kwok nodes; returns the
  // live job once both pods of attempt 0 run and have IPs.
  json StartJob(const std::string& name, int in_place_timeout = 60,
                const std::string& restart_mode = "InPlace") {
    CreateNodes(2);
    CreateJob(MakeJob(name, 2, [&](json& j) {
      j["spec"]["failurePolicy"]["restartMode"] = restart_mode;
      j["spec"]["failurePolicy"]["maxRestarts"] = 3;
      j["spec"]["failurePolicy"]["inPlaceTimeoutSeconds"] = in_place_timeout;
    }));
    EXPECT_TRUE(WaitRunningAttempt(name, 0, 2, seconds(30))) << "attempt 0 never ran";
    EXPECT_TRUE(WaitFor([&] { return !PodIp(name + "-worker-0").empty(); }, seconds(20)));
    StatusOr<json> job = GetJob(name);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : json();
  }

  std::string PodIp(const std::string& pod) {
    StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), pod);
    return p.ok() ? p->value("/status/podIP"_json_pointer, std::string()) : "";
  }
  std::string PodUid(const std::string& pod) {
    StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), pod);
    return p.ok() ? p->value("/metadata/uid"_json_pointer, std::string()) : "";
  }

  // Real launchers for the job's two pods; node 0 listens on worker-0's pod IP.
  void StartLaunchers(const json& job, std::vector<std::string> child_args,
                      std::vector<std::string> extra = {}) {
    const std::string name = job["metadata"]["name"];
    address_ = PodIp(name + "-worker-0");
    ASSERT_FALSE(address_.empty());
    ASSERT_EQ(std::system(("ip addr add " + address_ + "/32 dev lo").c_str()), 0)
        << "cannot add " << address_ << " to lo (root needed)";
    StatusOr<json> secret = client().Get(kube::resources::Secrets(), ns(), name + "-rdzv");
    ASSERT_TRUE(secret.ok()) << secret.status();
    const std::string token = SecretToken(*secret);
    for (int i = 0; i < 2; ++i) {
      LauncherSpec s;
      s.args = {"--nnodes", "2", "--node-rank", std::to_string(i), "--nproc-per-node", "2",
                "--rdzv-endpoint", address_ + ":" + std::to_string(api::kRdzvPort), "--rdzv-id",
                job["metadata"]["uid"].get<std::string>(), "--advertise-addr", "127.0.0.1",
                "--join-timeout", "120", "--grace-period", "2", "--max-restarts", "3"};
      s.args.insert(s.args.end(), extra.begin(), extra.end());
      s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path()};
      s.command.insert(s.command.end(), child_args.begin(), child_args.end());
      s.env = {{"LOCKSTEP_TOKEN", token}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
      launchers_.push_back(std::make_unique<LauncherProcess>(
          s, dir_.path() + "/launcher." + std::to_string(i) + ".log"));
    }
  }
  // Training progress (docs/api.md "status.progress"): rank 0 appends progress lines to the
  // LOCKSTEP_PROGRESS_FILE its launcher gave it (test_child --progress-total 100000); node 0's
  // launcher reports the latest in its Status answer, the one that also carries the round; the
  // operator writes status.progress, shows it in the PROGRESS column and the progress metrics.
  // (That it rises, at most every 10 s, with an eta: training_progress_test.cc.)
  void ExpectProgress(const std::string& name) {
    for (const auto& env : launcher::testing::ReadEnvFiles(dir_.path(), "0")) {
      EXPECT_NE(env.at("LOCKSTEP_PROGRESS_FILE").find("/progress.jsonl"), std::string::npos);
    }
    StatusOr<json> seen = WaitForJob(
        name,
        [](const json& j) { return j.value("/status/progress/step"_json_pointer, 0) > 0; },
        seconds(15));
    ASSERT_TRUE(seen.ok()) << seen.status() << "\n" << LauncherLogs();
    const json& p = (*seen)["status"]["progress"];
    EXPECT_EQ(p["totalSteps"], 100000);
    EXPECT_EQ(p["percent"], 0);
    EXPECT_EQ(p["samplesPerSecond"], 64);
    EXPECT_TRUE(p.contains("lastUpdate"));
    const crdtest::KubectlResult get = crdtest::Kubectl({"get", "tj", name, "-n", ns()});
    ASSERT_TRUE(get.ok()) << get.output;
    // NAME STATE WORKERS RESTARTS PROGRESS GOODPUT AGE: the percent is a number.
    EXPECT_THAT(get.output,
                ::testing::ContainsRegex("RESTARTS +PROGRESS +GOODPUT +AGE\n" + name +
                                         " +[^ ]+ +[^ ]+ +[0-9]+ +[0-9]+ +[^ ]* *[0-9]+[sm]"));
    EXPECT_TRUE(WaitFor(
        [&] { return Metric("lockstep_job_samples_per_second", {{"name", name}}) == 64; },
        seconds(10)));
    EXPECT_GE(Metric("lockstep_job_progress_ratio", {{"name", name}}), 0);
  }
  std::string LauncherLogs() const {
    std::string out;
    for (const auto& l : launchers_) out += l->Log();
    return out;
  }
  void Annotate(const std::string& job, const std::string& value) {
    const json patch = {
        {"metadata", {{"annotations", {{"lockstep.dev/restart-request", value}}}}}};
    StatusOr<json> r = client().MergePatch(kube::resources::TrainingJobs(), ns(), job, patch);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  TempDir dir_;
  std::string address_;
  std::vector<std::unique_ptr<LauncherProcess>> launchers_;
};

TEST_F(InPlaceTest, AKilledRankIsAnInPlaceRestartInStatus) {
  const json job = StartJob("ip-killed");
  const std::string pod0 = PodUid("ip-killed-worker-0"), pod1 = PodUid("ip-killed-worker-1");
  // Rank 3 (node 1, local rank 1) fails in round 0 only; the launchers restart in place.
  StartLaunchers(job, {"--forever", "--fail-rank", "3", "--fail-code", "9", "--fail-restart", "0"});
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.1.", 4, seconds(30)))
      << LauncherLogs();
  const double before = Metric("lockstep_restarts_total", {{"mode", "InPlace"}});

  StatusOr<json> seen = WaitForJob(
      "ip-killed",
      [](const json& j) { return j.value("/status/restarts/inPlace"_json_pointer, 0) >= 1; },
      seconds(30));
  ASSERT_TRUE(seen.ok()) << seen.status() << "\n" << LauncherLogs();
  const json& st = (*seen)["status"];
  EXPECT_EQ(st["restarts"]["inPlace"], 1);
  EXPECT_EQ(st["restarts"]["failures"], 1);
  EXPECT_EQ(st["attempt"], 0);
  EXPECT_EQ(st["lastRestart"]["mode"], "InPlace");
  EXPECT_EQ(st["lastRestart"]["reason"], "RankFailed");
  const std::string message = st["lastRestart"]["message"];
  for (const char* part : {"rank 3", "ip-killed-worker-1", "exited with code 9",
                           "failing with code 9 on purpose"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
  }
  EXPECT_EQ(st["rendezvous"]["round"], 1);
  EXPECT_FALSE(WaitEvent("ip-killed", "RankFailed").is_null());
  EXPECT_TRUE(WaitFor(
      [&] { return Metric("lockstep_restarts_total", {{"mode", "InPlace"}}) >= before + 1; },
      seconds(5)));
  // The pods were kept.
  EXPECT_EQ(PodUid("ip-killed-worker-0"), pod0);
  EXPECT_EQ(PodUid("ip-killed-worker-1"), pod1);
  // The token never reaches status or events.
  StatusOr<json> secret = client().Get(kube::resources::Secrets(), ns(), "ip-killed-rdzv");
  ASSERT_TRUE(secret.ok());
  const std::string token = SecretToken(*secret);
  EXPECT_EQ(seen->dump().find(token), std::string::npos);
  for (const json& e : JobEvents("ip-killed")) EXPECT_EQ(e.dump().find(token), std::string::npos);
}

// Hot spares (docs/failures.md "Hot spares"): a 2-worker job with spareReplicas 1 runs three
// kwok pods; real launchers play worker 0, worker 1 and the standby spare. Node 1's launcher is
// killed: the spare takes node-rank 1 in round 1 (children of ranks 2 and 3 in its launcher),
// the operator records the promotion from node 0's answer, keeps attempt 0, deletes the replaced
// pod and creates a replacement spare. The job requires one rack: the replacement spare, placed
// alone while the gang runs, is pinned to the gang's rack (a nodeSelector), not any rack with room.
TEST_F(InPlaceTest, ASpareTakesALostNodeRankAndTheOperatorReplacesThePodNotTheGang) {
  const std::string name = "ip-spare";
  const std::string rack_key = "test.lockstep.dev/rack";
  // 8-GPU pods on 8-GPU nodes, one pod per node: rack a (3 nodes) is the only one that holds
  // the gang and its spare; rack b (2 nodes) has more room for a lone refill.
  const std::vector<std::string> nodes = CreateNodes(5);
  std::map<std::string, std::string> rack_of;
  for (size_t i = 0; i < nodes.size(); ++i) {
    rack_of[nodes[i]] = i < 3 ? "a" : "b";
    ASSERT_TRUE(client()
                    .MergePatch(kube::resources::Nodes(), "", nodes[i],
                                {{"metadata", {{"labels", {{rack_key, rack_of[nodes[i]]}}}}}})
                    .ok());
  }
  CreateJob(MakeJob(name, 2, [&](json& j) {
    j["spec"]["failurePolicy"]["restartMode"] = "InPlace";
    j["spec"]["failurePolicy"]["maxRestarts"] = 3;
    j["spec"]["failurePolicy"]["spareReplicas"] = 1;
    j["spec"]["placement"]["topologyKeys"] = json::array({rack_key});
    j["spec"]["placement"]["requiredTopologyKey"] = rack_key;
  }));
  ASSERT_TRUE(WaitRunningAttempt(name, 0, 3, seconds(30))) << "the gang and its spare never ran";
  ASSERT_TRUE(WaitFor([&] { return !PodIp(name + "-worker-0").empty(); }, seconds(20)));
  StatusOr<json> job = GetJob(name);
  ASSERT_TRUE(job.ok()) << job.status();
  StartLaunchers(*job, {"--forever"}, {"--max-restarts", "0"});
  StatusOr<json> secret = client().Get(kube::resources::Secrets(), ns(), name + "-rdzv");
  ASSERT_TRUE(secret.ok()) << secret.status();
  LauncherSpec spare;
  spare.args = {"--nnodes", "2", "--spare", "--role-index", "0", "--nproc-per-node", "2",
                "--rdzv-endpoint", address_ + ":" + std::to_string(api::kRdzvPort), "--rdzv-id",
                (*job)["metadata"]["uid"].get<std::string>(), "--advertise-addr", "127.0.0.1",
                "--grace-period", "2", "--max-restarts", "0"};
  spare.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path(), "--forever"};
  spare.env = {{"LOCKSTEP_TOKEN", SecretToken(*secret)},
               {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
  launchers_.push_back(std::make_unique<LauncherProcess>(spare, dir_.path() + "/spare.log"));
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.0.", 4, seconds(30)))
      << LauncherLogs();
  // The operator's poll (every 10 s) sees the spare stand by.
  StatusOr<json> ready = WaitForJob(
      name, [](const json& j) { return j.value("/status/spares/ready"_json_pointer, 0) == 1; },
      seconds(25));
  ASSERT_TRUE(ready.ok()) << ready.status() << "\n" << LauncherLogs();
  const std::string pod0 = PodUid(name + "-worker-0"), spare0 = PodUid(name + "-spare-0");
  const double before = Metric("lockstep_spare_promotions_total");

  launchers_[1]->Signal(SIGKILL);
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.1.", 4, seconds(20)))
      << LauncherLogs();
  StatusOr<json> seen = WaitForJob(
      name,
      [](const json& j) { return j.value("/status/spares/promotions"_json_pointer, 0) >= 1; },
      seconds(25));
  ASSERT_TRUE(seen.ok()) << seen.status() << "\n" << LauncherLogs();
  const json& st = (*seen)["status"];
  EXPECT_EQ(st["attempt"], 0) << st.dump(2);
  ASSERT_EQ(st["spares"]["serving"].size(), 1u) << st.dump(2);
  EXPECT_EQ(st["spares"]["serving"][0]["nodeRank"], 1);
  EXPECT_EQ(st["spares"]["serving"][0]["pod"], name + "-spare-0");
  EXPECT_FALSE(WaitEvent(name, "SparePromoted").is_null());
  EXPECT_TRUE(WaitFor(
      [&] { return Metric("lockstep_spare_promotions_total") >= before + 1; }, seconds(5)));
  // The replaced pod goes, a replacement spare comes; worker 0 and the promoted spare stay.
  EXPECT_TRUE(WaitFor([&] { return PodUid(name + "-worker-1").empty(); }, seconds(30)))
      << "the replaced pod was not deleted";
  EXPECT_TRUE(WaitFor([&] { return !PodUid(name + "-spare-1").empty(); }, seconds(30)))
      << "no replacement spare";
  EXPECT_EQ(PodUid(name + "-worker-0"), pod0);
  EXPECT_EQ(PodUid(name + "-spare-0"), spare0);
  StatusOr<json> after = GetJob(name);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Attempt(*after), 0) << (*after)["status"].dump(2);
  EXPECT_EQ(State(*after), "Running") << (*after)["status"].dump(2);
  EXPECT_TRUE(PodUid(name + "-worker-1").empty()) << "worker 1 is never recreated";
  StatusOr<json> refill = client().Get(kube::resources::Pods(), ns(), name + "-spare-1");
  ASSERT_TRUE(refill.ok()) << refill.status();
  EXPECT_EQ((*refill)["spec"]["nodeSelector"].value(rack_key, ""), "a")
      << (*refill)["spec"].dump(2);
  ASSERT_TRUE(WaitFor(
      [&] {
        StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), name + "-spare-1");
        return p.ok() && !(*p)["spec"].value("nodeName", "").empty();
      },
      seconds(30)))
      << "the replacement spare was never placed";
  StatusOr<json> placed = client().Get(kube::resources::Pods(), ns(), name + "-spare-1");
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(rack_of[(*placed)["spec"].value("nodeName", "")], "a") << (*placed)["spec"].dump(2);
}

TEST_F(InPlaceTest, TheRestartAnnotationRestartsInPlaceWithoutDeletingPods) {
  const json job = StartJob("ip-request");
  const std::string pod0 = PodUid("ip-request-worker-0"), pod1 = PodUid("ip-request-worker-1");
  // Rank 0 also reports progress (about 20 steps a second of 100000, 64 samples/s).
  StartLaunchers(job, {"--forever", "--progress-total", "100000"}, {"--max-restarts", "0"});
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.0.", 4, seconds(30)))
      << LauncherLogs();
  // The operator has heard from the launchers once the round runs.
  ASSERT_TRUE(WaitForJob(
                  "ip-request",
                  [](const json& j) { return j.contains("/status/rendezvous"_json_pointer); },
                  seconds(25))
                  .ok())
      << LauncherLogs();
  ExpectProgress("ip-request");
  Annotate("ip-request", "1");

  StatusOr<json> done = WaitForJob(
      "ip-request",
      [](const json& j) {
        return j.value("/status/restartRequest/state"_json_pointer, std::string()) == "Completed";
      },
      seconds(30));
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << LauncherLogs();
  const json& st = (*done)["status"];
  EXPECT_EQ(st["restartRequest"]["value"], "1");
  EXPECT_EQ(st["restartRequest"]["mode"], "InPlace");
  EXPECT_EQ(st["restartRequest"]["round"], 0);
  EXPECT_EQ(st["restarts"]["inPlace"], 1);
  EXPECT_EQ(st["restarts"]["failures"], 0);
  EXPECT_EQ(st["attempt"], 0);
  EXPECT_EQ(st["lastRestart"]["mode"], "InPlace");
  EXPECT_EQ(st["lastRestart"]["reason"], "RestartRequested");
  // The children of round 1 run with the next restart count; the pods were kept.
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.1.", 4, seconds(10)));
  for (const auto& env : launcher::testing::ReadEnvFiles(dir_.path(), "1")) {
    EXPECT_EQ(env.at("LOCKSTEP_RESTART_COUNT"), "1");
  }
  EXPECT_EQ(PodUid("ip-request-worker-0"), pod0);
  EXPECT_EQ(PodUid("ip-request-worker-1"), pod1);
  EXPECT_FALSE(WaitEvent("ip-request", "RestartRequested").is_null());
  for (const auto& l : launchers_) EXPECT_FALSE(l->Wait(milliseconds(1)).has_value());

  // The job's progress series go with it.
  ASSERT_TRUE(client().Delete(kube::resources::TrainingJobs(), ns(), "ip-request").ok());
  EXPECT_TRUE(WaitFor(
      [&] { return Metric("lockstep_job_samples_per_second", {{"name", "ip-request"}}) == 0; },
      seconds(20)));
}

TEST_F(InPlaceTest, LaunchersThatNeverFormTheNewRoundAreRecreatedAfterTheBound) {
  const json job = StartJob("ip-stuck", /*in_place_timeout=*/5);
  // A long peer timeout: node 1 frozen is not noticed as lost before the Restart arrives.
  StartLaunchers(job, {"--forever"}, {"--peer-timeout", "60"});
  ASSERT_TRUE(launcher::testing::WaitForFiles(dir_.path(), "env.0.", 4, seconds(30)))
      << LauncherLogs();
  ASSERT_TRUE(WaitForJob(
                  "ip-stuck",
                  [](const json& j) { return j.contains("/status/rendezvous"_json_pointer); },
                  seconds(25))
                  .ok());
  launchers_[1]->Signal(SIGSTOP);  // node 1 will never rejoin
  Annotate("ip-stuck", "now");
  StatusOr<json> fell = WaitForJob(
      "ip-stuck",
      [](const json& j) { return j.value("/status/attempt"_json_pointer, 0) == 1; }, seconds(30));
  launchers_[1]->Signal(SIGCONT);
  ASSERT_TRUE(fell.ok()) << fell.status() << "\n" << LauncherLogs();
  const json& st = (*fell)["status"];
  EXPECT_EQ(st["restartRequest"]["state"], "FellBack");
  EXPECT_EQ(st["restartRequest"]["mode"], "Recreate");
  EXPECT_EQ(st["lastRestart"]["mode"], "Recreate");
  EXPECT_EQ(st["lastRestart"]["reason"], "InPlaceRestartTimeout");
  EXPECT_EQ(st["restarts"]["failures"], 0);
  EXPECT_NE(LauncherLogs().find("restart requested"), std::string::npos);
  EXPECT_FALSE(WaitEvent("ip-stuck", "InPlaceRestartTimeout").is_null());
  EXPECT_TRUE(WaitRunningAttempt("ip-stuck", 1, 2, seconds(30))) << "attempt 1 never ran";
}

}  // namespace
}  // namespace lockstep::failures::testing
