// TensorFlow's and JAX's example TrainingJobs (examples/local/) through Kubernetes (operator,
// gang scheduler, test node agent, launcher): TensorFlow data parallelism (MultiWorkerMirrored),
// parameter servers, and model parallelism with DTensor multi-client; JAX across processes and
// JAX automatic sharding over a global mesh. One operator and one agent serve the binary
// (docs/e2e.md "Framework e2e tests").

#include <map>
#include <set>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

class Frameworks : public SharedClusterTest<Frameworks> {};

TEST_F(Frameworks, TensorFlowMultiWorkerMirroredTwoWorkersEndIdentical) {
  const JobRun run = RunExample("tensorflow-multiworker.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> weights = run.Lines("WEIGHTS task=worker:");
  ASSERT_EQ(weights.size(), 2u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "task"), (std::set<std::string>{"worker:0", "worker:1"}));
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << run.AllLogs();
  for (const std::string& l : weights) EXPECT_TRUE(LossFell(l)) << l;  // it trained
}

TEST_F(Frameworks, TensorFlowParameterServerChiefPsAndTwoWorkersComplete) {
  const JobRun run = RunExample("tensorflow-ps.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  std::map<std::string, int> roles;
  for (const JobRun::Pod& pod : run.pods) ++roles[pod.name.substr(0, pod.name.rfind('-'))];
  EXPECT_EQ(roles,
            (std::map<std::string, int>{
                {"tensorflow-ps-chief", 1}, {"tensorflow-ps-ps", 1}, {"tensorflow-ps-worker", 2}}));
  const std::vector<std::string> done = run.Lines("PS_DONE steps=20 ");
  ASSERT_EQ(done.size(), 1u) << run.AllLogs();
  // Training ran on the workers against the ps variables.
  EXPECT_TRUE(LossFell(done[0])) << done[0];
}

TEST_F(Frameworks, JaxTwoProcessesSeeEachOtherAndSumAcrossProcesses) {
  const JobRun run = RunExample("jax.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> lines = run.Lines("JAX process=");
  ASSERT_EQ(lines.size(), 2u) << run.AllLogs();
  EXPECT_EQ(Fields(lines, "process"), (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(Fields(lines, "count"), std::set<std::string>{"2"});
  EXPECT_EQ(Fields(lines, "sum"), std::set<std::string>{"3"});  // 1 + 2, across processes
  EXPECT_EQ(Fields(lines, "sha").size(), 1u) << run.AllLogs();
}

// DTensor multi-client: one client per worker pod, the mesh model=2 x batch=2 spans both pods,
// the hidden layer's weights are sharded over "model". Every client ends with the same weights,
// equal to plain TensorFlow's on one device, and the loss fell.
TEST_F(Frameworks, TensorFlowDTensorWeightsShardedAcrossTwoPodsAgree) {
  const JobRun run = RunExample("tensorflow-dtensor.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> lines = run.Lines("DTENSOR ");
  ASSERT_EQ(lines.size(), 2u) << run.AllLogs();
  EXPECT_EQ(Fields(lines, "client"), (std::set<std::string>{"0", "1"}));
  EXPECT_EQ(Fields(lines, "clients"), std::set<std::string>{"2"});
  EXPECT_EQ(Fields(lines, "mesh"), std::set<std::string>{"2x2"});
  EXPECT_EQ(Fields(lines, "sha").size(), 1u) << run.AllLogs();
  for (const std::string& l : lines) {
    EXPECT_NE(l.find("w1=['unsharded', 'model']"), std::string::npos) << l;
    EXPECT_TRUE(LossFell(l)) << l;
    EXPECT_LT(NumberField(l, "ref_diff"), 1e-5) << l;
  }
}

// 2 pods x 2 processes, one global mesh data=2 x model=2; parameters sharded over "model", the
// batch (from make_array_from_process_local_data) over "data". Every process ends with the same
// weights, equal to a single-process run of the same steps, and the loss fell.
TEST_F(Frameworks, JaxShardedJitOverGlobalMeshOfTwoPodsTimesTwoProcs) {
  const JobRun run = RunExample("jax-sharded.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> lines = run.Lines("JAX_SHARDED ");
  ASSERT_EQ(lines.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(lines, "process"), (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(Fields(lines, "count"), std::set<std::string>{"4"});
  EXPECT_EQ(Fields(lines, "mesh"), std::set<std::string>{"2x2"});
  EXPECT_EQ(Fields(lines, "sha").size(), 1u) << run.AllLogs();
  for (const std::string& l : lines) {
    EXPECT_TRUE(LossFell(l)) << l;
    EXPECT_LT(NumberField(l, "ref_diff"), 1e-5) << l;
  }
}

}  // namespace
}  // namespace lockstep::e2e
