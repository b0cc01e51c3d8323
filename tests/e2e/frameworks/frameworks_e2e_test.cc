// PyTorch's example TrainingJobs (examples/local/) through Kubernetes: the operator places the
// gang, the test node agent runs the pods as processes on 3 Nodes, the launcher forms the world
// and torch trains. Each test requires Succeeded plus the framework's own evidence of
// distributed training, read from the container logs the agent keeps: DDP, Lightning, and FSDP
// (plain and through Lightning) with a rank killed mid-training that resumes from a sharded
// checkpoint; then the failure paths a single job can show: a permanent error, and a rank killed
// mid-training under DDP. All tests share one operator and one agent (docs/e2e.md "Framework e2e
// tests"); the other frameworks' binaries run beside this one.

#include <filesystem>
#include <set>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

class Frameworks : public SharedClusterTest<Frameworks> {};

// Files of `dir` whose names end with `suffix`.
int CountFiles(const std::string& dir, const std::string& suffix) {
  int n = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    n += name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(),
                                                      suffix) == 0;
  }
  return n;
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
  // Rank 0 reported its steps (examples/frameworks/common/progress.py); node 0's launcher left
  // the last report in its termination message, and the success pass wrote it: the final step
  // (3 epochs x 5 steps), whatever the 10 s write interval let through before.
  const json& progress = run.job["status"]["progress"];
  EXPECT_EQ(progress.value("step", -1), 15) << run.job["status"].dump();
  EXPECT_EQ(progress.value("totalSteps", -1), 15);
  EXPECT_EQ(progress.value("percent", -1), 100);
}

// Issue 45: a job of 13 lines naming a ClusterTrainingTemplate (examples/local/templates/) runs
// the DDP example end to end: framework, procsPerPod, image, node selector, resources and the
// failure policy come from the template; the job states its template, size and command. The
// template is this run's (cluster-scoped: a name of its own), deleted after.
TEST_F(Frameworks, PyTorchDdpFromAClusterTrainingTemplate) {
  const kube::ResourceRef templates{"lockstep.dev", "v1alpha1", "clustertrainingtemplates", false};
  StatusOr<json> tmpl = cluster_->LoadExample("templates/pytorch.template.yaml");
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const std::string name = "local-pytorch-" + cluster_->ns();
  (*tmpl)["metadata"] = {{"name", name}};
  ASSERT_TRUE(cluster_->client().Create(templates, "", *tmpl).ok());
  const JobRun run = RunExample("templates/pytorch-ddp.yaml", "Succeeded", [&](json& job) {
    job["spec"]["templateRef"]["name"] = name;
  });
  cluster_->client().Delete(templates, "", name).status().IgnoreError();
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ASSERT_EQ(run.pods.size(), 2u) << run.AllLogs();
  const std::vector<std::string> weights = run.Lines("WEIGHTS ");
  ASSERT_EQ(weights.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "world"), std::set<std::string>{"4"});
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << "ranks disagree:\n" << run.AllLogs();
  EXPECT_EQ(run.job["status"]["resolvedTemplate"].value("name", ""), name);
  EXPECT_EQ(Condition(run.job, "TemplateReady").value("reason", ""), "Snapshotted");
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
  ExpectResumedInPlace(run, "KILLED rank=2 epoch=1");
  EXPECT_EQ(Fields(run.Lines("RESUMED "), "format"), std::set<std::string>{"full"});
}

// FSDP2 on 2 pods x 2 processes; rank 3 SIGKILLs itself in epoch 1. Every epoch each rank wrote
// its shards with torch.distributed.checkpoint; after the in-place restart each rank loads its
// shards of epoch 0 back, and the gathered weights agree.
TEST_F(Frameworks, FsdpKilledRankResumesFromShardedCheckpointInPlace) {
  const JobRun run = RunExample("pytorch-fsdp.yaml", "Succeeded", [](json& job) {
    SetFlag(job, "--kill-once-at-epoch", "1");
    SetFlag(job, "--crash-rank", "3");
  });
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  ExpectResumedInPlace(run, "KILLED rank=3 epoch=1");
  EXPECT_EQ(Fields(run.Lines("RESUMED "), "format"), std::set<std::string>{"sharded"});
  // One file per rank: each wrote only its own shards.
  const std::string dir = cluster_->HostPathDir("pytorch-fsdp", "checkpoints");
  EXPECT_EQ(CountFiles(dir + "/dcp-epoch-0", ".distcp"), 4) << dir;
  EXPECT_EQ(CountFiles(dir + "/dcp-epoch-2", ".distcp"), 4) << dir;
}

// Lightning's ModelParallelStrategy (FSDP2) on 2 pods x 2 processes; rank 1 SIGKILLs itself as
// epoch 1 starts. ModelCheckpoint saved epoch 0 as a sharded checkpoint; the restarted Trainer
// picks TorchElasticEnvironment again and resumes from last.ckpt.
TEST_F(Frameworks, LightningFsdpKilledRankResumesFromShardedCheckpointInPlace) {
  const JobRun run = RunExample("pytorch-lightning-fsdp.yaml", "Succeeded", [](json& job) {
    SetFlag(job, "--kill-once-at-epoch", "1");
    SetFlag(job, "--crash-rank", "1");
  });
  ASSERT_FALSE(run.job.is_null()) << "the job never ended";
  ExpectOnAgentNodes(run, cluster_->nodes());
  const std::vector<std::string> envs = run.Lines("CLUSTER_ENV ");
  ASSERT_EQ(envs.size(), 8u) << run.AllLogs();  // 4 ranks, 2 rounds
  for (const std::string& l : envs) {
    EXPECT_EQ(l, "CLUSTER_ENV TorchElasticEnvironment world_size=4");
  }
  ExpectResumedInPlace(run, "KILLED rank=1 epoch=1");
  const std::string dir = cluster_->HostPathDir("pytorch-lightning-fsdp", "checkpoints");
  EXPECT_EQ(CountFiles(dir + "/last.ckpt", ".distcp"), 4) << dir;
}

}  // namespace
}  // namespace lockstep::e2e
