// Every framework's example TrainingJob (examples/local/) through Kubernetes: the operator places
// the gang, the test node agent runs the pods as processes on 3 Nodes, the launcher forms the
// world and the real framework trains. Each test requires Succeeded plus the framework's own
// evidence of distributed training, read from the container logs the agent keeps. Then the
// failure paths a single job can show: a permanent error, and a rank killed mid-training.
// All tests share one operator and one agent (docs/e2e.md "Framework e2e tests").

#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

class Frameworks : public SharedClusterTest<Frameworks> {
 public:
  static ClusterOptions Options() { return ClusterOptions{.nodes = 3, .operator_args = {}}; }
};

// Every pod ran on one of this agent's nodes (the gang scheduler honoured the selector), and no
// pod exists that never ran (a pass on a stale job once recreated a finished job's pods).
void ExpectOnAgentNodes(const JobRun& run, const std::vector<std::string>& nodes) {
  const std::set<std::string> ours(nodes.begin(), nodes.end());
  for (const JobRun::Pod& pod : run.pods) {
    EXPECT_EQ(ours.count(pod.node), 1u) << pod.name << " (attempt " << pod.attempt
                                        << ") ran on node '" << pod.node << "'";
  }
}

// "... loss=<first>-><last>" with last < first.
bool LossFell(const std::string& line) {
  const std::string loss = Field(line, "loss");
  const size_t arrow = loss.find("->");
  if (arrow == std::string::npos) return false;
  return std::stod(loss.substr(arrow + 2)) < std::stod(loss.substr(0, arrow));
}

