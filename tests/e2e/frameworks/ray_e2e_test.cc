// Ray's example TrainingJobs (examples/local/ray*.yaml) through Kubernetes (operator, gang
// scheduler, test node agent, launcher): on the head and 2 workers the launchers form, the head
// runs each script as the job's driver and its exit decides the job. Ray Train, then the Ray
// libraries: RLlib (PPO), Tune (an ASHA sweep) and Serve (a deployment on a worker). In the
// libraries' manifests the head's Ray node has no CPU, so every actor that needs one runs on a
// worker pod. One operator and one agent serve the binary (docs/e2e.md "Framework e2e tests").

#include <set>
#include <string>

#include "tests/e2e/frameworks/framework_test_util.h"

namespace lockstep::e2e {
namespace {

using nlohmann::json;

class Frameworks : public SharedClusterTest<Frameworks> {};

// A Ray job that ended: head + 2 workers, on this agent's nodes; the driver's
// line starting with `prefix` (exactly one).
std::string DriverLine(const JobRun& run, const std::vector<std::string>& nodes,
                       const std::string& prefix) {
  if (run.job.is_null()) {
    ADD_FAILURE() << "the job never ended";
    return "";
  }
  ExpectOnAgentNodes(run, nodes);
  EXPECT_EQ(run.pods.size(), 3u);
  // The jobs of this binary run one after another on the same /24, so a pod often gets the
  // address the last job's head had. The operator's launcher watch must end with that job, not
  // go on polling the address with its token (refused, and logged by this job's server).
  for (const JobRun::Pod& pod : run.pods) {
    EXPECT_EQ(pod.log.find("wrong rendezvous token"), std::string::npos) << pod.name;
  }
  const std::vector<std::string> lines = run.Lines(prefix);
  EXPECT_EQ(lines.size(), 1u) << run.AllLogs();
  if (!lines.empty()) std::cout << "[ job ] " << lines[0] << std::endl;
  return lines.empty() ? "" : lines[0];
}

TEST_F(Frameworks, RayHeadAndTwoWorkersRunTheEntrypoint) {
  const JobRun run = RunExample("ray.yaml");
  const std::string line = DriverLine(run, cluster_->nodes(), "RAY_TRAIN ");
  // The entrypoint ran as the driver on the head; Ray Train placed 3 workers on the 3 pods' nodes.
  EXPECT_EQ(Field(line, "workers"), "3") << line;
  EXPECT_EQ(Field(line, "nodes"), "3") << line;
  EXPECT_EQ(Field(line, "error"), "None") << line;
}

// PPO on CartPole: 2 env runners, one on each worker pod's node (none on the head's), and the
// mean episode return rose.
TEST_F(Frameworks, RayRllibPpoEnvRunnersOnWorkerPodsRewardRises) {
  const JobRun run = RunExample("ray-rllib.yaml");
  const std::string line = DriverLine(run, cluster_->nodes(), "RLLIB ");
  EXPECT_EQ(Field(line, "env_runners"), "2") << line;
  EXPECT_EQ(Field(line, "env_runner_nodes"), "2") << line;
  EXPECT_EQ(Field(line, "on_head"), "0") << line;
  const std::string ret = Field(line, "return");
  const size_t arrow = ret.find("->");
  ASSERT_NE(arrow, std::string::npos) << line;
  EXPECT_GT(std::stod(ret.substr(arrow + 2)), std::stod(ret.substr(0, arrow))) << line;
}

// A 4-trial sweep under ASHA: every trial finished without error, trials ran on both worker
// pods, ASHA stopped at least one early, and the best configuration was printed.
TEST_F(Frameworks, RayTuneAshaSweepOfFourTrialsOnBothWorkerPods) {
  const JobRun run = RunExample("ray-tune.yaml");
  const std::string line = DriverLine(run, cluster_->nodes(), "TUNE ");
  EXPECT_EQ(Field(line, "trials"), "4") << line;
  EXPECT_EQ(Field(line, "errors"), "0") << line;
  EXPECT_EQ(Field(line, "nodes"), "2") << line;
  EXPECT_EQ(Field(line, "scheduler"), "AsyncHyperBandScheduler") << line;
  EXPECT_GE(NumberField(line, "stopped_early"), 1) << line;
  EXPECT_FALSE(Field(line, "best_lr").empty()) << line;
  EXPECT_EQ(run.Lines("TUNE_TRIAL ").size(), 4u) << run.AllLogs();
}

// A Serve deployment whose replica runs on a worker pod answers the driver through a handle and
// through the HTTP proxy; Serve shuts down and the job ends.
TEST_F(Frameworks, RayServeDeploymentOnWorkerPodAnswersTheDriver) {
  const JobRun run = RunExample("ray-serve.yaml");
  const std::string line = DriverLine(run, cluster_->nodes(), "SERVE ");
  EXPECT_EQ(line, "SERVE handle=42 http=42 replica_on_worker=True") << run.AllLogs();
}

}  // namespace
}  // namespace lockstep::e2e
