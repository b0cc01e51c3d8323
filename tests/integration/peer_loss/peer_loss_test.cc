// Peer-corroborated node loss against the real kube-apiserver (docs/failures.md "Peer
// evidence"): the operator (gang scheduler on, --node-lease-grace=60s so the Lease path cannot be
// what acted) with kwok nodes of each test's own, and real lockstep-launcher processes playing
// the pods' launchers (launcher_gang.h: each pod's kwok IP on `lo`).
//   - A node dies (its launcher SIGKILLed, nothing answers at its IP, its Lease frozen): node 0's
//     launcher reports the member lost, the operator cannot reach the pod and the Lease is stale,
//     so the gang runs again elsewhere long before the grace; the event and lastRestart say so.
//   - A node is partitioned but alive (its launcher cut off from node 0 and from the operator,
//     its Lease frozen): a false suspicion that costs one restart, and the partitioned launcher
//     kills its ranks (fencing) before the new attempt's pods run.
//   - A launcher cut off from node 0 while the operator still reaches its pod and its Lease
//     renews: not corroborated, no restart on that evidence.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "operator/api/children.h"
#include "operator/kube/base64.h"
#include "tests/integration/failures/failures_env.h"
#include "tests/integration/kube/test_env.h"
#include "tests/integration/peer_loss/launcher_gang.h"

namespace lockstep::failures::testing {
namespace {

using kube::testing::WaitFor;
using lockstep::testing::GangOptions;
using lockstep::testing::GangPod;
using lockstep::testing::LauncherGang;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kGraceSeconds = 60;

class PeerLossTest : public FailuresTest {
 protected:
  static void SetUpTestSuite() {
    lease_grace_seconds_ = kGraceSeconds;
    FailuresTest::SetUpTestSuite();
  }
  void TearDown() override {
    gang_.reset();
    FailuresTest::TearDown();
  }

  // A 2-worker job on 3 nodes of this test (one left for the next attempt), running, with real
  // launchers whose children run.
  // `child_args`: the children's (lockstep_test_child) arguments after OUTDIR.
  void StartJob(const std::string& name, std::vector<std::string> launcher_args = {},
                std::vector<std::string> child_args = {"--forever"}) {
    CreateNodes(3);
    CreateJob(MakeJob(name, 2));
    ASSERT_TRUE(WaitRunningAttempt(name, 0, 2, seconds(30))) << "attempt 0 never ran";
    std::vector<GangPod> pods;
    for (int i = 0; i < 2; ++i) {
      const std::string pod = name + "-worker-" + std::to_string(i);
      json p;
      ASSERT_TRUE(WaitFor(
          [&] {
            StatusOr<json> got = client().Get(kube::resources::Pods(), ns(), pod);
            if (!got.ok()) return false;
            p = *got;
            return !p.value("/status/podIP"_json_pointer, std::string()).empty();
          },
          seconds(20)));
      pods.push_back({pod, p["status"]["podIP"], p["spec"]["nodeName"], p["metadata"]["uid"]});
    }
    StatusOr<json> job = GetJob(name);
    ASSERT_TRUE(job.ok()) << job.status();
    StatusOr<json> secret = client().Get(kube::resources::Secrets(), ns(), name + "-rdzv");
    ASSERT_TRUE(secret.ok()) << secret.status();
    StatusOr<std::string> token = kube::Base64Decode((*secret)["data"]["token"].get<std::string>());
    ASSERT_TRUE(token.ok());
    GangOptions o;
    o.run_id = (*job)["metadata"]["uid"];
    o.token = *token;
    o.launcher_bin = LOCKSTEP_LAUNCHER_BIN;
    o.child_bin = LOCKSTEP_TEST_CHILD_BIN;
    o.dir = dir_.path();
    o.launcher_args = std::move(launcher_args);
    o.child_args = std::move(child_args);
    StatusOr<std::unique_ptr<LauncherGang>> gang = LauncherGang::Start(pods, o);
    ASSERT_TRUE(gang.ok()) << gang.status();
    gang_ = std::move(*gang);
    ASSERT_TRUE(gang_->WaitChildren(seconds(30))) << gang_->Logs();
    // The operator has heard from the launchers (a poll answered while the round runs).
    ASSERT_TRUE(WaitForJob(
                    name,
                    [](const json& j) { return j.contains("/status/rendezvous"_json_pointer); },
                    seconds(30))
                    .ok())
        << gang_->Logs();
  }

