// TensorFlow through the adapter: one TF_CONFIG per task, real tf.distribute on loopback, CPU.

#include <gtest/gtest.h>

#include <set>

#include "tests/launcher/frameworks/pod_driver.h"

namespace lockstep::launcher::testing {
namespace {

// "... loss=<first>-><last>"
double FirstLoss(const std::string& line) { return std::stod(line.substr(line.find("loss=") + 5)); }
double LastLoss(const std::string& line) { return std::stod(line.substr(line.find("->") + 2)); }

JobSpec TfJob(std::vector<PodSpec> pods, const std::string& strategy) {
  JobSpec spec;
  spec.framework = "tensorflow";
  spec.pods = std::move(pods);
  spec.command = {VenvPython(), RepoRoot() + "/examples/frameworks/tensorflow/train.py",
                  "--strategy", strategy};
  spec.env = {{"TF_CPP_MIN_LOG_LEVEL", "2"}, {"CUDA_VISIBLE_DEVICES", ""}};
  return spec;
}

TEST(TensorFlow, MultiWorkerMirroredTwoWorkersEndIdentical) {
  if (!VenvHasModule("tensorflow")) GTEST_SKIP() << "no tensorflow in " << VenvPython();
  JobResult job = RunJob(TfJob({{"worker", 0, 1}, {"worker", 1, 1}}, "multi-worker-mirrored"));
  ASSERT_FALSE(job.timed_out) << job.AllOutput();
  for (const ChildResult& c : job.children) EXPECT_EQ(c.exit_code, 0) << job.AllOutput();
  std::vector<std::string> lines = job.Lines("WEIGHTS ");
  ASSERT_EQ(lines.size(), 2u) << job.AllOutput();
  std::set<std::string> digests;
  for (const std::string& l : lines) {
    digests.insert(l.substr(l.find("sha="), 20));
    EXPECT_LT(LastLoss(l), FirstLoss(l)) << l;  // it trained, not just kept the initial weights
  }
  EXPECT_EQ(digests.size(), 1u) << job.AllOutput();
}

// 1 chief, 1 ps, 2 workers: the chief coordinates training through the ps and workers' gRPC
// servers at the host:port TF_CONFIG names, and its exit decides the job (ps and workers serve
// until stopped, as in any PS job).
TEST(TensorFlow, ParameterServerJobWithChiefPsAndTwoWorkersCompletes) {
  if (!VenvHasModule("tensorflow")) GTEST_SKIP() << "no tensorflow in " << VenvPython();
  JobSpec spec = TfJob({{"chief", 0, 1}, {"ps", 0, 1}, {"worker", 0, 1}, {"worker", 1, 1}},
                       "parameter-server");
  spec.decisive_node = 0;
  JobResult job = RunJob(spec);
  ASSERT_FALSE(job.timed_out) << job.AllOutput();
  ASSERT_EQ(job.children[0].node_rank, 0);
  EXPECT_EQ(job.children[0].exit_code, 0) << job.AllOutput();
  std::vector<std::string> done = job.Lines("PS_DONE steps=20 ");
  ASSERT_EQ(done.size(), 1u) << job.AllOutput();
  // The loss went down: training really ran on the workers against the ps variables.
  EXPECT_LT(LastLoss(done[0]), FirstLoss(done[0])) << done[0];
}

}  // namespace
}  // namespace lockstep::launcher::testing
