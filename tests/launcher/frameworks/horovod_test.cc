// Horovod through the adapter at the protocol level: per-slot HOROVOD_* variables and node 0's
// Gloo HTTP KV server, exercised by a client that performs Horovod's Gloo rendezvous request for
// request (horovod_protocol_client.py) and builds all three meshes. Real Horovod needs a torch of
// its own (hack/setup-venv-horovod.sh) and runs end to end in framework_horovod_e2e_test.

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "tests/launcher/frameworks/pod_driver.h"

namespace lockstep::launcher::testing {
namespace {

// 2 pods x 2 processes: global scope of 4, two local scopes of 2, two cross scopes of 2.
TEST(Horovod, TwoPodsTimesTwoProcsRendezvousThroughTheLaunchersKvServer) {
  JobSpec spec;
  spec.framework = "horovod";
  spec.pods = {{"worker", 0, 2}, {"worker", 1, 2}};
  spec.extra = {{"horovod.iface", "lo"}};
  spec.command = {VenvPython(),
                  RepoRoot() + "/tests/launcher/frameworks/horovod_protocol_client.py"};
  JobResult job = RunJob(spec);
  ASSERT_FALSE(job.timed_out) << job.AllOutput();
  for (const ChildResult& c : job.children) EXPECT_EQ(c.exit_code, 0) << job.AllOutput();
  EXPECT_EQ(job.Lines("HVD_PROTO_OK").size(), 4u) << job.AllOutput();
  // global: 1+2+3+4. local (ranks 0,1 | 2,3): 3 | 7. cross (ranks 0,2 | 1,3): 4 | 6.
  std::multiset<std::string> sums;
  for (const std::string& l : job.Lines("HVD_SCOPE ")) {
    sums.insert(l.substr(10, l.find(' ', 10) - 10) + "=" + l.substr(l.find("sum=") + 4));
  }
  EXPECT_EQ(sums, (std::multiset<std::string>{"global=10", "global=10", "global=10", "global=10",
                                              "local=3", "local=3", "local=7", "local=7", "cross=4",
                                              "cross=4", "cross=6", "cross=6"}))
      << job.AllOutput();
}

}  // namespace
}  // namespace lockstep::launcher::testing