  launcher::testing::TempDir dir_;
  std::unique_ptr<LauncherGang> gang_;
};

TEST_F(PeerLossTest, ADeadNodeIsReplacedOnPeerEvidenceLongBeforeTheLeaseGrace) {
  StartJob("pl-dead");
  const std::string node = gang_->pod(1).node;
  const double before = Metric("lockstep_peer_loss_reports_total", {{"verdict", "corroborated"}});
  StopHeartbeat(node);
  const auto killed = Clock::now();
  ASSERT_TRUE(gang_->Kill(1).ok());

  const std::optional<Clock::time_point> running = WaitRunningAttempt("pl-dead", 1, 2, seconds(40));
  ASSERT_TRUE(running) << "attempt 1 never ran\n" << gang_->Logs();
  const double took = SecondsBetween(killed, *running);
  std::printf("peer evidence: kill -> attempt 1 running in %.1f s (grace %d s)\n", took,
              kGraceSeconds);
  EXPECT_LT(took, 20.0) << "the peer evidence did not act before the Lease path";
  StatusOr<json> job = GetJob("pl-dead");
  ASSERT_TRUE(job.ok());
  const json& st = (*job)["status"];
  EXPECT_EQ(st["lastRestart"]["reason"], "PeerReportedLost");
  EXPECT_EQ(st["lastRestart"]["nodes"], json::array({node}));
  EXPECT_EQ(st["restarts"]["disruptions"], 1);
  EXPECT_EQ(st["restarts"]["failures"], 0);
  EXPECT_FALSE(Excluded(*job, node).is_null());
  const std::string message = st["lastRestart"]["message"];
  for (const std::string& part :
       {std::string("pod pl-dead-worker-1 on node ") + node, std::string("connection closed"),
        std::string("LauncherUnreachable"), std::string("its Lease was last renewed")}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
  }
  const json event = WaitEvent("pl-dead", "PeerReportedLost");
  ASSERT_FALSE(event.is_null());
  EXPECT_NE(event["message"].get<std::string>().find("LauncherUnreachable"), std::string::npos);
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metric("lockstep_peer_loss_reports_total", {{"verdict", "corroborated"}}) >=
               before + 1;
      },
      seconds(5)));
  // No pod of attempt 1 on the dead node.
  for (const json& p : RunningAttempt("pl-dead", 1, 2)) EXPECT_NE(p["spec"]["nodeName"], node);
}

TEST_F(PeerLossTest, APartitionedLiveNodeCostsOneRestartAndItsRanksStopFirst) {
  // Ranks that would go on for 30 s after a SIGTERM (a trainer finishing its step and writing a
  // checkpoint), with a 30 s grace (a gang stop's is capped at 10 s): only a SIGKILL at once stops
  // them before the new attempt runs.
  StartJob("pl-part", {"--peer-timeout", "3", "--grace-period", "30"},
           {"--forever", "--term-delay", "30"});
  const std::string node = gang_->pod(1).node;
  StopHeartbeat(node);
  ASSERT_TRUE(gang_->Partition(1, /*from_operator_too=*/true).ok());
  const auto cut = Clock::now();

  const std::optional<Clock::time_point> running = WaitRunningAttempt("pl-part", 1, 2, seconds(40));
  ASSERT_TRUE(running) << "attempt 1 never ran\n" << gang_->Logs();
  std::printf("partition: cut -> attempt 1 running in %.1f s\n", SecondsBetween(cut, *running));
  // Fencing: the partitioned launcher lost node 0, killed its ranks at once and left with 75
  // ("a peer was lost"); its ranks stopped writing before the new attempt's pods ran, and write
  // no more.
  EXPECT_EQ(gang_->launcher(1).Wait(seconds(5)), std::optional<int>(75)) << gang_->Logs();
  const auto last = gang_->LastCheckpoint(1);
  EXPECT_LT(last, *running) << "a rank of the old world wrote " << SecondsBetween(*running, last)
                            << " s after the new world ran";
  std::this_thread::sleep_for(milliseconds(500));
  EXPECT_EQ(gang_->LastCheckpoint(1), last) << "the partitioned ranks still write";
  EXPECT_NE(gang_->Logs().find("killing the children at once (fencing)"), std::string::npos);

  StatusOr<json> job = GetJob("pl-part");
  ASSERT_TRUE(job.ok());
  const json& st = (*job)["status"];
  EXPECT_EQ(st["lastRestart"]["reason"], "PeerReportedLost");
  const std::string message = st["lastRestart"]["message"];
  for (const char* part : {"silent", "LauncherUnreachable", "timed out"}) {
    EXPECT_NE(message.find(part), std::string::npos) << part << " in " << message;
  }
  EXPECT_FALSE(WaitEvent("pl-part", "PeerReportedLost").is_null());
  RestoreHeartbeat(node);
}