TEST_F(Frameworks, PyTorchDdpTwoPodsTimesTwoProcsEndWithIdenticalWeights) {
  const JobRun run = RunExample("pytorch-ddp.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ASSERT_EQ(run.pods.size(), 2u) << run.AllLogs();
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> weights = run.Lines("WEIGHTS ");
  ASSERT_EQ(weights.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "rank"), (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(Fields(weights, "world"), std::set<std::string>{"4"});
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << "ranks disagree:\n" << run.AllLogs();
  // Rank 0 checkpointed every epoch into the shared hostPath volume.
  EXPECT_TRUE(std::filesystem::exists(cluster_->HostPathDir("pytorch-ddp", "checkpoints") +
                                      "/checkpoint.pt"));
}

TEST_F(Frameworks, LightningTrainerPicksTorchElasticEnvironment) {
  const JobRun run = RunExample("pytorch-lightning.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> envs = run.Lines("CLUSTER_ENV ");
  ASSERT_EQ(envs.size(), 4u) << run.AllLogs();
  for (const std::string& l : envs) {
    EXPECT_EQ(l, "CLUSTER_ENV TorchElasticEnvironment world_size=4");
  }
  const std::vector<std::string> weights = run.Lines("WEIGHTS ");
  ASSERT_EQ(weights.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "rank"), (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << run.AllLogs();
}

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
  const JobRun run = RunExample(
      "tensorflow-ps.yaml", "Succeeded", [](json&) {}, std::chrono::seconds(120));
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

TEST_F(Frameworks, HorovodRendezvousBuildsMeshesAcrossTwoPodsTimesTwoProcs) {
  const JobRun run = RunExample("horovod.yaml");
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  EXPECT_EQ(run.Lines("HVD_PROTO_OK ").size(), 4u) << run.AllLogs();
  // global: 1+2+3+4. local (ranks 0,1 | 2,3): 3 | 7. cross (ranks 0,2 | 1,3): 4 | 6.
  std::multiset<std::string> sums;
  for (const std::string& l : run.Lines("HVD_SCOPE ")) {
    sums.insert(l.substr(10, l.find(' ', 10) - 10) + "=" + Field(l, "sum"));
  }
  EXPECT_EQ(sums, (std::multiset<std::string>{"global=10", "global=10", "global=10", "global=10",
                                              "local=3", "local=3", "local=7", "local=7", "cross=4",
                                              "cross=4", "cross=6", "cross=6"}))
      << run.AllLogs();
}

TEST_F(Frameworks, RayHeadAndTwoWorkersRunTheEntrypoint) {
  const JobRun run = RunExample(
      "ray.yaml", "Succeeded", [](json&) {}, std::chrono::seconds(240));
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  EXPECT_EQ(run.pods.size(), 3u);
  const std::vector<std::string> lines = run.Lines("RAY_TRAIN ");
  ASSERT_EQ(lines.size(), 1u) << run.AllLogs();
  // The entrypoint ran as the driver on the head; Ray Train placed 3 workers on the 3 pods' nodes.
  EXPECT_EQ(Field(lines[0], "workers"), "3") << lines[0];
  EXPECT_EQ(Field(lines[0], "nodes"), "3") << lines[0];
  EXPECT_EQ(Field(lines[0], "error"), "None") << lines[0];
}

// Rank 1 reports a permanent error on stderr and exits 3; a FailJob rule on 3 ends the job at
// once, and the Failed condition carries the code and the rank's last stderr lines.
TEST_F(Frameworks, PermanentErrorFailsTheJobWithTheCodeAndTheRanksStderr) {
  const JobRun run = RunExample("pytorch-ddp.yaml", "Failed", [](json& job) {
    job["metadata"]["name"] = "pytorch-ddp-permanent";
    SetFlag(job, "--exit-code", "3");
    SetFlag(job, "--crash-rank", "1");
    job["spec"]["failurePolicy"]["rules"].push_back(
        {{"name", "unreadable-data"},
         {"action", "FailJob"},
         {"onExitCodes", {{"operator", "In"}, {"values", {3}}}}});
  });
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  const json failed = Condition(run.job, "Failed");
  EXPECT_EQ(failed.value("status", ""), "True") << run.job["status"].dump(2);
  const std::string message = failed.value("message", "");
  EXPECT_NE(message.find("3"), std::string::npos) << message;
  EXPECT_NE(message.find("dataset shard 1 is unreadable"), std::string::npos) << message;
  EXPECT_NE(run.job["status"].value("message", "").find("unreadable-data"), std::string::npos)
      << "the rule that decided is named: " << run.job["status"].dump(2);
}

// Rank 2 SIGKILLs itself in epoch 1 (once: a marker in the checkpoint dir remembers it). The
// launchers restart the gang in place, the ranks resume from rank 0's last checkpoint, and the
// operator counts one in-place restart.
TEST_F(Frameworks, KilledRankRestartsInPlaceAndResumesFromCheckpoint) {
  const JobRun run = RunExample("pytorch-ddp.yaml", "Succeeded", [](json& job) {
    job["metadata"]["name"] = "pytorch-ddp-inplace";
    SetFlag(job, "--kill-once-at-epoch", "1");
    SetFlag(job, "--crash-rank", "2");
  });
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  EXPECT_EQ(run.Lines("KILLED rank=2 epoch=1").size(), 1u) << run.AllLogs();
  // The same pods ran both rounds: nothing was recreated.
  EXPECT_EQ(run.pods.size(), 2u);
  const std::vector<std::string> resumed = run.Lines("RESUMED ");
  ASSERT_EQ(resumed.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(resumed, "epoch"), std::set<std::string>{"1"});    // epoch 0 was saved
  EXPECT_EQ(Fields(resumed, "attempt"), std::set<std::string>{"1"});  // TORCHELASTIC_RESTART_COUNT
  const std::vector<std::string> weights = run.Lines("WEIGHTS ");
  ASSERT_EQ(weights.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << run.AllLogs();
  const json& status = run.job["status"];
  EXPECT_EQ(status.value("restarts", json::object()).value("inPlace", -1), 1) << status.dump(2);
  EXPECT_EQ(status.value("lastRestart", json::object()).value("mode", ""), "InPlace")
      << status.dump(2);
}

}  // namespace
}  // namespace lockstep::e2e
