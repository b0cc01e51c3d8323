// JAX through the adapter: JAX_COORDINATOR_ADDRESS plus LOCKSTEP_PROCESS_ID/NUM_PROCESSES,
// 2 pods x 1 process on loopback, CPU.

#include <gtest/gtest.h>

#include <set>

#include "tests/launcher/frameworks/pod_driver.h"

namespace lockstep::launcher::testing {
namespace {

TEST(Jax, TwoProcessesInitializeSeeEachOtherAndSumAcrossProcesses) {
  if (!VenvHasModule("jax")) GTEST_SKIP() << "no jax in " << VenvPython();
  JobSpec spec;
  spec.framework = "jax";
  spec.pods = {{"worker", 0, 1}, {"worker", 1, 1}};
  spec.command = {VenvPython(), RepoRoot() + "/examples/frameworks/jax/train.py"};
  spec.env = {{"JAX_PLATFORMS", "cpu"}};
  JobResult job = RunJob(spec);
  ASSERT_FALSE(job.timed_out) << job.AllOutput();
  for (const ChildResult& c : job.children) EXPECT_EQ(c.exit_code, 0) << job.AllOutput();
  std::vector<std::string> lines = job.Lines("JAX ");
  ASSERT_EQ(lines.size(), 2u) << job.AllOutput();
  std::set<std::string> processes;
  std::set<std::string> digests;
  for (const std::string& l : lines) {
    EXPECT_NE(l.find(" count=2 "), std::string::npos) << l;
    EXPECT_NE(l.find(" sum=3 "), std::string::npos) << l;  // 1 + 2
    processes.insert(l.substr(0, l.find(' ', 4)));
    digests.insert(l.substr(l.find("sha=")));
  }
  EXPECT_EQ(processes.size(), 2u);
  EXPECT_EQ(digests.size(), 1u) << "weights differ across processes";
}

}  // namespace
}  // namespace lockstep::launcher::testing
