// Issue 18, hole 8: the operator stops within a bound whatever the apiserver does. A leader that
// cannot stop cannot release its Lease early and holds up every rollout; seen before: a cluster
// torn down under a running operator, SIGTERM, and 30 s later it still retried "cannot write
// Scheduled condition" every ~8 s, until SIGKILL.
//
// The test makes a cluster of its own (hack/cluster.sh up --name ...), so stopping it touches no
// other test: an operator with the gang scheduler, busy on it (one job
// placed, one that cannot fit, whose Scheduled=False the scheduler keeps writing), then the
// whole cluster is stopped under it, and SIGTERM must end it, cleanly, within 5 s.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"

namespace lockstep::controller::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::string CacheDir() {
  const char* cache = std::getenv("LOCKSTEP_CACHE");
  const char* home = std::getenv("HOME");
  return cache != nullptr ? cache : std::string(home ? home : "/root") + "/.cache/lockstep";
}

// A cluster of the test's own, stopped by the test or at the end.
class OwnCluster {
 public:
  OwnCluster() : name_("shut-" + kube::testing::RandomSuffix()) {}
  ~OwnCluster() { Down(); }
  Status Up() {
    up_ = true;
    return Script("up --nodes 2 --gpus-per-node 8 --blocks 1 --racks-per-block 1");
  }
  void Down() {
    if (up_) Script("down").IgnoreError();
    up_ = false;
  }
  std::string kubeconfig() const { return CacheDir() + "/clusters/" + name_ + "/admin.kubeconfig"; }

 private:
  Status Script(const std::string& args) {
    const std::string cmd = std::string(LOCKSTEP_SOURCE_DIR) + "/hack/cluster.sh " + args +
                            " --name " + name_ + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) return InternalError("`" + cmd + "` failed");
    return Status::Ok();
  }
  std::string name_;
  bool up_ = false;
};

TEST(OperatorShutdownTest, StopsWithinFiveSecondsWithTheApiserverGone) {
  OwnCluster cluster;
  ASSERT_TRUE(cluster.Up().ok()) << "cannot start a cluster of the test's own";
  const std::string kc = "--kubeconfig " + cluster.kubeconfig();
  ASSERT_EQ(Kubectl(kc + " apply --server-side -f " + std::string(LOCKSTEP_SOURCE_DIR) +
                    "/crds/ >/dev/null"),
            0);
  ASSERT_EQ(Kubectl(kc + " wait --for=condition=Established crd/trainingjobs.lockstep.dev "
                         "--timeout=60s >/dev/null"),
            0);
  StatusOr<kube::ClusterConfig> config = kube::LoadKubeconfig(cluster.kubeconfig());
  ASSERT_TRUE(config.ok()) << config.status();
  auto transport = kube::NewCurlTransport(*config);
  ASSERT_TRUE(transport.ok()) << transport.status();
  kube::RestClient client(std::shared_ptr<kube::Transport>(std::move(transport).value()),
                          kube::testing::NoLimits());
  const std::string ns = "shutdown";
  ASSERT_EQ(Kubectl(kc + " create namespace " + ns + " >/dev/null"), 0);
  ASSERT_TRUE(kube::testing::WaitForDefaultServiceAccount(client, ns).ok());

  // No leader election: a leader that loses its apiserver exits by itself once its lease is
  // past renewal (status 1), which would hide the stop this test measures.
  OperatorProcess op({ns}, {"--kubeconfig=" + cluster.kubeconfig(), "--gang-scheduler=true"});
  ASSERT_TRUE(op.Start().ok());
  ASSERT_TRUE(op.WaitReady(seconds(60))) << op.ready_answer() << "; log: " << op.log_path();
  ASSERT_TRUE(client.Create(kube::resources::TrainingJobs(), ns, MakeJob("fits", 2)).ok());
  ASSERT_TRUE(client.Create(kube::resources::TrainingJobs(), ns, MakeJob("too-big", 64)).ok());
  StatusOr<json> waiting = WaitForJob(
      client, ns, "too-big",
      [](const json& j) { return ConditionStatus(j, "Scheduled") == "False"; }, seconds(60));
  ASSERT_TRUE(waiting.ok()) << waiting.status() << "; log: " << op.log_path();

  cluster.Down();  // etcd, apiserver and all: gone under the running operator
  std::this_thread::sleep_for(seconds(3));  // its requests fail and are retried meanwhile
  ASSERT_TRUE(op.Running());
  const auto sent = std::chrono::steady_clock::now();
  op.Signal(SIGTERM);
  const bool exited = op.WaitExit(seconds(30));
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::cout << "[shutdown] exited " << (exited ? "" : "NOT ") << took
            << " s after SIGTERM, status " << op.last_exit() << "\n";
  RecordProperty("stop_seconds", std::to_string(took));
  ASSERT_TRUE(exited) << "still running 30 s after SIGTERM; log: " << op.log_path();
  EXPECT_LT(took, 5.0) << "log: " << op.log_path();
  // 0: it stopped cleanly; 1 would be the backstop's exit after the bound.
  EXPECT_EQ(op.last_exit(), 0) << "log: " << op.log_path();
}

}  // namespace
}  // namespace lockstep::controller::testing
