// PyTorch through the adapter: torchrun's environment, node 0's TCPStore-compatible store as the
// agent store, real torch (gloo, CPU), 2 pods x 2 processes on loopback.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "tests/launcher/frameworks/pod_driver.h"

namespace lockstep::launcher::testing {
namespace {

JobSpec TorchJob(std::vector<std::string> args) {
  JobSpec spec;
  spec.framework = "pytorch";
  spec.pods = {{"worker", 0, 2}, {"worker", 1, 2}};
  spec.command = {VenvPython(), RepoRoot() + "/examples/frameworks/pytorch/train.py"};
  spec.command.insert(spec.command.end(), args.begin(), args.end());
  return spec;
}

// Every rank printed one WEIGHTS line and all of them carry the same digest.
void ExpectIdenticalWeights(const JobResult& job, int world) {
  std::vector<std::string> lines = job.Lines("WEIGHTS ");
  ASSERT_EQ(static_cast<int>(lines.size()), world) << job.AllOutput();
  std::set<std::string> digests;
  std::set<std::string> ranks;
  for (const std::string& l : lines) {
    digests.insert(l.substr(l.find("sha="), 20));  // "sha=" + 16 hex digits
    ranks.insert(l.substr(0, l.find(' ', 8)));
    EXPECT_NE(l.find("world=" + std::to_string(world)), std::string::npos) << l;
  }
  EXPECT_EQ(digests.size(), 1u) << job.AllOutput();
  EXPECT_EQ(static_cast<int>(ranks.size()), world);
}

void ExpectAllExitedZero(const JobResult& job) {
  ASSERT_FALSE(job.timed_out) << job.AllOutput();
  for (const ChildResult& c : job.children) EXPECT_EQ(c.exit_code, 0) << job.AllOutput();
}

TEST(PyTorch, DdpTwoPodsTimesTwoProcsEndWithIdenticalWeights) {
  if (!VenvHasModule("torch")) GTEST_SKIP() << "no torch in " << VenvPython();
  JobResult job = RunJob(TorchJob({"--epochs", "2"}));
  ExpectAllExitedZero(job);
  ExpectIdenticalWeights(job, 4);
}

TEST(PyTorch, Fsdp2OnGlooCpuTwoPodsTimesTwoProcs) {
  if (!VenvHasModule("torch.distributed.fsdp")) GTEST_SKIP() << "no FSDP in this torch";
  JobResult job = RunJob(TorchJob({"--epochs", "2", "--fsdp"}));
  ExpectAllExitedZero(job);
  ExpectIdenticalWeights(job, 4);
}

// A rank dies in epoch 1 of attempt 0, the others are stopped; attempt 1
// (TORCHELASTIC_RESTART_COUNT=1, a fresh store as the launcher starts per attempt) resumes from
// the epoch-0 checkpoint and finishes.
TEST(PyTorch, RestartAfterKilledRankResumesFromCheckpoint) {
  if (!VenvHasModule("torch")) GTEST_SKIP() << "no torch in " << VenvPython();
  const std::string ckpt = "/tmp/lockstep-ckpt-" + std::to_string(::getpid());
  std::filesystem::remove_all(ckpt);
  JobSpec spec = TorchJob(
      {"--epochs", "3", "--checkpoint-dir", ckpt, "--crash-at-epoch", "1", "--crash-rank", "3"});
  spec.max_restarts = 1;
  spec.fail_fast = true;
  JobResult first = RunJob(spec);
  EXPECT_EQ(first.Lines("CRASH rank=3 epoch=1").size(), 1u) << first.AllOutput();
  EXPECT_TRUE(std::filesystem::exists(ckpt + "/checkpoint.pt"));

  spec.restart_count = 1;
  spec.fail_fast = false;
  JobResult second = RunJob(spec);
  ExpectAllExitedZero(second);
  EXPECT_EQ(second.Lines("RESUMED ").size(), 4u) << second.AllOutput();
  EXPECT_THAT(second.Lines("RESUMED rank=0"),
              ::testing::ElementsAre("RESUMED rank=0 epoch=1 attempt=1 format=full step=10"));
  ExpectIdenticalWeights(second, 4);
  std::filesystem::remove_all(ckpt);
}

TEST(PyTorch, LightningTrainerPicksTorchElasticEnvironment) {
  if (!VenvHasModule("lightning")) GTEST_SKIP() << "no lightning in " << VenvPython();
  JobSpec spec = TorchJob({});
  spec.command = {VenvPython(), RepoRoot() + "/examples/frameworks/pytorch/lightning_train.py"};
  JobResult job = RunJob(spec);
  ExpectAllExitedZero(job);
  std::vector<std::string> env_lines = job.Lines("CLUSTER_ENV ");
  ASSERT_EQ(env_lines.size(), 4u) << job.AllOutput();
  for (const std::string& l : env_lines) {
    EXPECT_NE(l.find("TorchElasticEnvironment world_size=4"), std::string::npos) << l;
  }
  ExpectIdenticalWeights(job, 4);
}

}  // namespace
}  // namespace lockstep::launcher::testing