TEST_F(PeerLossTest, ACutOffLauncherWhosePodAndLeaseAnswerIsNotCorroborated) {
  StartJob("pl-cut", {"--peer-timeout", "3"});
  const double before =
      Metric("lockstep_peer_loss_reports_total", {{"verdict", "not_corroborated"}});
  // Only launcher 1's connection to node 0 is cut: the operator still reaches the pod.
  ASSERT_TRUE(gang_->Partition(1, /*from_operator_too=*/false).ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        return Metric("lockstep_peer_loss_reports_total", {{"verdict", "not_corroborated"}}) >=
               before + 1;
      },
      seconds(30)))
      << gang_->Logs();
  // No restart on that evidence (the join timeout and the Lease grace still apply).
  std::this_thread::sleep_for(seconds(3));
  StatusOr<json> job = GetJob("pl-cut");
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(Attempt(*job), 0);
  EXPECT_TRUE(FindEvent("pl-cut", "PeerReportedLost").is_null());
  gang_->Heal(1);
}

// What a gang of a process killed before its destructors left (a DROP rule, an address on lo)
// is removed by the next one; what a live process's gang added stays.
TEST(LauncherGangTest, LeftoversOfAProcessThatIsGoneAreRemovedThoseOfALiveOneKept) {
  if (geteuid() != 0) GTEST_SKIP() << "ip and iptables need root";
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  auto rule = [](const std::string& ip, pid_t owner) {
    return "-d " + ip + "/32 -p tcp -m tcp --dport 29400 -m comment --comment lockstep-gang-" +
           std::to_string(owner) + " -j DROP";
  };
  auto run = [](const std::string& command) { return std::system(command.c_str()); };
  const std::string gone_ip = "10.254.254.1", live_ip = "10.254.254.2";
  ASSERT_EQ(run("iptables -I OUTPUT " + rule(gone_ip, gone)), 0);
  ASSERT_EQ(run("iptables -I OUTPUT " + rule(live_ip, getpid())), 0);
  ASSERT_EQ(run("ip addr add " + gone_ip + "/32 dev lo label lo:g" + std::to_string(gone)), 0);
  ASSERT_EQ(run("ip addr add " + live_ip + "/32 dev lo label lo:g" + std::to_string(getpid())), 0);

  EXPECT_GE(LauncherGang::RemoveLeftovers(), 2);  // more if a real run left some
  EXPECT_NE(run("iptables -C OUTPUT " + rule(gone_ip, gone)), 0);
  EXPECT_EQ(run("iptables -C OUTPUT " + rule(live_ip, getpid())), 0);
  EXPECT_NE(run("ip -o addr show dev lo | grep -qF ' " + gone_ip + "/32 '"), 0);
  EXPECT_EQ(run("ip -o addr show dev lo | grep -qF ' " + live_ip + "/32 '"), 0);

  run("iptables -D OUTPUT " + rule(live_ip, getpid()) + " 2>/dev/null");
  run("ip addr del " + live_ip + "/32 dev lo 2>/dev/null");
  run("iptables -D OUTPUT " + rule(gone_ip, gone) + " 2>/dev/null");
  run("ip addr del " + gone_ip + "/32 dev lo 2>/dev/null");
}

}  // namespace
}  // namespace lockstep::failures::testing
