// Real Horovod (0.28.1, PyTorch, Gloo controller) through Kubernetes: operator, gang scheduler,
// test node agent, launcher. The pods' image `lockstep/horovod` is mapped to an image root whose
// python is Horovod's own venv (.venv-horovod, hack/setup-venv-horovod.sh). Skipped, with the
// reason, only under LOCKSTEP_WITHOUT_HOROVOD=1; a missing venv fails. The protocol-level check
// of the launcher's Gloo rendezvous stays in the launcher tier (Horovod.* in tests/launcher).

#include <set>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

class Frameworks : public SharedClusterTest<Frameworks> {
 public:
  static ClusterOptions Options() {
    return ClusterOptions{.nodes = 3, .operator_args = {}, .horovod_image = true};
  }
  static std::string SuiteSkipReason() { return FrameworkCluster::HorovodSkipReason(); }
};

// 2 pods x 2 processes: hvd.init() over the launcher's Gloo rendezvous, DistributedOptimizer,
// broadcast_parameters. Rank 1 SIGKILLs itself in epoch 1; the launchers restart the gang in
// place, rank 0 loads its checkpoint and the broadcasts resume every rank from it; all 4 ranks
// end with identical weights, and the scopes Horovod built are the launcher's.
TEST_F(Frameworks, HorovodTwoPodsTimesTwoProcsKilledRankResumesInPlace) {
  const JobRun run = RunExample("horovod.yaml", "Succeeded", [](json& job) {
    SetFlag(job, "--kill-once-at-epoch", "1");
    SetFlag(job, "--crash-rank", "1");
  });
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  ExpectResumedInPlace(run, "KILLED rank=1 epoch=1", "HVD ");
  const std::vector<std::string> hvd = run.Lines("HVD ");
  ASSERT_EQ(hvd.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(hvd, "rank"), (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(Fields(hvd, "size"), std::set<std::string>{"4"});
  EXPECT_EQ(Fields(hvd, "local"), (std::set<std::string>{"0/2", "1/2"}));
  EXPECT_EQ(Fields(hvd, "cross"), (std::set<std::string>{"0/2", "1/2"}));
  EXPECT_EQ(Fields(hvd, "sum"), std::set<std::string>{"10"});  // allreduce of 1+2+3+4
}

}  // namespace
}  // namespace lockstep::e2e
