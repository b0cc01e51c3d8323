#include "launcher/frameworks/frameworks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "launcher/frameworks/horovod.h"
#include "tests/launcher/unit/frameworks/test_worlds.h"

namespace lockstep::launcher::frameworks {
namespace {

using ::lockstep::launcher::testing::RoleWorld;
using ::lockstep::launcher::testing::UniformWorld;
using ::testing::ElementsAre;
using ::testing::Pair;

const std::vector<std::string> kCmd = {"python", "train.py", "--epochs=1"};

ChildPlan MustPlan(const World& w) {
  StatusOr<ChildPlan> plan = PlanChildren(w, kCmd);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : ChildPlan{};
}

TEST(PlanChildren, RejectsUnknownFrameworkEmptyCommandAndBrokenWorlds) {
  World w = UniformWorld("mxnet", 2, 2, 0);
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
  w.framework = "pytorch";
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, {}).status()));
  w.world_size = 5;
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
  w = UniformWorld("pytorch", 2, 2, 2);
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
}

// 2 pods x 2 processes, seen from pod 1, in its second in-place restart.
TEST(PyTorch, SetsTheFullTorchrunEnvironment) {
  World w = UniformWorld("pytorch", 2, 2, 1);
  w.restart_count = 2;
  w.max_restarts = 3;
  ChildPlan plan = MustPlan(w);
  ASSERT_EQ(plan.children.size(), 2u);
  EXPECT_FALSE(plan.services.tcp_store);  // only node 0 hosts the store
  const ChildProcess& c = plan.children[1];
  EXPECT_EQ(c.argv, kCmd);  // no --local-rank appended, like torchrun --use-env
  EXPECT_THAT(
      c.env,
      ::testing::UnorderedElementsAre(
          Pair("RANK", "3"), Pair("LOCAL_RANK", "1"), Pair("WORLD_SIZE", "4"),
          Pair("LOCAL_WORLD_SIZE", "2"), Pair("GROUP_RANK", "1"), Pair("GROUP_WORLD_SIZE", "2"),
          Pair("ROLE_RANK", "3"), Pair("ROLE_WORLD_SIZE", "4"), Pair("ROLE_NAME", "worker"),
          Pair("MASTER_ADDR", "job-worker-0.job"), Pair("MASTER_PORT", "29500"),
          Pair("TORCHELASTIC_RUN_ID", "job-uid"), Pair("TORCHELASTIC_RESTART_COUNT", "2"),
          Pair("TORCHELASTIC_MAX_RESTARTS", "3"), Pair("TORCHELASTIC_USE_AGENT_STORE", "True")));
  EXPECT_THAT(c.env_defaults, ElementsAre(Pair("OMP_NUM_THREADS", "1"),
                                          Pair("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")));
  EXPECT_EQ(plan.children[0].env.at("RANK"), "2");
}

TEST(PyTorch, NodeZeroHostsTheStoreUnlessOptedOut) {
  World w = UniformWorld("pytorch", 2, 1, 0);
  ChildPlan plan = MustPlan(w);
  EXPECT_TRUE(plan.services.tcp_store);
  EXPECT_FALSE(plan.services.gloo_kv);
  EXPECT_EQ(plan.children[0].env_defaults.count("OMP_NUM_THREADS"), 0u);  // one proc per pod
  w.extra["pytorch.agent_store"] = "false";
  plan = MustPlan(w);
  EXPECT_FALSE(plan.services.tcp_store);
  EXPECT_EQ(plan.children[0].env.at("TORCHELASTIC_USE_AGENT_STORE"), "False");
}

TEST(PyTorch, RoleRanksCountOnlyPodsOfTheSameRole) {
  World w = UniformWorld("pytorch", 3, 2, 2);
  w.peers[0].role = "trainer";
  w.peers[1].role = "evaluator";
  w.peers[2].role = "trainer";
  ChildPlan plan = MustPlan(w);
  EXPECT_EQ(plan.children[1].env.at("ROLE_RANK"), "3");
  EXPECT_EQ(plan.children[1].env.at("ROLE_WORLD_SIZE"), "4");
  EXPECT_EQ(plan.children[1].env.at("ROLE_NAME"), "trainer");
  EXPECT_EQ(plan.children[1].env.at("RANK"), "5");
}

// The launcher core sends no peer table for pytorch: only this pod's entry is filled in.
TEST(PyTorch, WorksFromThisPodsEntryAlone) {
  World w = UniformWorld("pytorch", 2, 2, 1);
  w.peers_complete = false;
  w.peers[0] = PeerInfo{};
  w.peers[0].host = "job-worker-0.job";
  ChildPlan plan = MustPlan(w);
  EXPECT_EQ(plan.children[1].env.at("RANK"), "3");
  EXPECT_EQ(plan.children[1].env.at("ROLE_RANK"), "3");
  EXPECT_EQ(plan.children[1].env.at("ROLE_WORLD_SIZE"), "4");
  w.peers[1].first_rank = 3;  // 3 + 2 > world size 4
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
}

TEST(PeerTable, TensorFlowAndHorovodNeedIt) {
  for (const char* f : {"tensorflow", "horovod"}) {
    World w = UniformWorld(f, 2, 1, 0);
    w.peers_complete = false;
    EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status())) << f;
  }
  // JAX and Ray need only this pod and node 0 (the coordinator, the head).
  for (const char* f : {"jax", "ray"}) {
    World w = UniformWorld(f, 2, 1, 1);
    w.peers_complete = false;
    EXPECT_TRUE(PlanChildren(w, kCmd).ok()) << f;
  }
}

TEST(PyTorch, NeedsAMaster) {
  World w = UniformWorld("pytorch", 1, 1, 0);
  w.master_port = 0;
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
}

TEST(TensorFlow, TfConfigPerTaskWithChiefPsWorkersAndEvaluator) {
  const std::vector<std::pair<std::string, int>> roles = {
      {"chief", 0}, {"ps", 0}, {"worker", 0}, {"worker", 1}, {"evaluator", 0}};
  const nlohmann::json want_cluster = {{"chief", {"chief-0.job:2222"}},
                                       {"ps", {"ps-0.job:2222"}},
                                       {"worker", {"worker-0.job:2222", "worker-1.job:2222"}}};
  for (int node = 0; node < 5; ++node) {
    ChildPlan plan = MustPlan(RoleWorld("tensorflow", roles, node));
    ASSERT_EQ(plan.children.size(), 1u);
    const auto& env = plan.children[0].env;
    nlohmann::json tf = nlohmann::json::parse(env.at("TF_CONFIG"));
    EXPECT_EQ(tf["cluster"], want_cluster) << node;
    EXPECT_EQ(tf["task"]["type"], roles[static_cast<size_t>(node)].first);
    EXPECT_EQ(tf["task"]["index"], roles[static_cast<size_t>(node)].second);
    EXPECT_EQ(env.count("DTENSOR_JOBS"), node == 2 || node == 3 ? 1u : 0u);
  }
}

TEST(TensorFlow, DTensorVariablesOnWorkers) {
  World w = UniformWorld("tensorflow", 3, 1, 2);
  const ChildPlan plan = MustPlan(w);
  const auto& env = plan.children[0].env;
  EXPECT_EQ(env.at("DTENSOR_JOBS"),
            "job-worker-0.job:2222,job-worker-1.job:2222,"
            "job-worker-2.job:2222");
  EXPECT_EQ(env.at("DTENSOR_CLIENT_ID"), "2");
  EXPECT_EQ(env.at("DTENSOR_NUM_CLIENTS"), "3");
  EXPECT_EQ(env.at("DTENSOR_JOB_NAME"), "worker");
}

TEST(TensorFlow, RejectsUnknownRolesMissingPortsDuplicatesAndSeveralProcs) {
  EXPECT_FALSE(PlanChildren(RoleWorld("tensorflow", {{"head", 0}}, 0), kCmd).ok());
  World w = UniformWorld("tensorflow", 2, 1, 0);
  w.peers[1].port = 0;
  EXPECT_FALSE(PlanChildren(w, kCmd).ok());
  EXPECT_FALSE(PlanChildren(RoleWorld("tensorflow", {{"worker", 0}, {"worker", 0}}, 0), kCmd).ok());
  EXPECT_FALSE(PlanChildren(RoleWorld("tensorflow", {{"worker", 1}}, 0), kCmd).ok());
  EXPECT_FALSE(PlanChildren(UniformWorld("tensorflow", 2, 2, 0), kCmd).ok());
}

TEST(Jax, CoordinatorAndProcessIds) {
  World w = UniformWorld("jax", 2, 2, 1);
  ChildPlan plan = MustPlan(w);
  ASSERT_EQ(plan.children.size(), 2u);
  EXPECT_THAT(plan.children[1].env,
              ElementsAre(Pair("JAX_COORDINATOR_ADDRESS", "job-worker-0.job:29500"),
                          Pair("LOCKSTEP_NUM_PROCESSES", "4"), Pair("LOCKSTEP_PROCESS_ID", "3")));
  EXPECT_FALSE(plan.services.tcp_store);
  w.master_addr = "fd00::1";
  EXPECT_EQ(MustPlan(w).children[0].env.at("JAX_COORDINATOR_ADDRESS"), "[fd00::1]:29500");
}

TEST(Horovod, PerSlotVariablesAndRendezvous) {
  World w = UniformWorld("horovod", 2, 2, 1);
  w.extra["horovod.iface"] = "eth0";
  ChildPlan plan = MustPlan(w);
  EXPECT_FALSE(plan.services.gloo_kv);
  EXPECT_THAT(plan.children[1].env,
              ::testing::UnorderedElementsAre(
                  Pair("HOROVOD_HOSTNAME", "job-worker-1.job"), Pair("HOROVOD_RANK", "3"),
                  Pair("HOROVOD_SIZE", "4"), Pair("HOROVOD_LOCAL_RANK", "1"),
                  Pair("HOROVOD_LOCAL_SIZE", "2"), Pair("HOROVOD_CROSS_RANK", "1"),
                  Pair("HOROVOD_CROSS_SIZE", "2"), Pair("HOROVOD_CONTROLLER", "gloo"),
                  Pair("HOROVOD_CPU_OPERATIONS", "gloo"),
                  Pair("HOROVOD_GLOO_RENDEZVOUS_ADDR", "job-worker-0.job"),
                  Pair("HOROVOD_GLOO_RENDEZVOUS_PORT", "29501"), Pair("HOROVOD_GLOO_IFACE", "eth0"),
                  Pair("PYTHONUNBUFFERED", "1")));
}

// Uneven pods: cross scopes only hold pods that have that local rank.
TEST(Horovod, NodeZeroHostsKvWithScopeSizes) {
  World w = UniformWorld("horovod", 3, 2, 0);
  w.peers[2].nproc = 1;
  w.world_size = 5;
  ChildPlan plan = MustPlan(w);
  EXPECT_TRUE(plan.services.gloo_kv);
  EXPECT_THAT(plan.services.gloo_scope_sizes,
              ElementsAre(Pair("cross_0", 3), Pair("cross_1", 2), Pair("global", 5),
                          Pair("local_job-worker-0.job", 2), Pair("local_job-worker-1.job", 2),
                          Pair("local_job-worker-2.job", 1)));
  EXPECT_EQ(plan.children[1].env.at("HOROVOD_CROSS_SIZE"), "2");
  EXPECT_EQ(plan.children[0].env.count("HOROVOD_GLOO_IFACE"), 0u);
}

TEST(Horovod, PodsSharingAnAddressGetDistinctHostNames) {
  World w = UniformWorld("horovod", 2, 1, 0);
  w.peers[0].host = w.peers[1].host = "127.0.0.1";
  EXPECT_EQ(HorovodHostName(w, 0), "127.0.0.1-0");
  EXPECT_EQ(HorovodHostName(w, 1), "127.0.0.1-1");
  EXPECT_EQ(HorovodScopeSizes(w).count("local_127.0.0.1-1"), 1u);
}

// The head's one child: the wrapper script, then what it needs to run `ray start --head` and,
// once every node joined, the entrypoint.
TEST(Ray, HeadRunsOneWrapperWithRayStartAndTheEntrypoint) {
  World w = UniformWorld("ray", 3, 1, 0);
  ChildPlan plan = MustPlan(w);
  EXPECT_FALSE(plan.services.tcp_store);
  ASSERT_EQ(plan.children.size(), 1u);
  const std::vector<std::string>& argv = plan.children[0].argv;
  ASSERT_GE(argv.size(), 3u);
  EXPECT_EQ(argv[0], "python3");
  EXPECT_EQ(argv[1], "-c");
  EXPECT_NE(argv[2].find("internal_kv_put"), std::string::npos);  // writes the end key
  std::vector<std::string> expected = {"head",
                                       "3",
                                       "job-worker-0.job",
                                       "job-worker-0.job",
                                       "29500",
                                       "ray",
                                       "start",
                                       "--block",
                                       "--disable-usage-stats",
                                       "--head",
                                       "--port=29500",
                                       "--include-dashboard=false",
                                       "--node-manager-port=2222",
                                       "--"};
  expected.insert(expected.end(), kCmd.begin(), kCmd.end());
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 3, argv.end()), expected);
  EXPECT_EQ(plan.children[0].global_rank, 0);
}

// Workers join the head named by master_addr; they run no entrypoint.
TEST(Ray, WorkersJoinTheHeadAndRunNoEntrypoint) {
  World w = UniformWorld("ray", 3, 1, 2);
  w.peers[2].port = 0;  // no reserved port: Ray picks the node manager's
  ChildPlan plan = MustPlan(w);
  ASSERT_EQ(plan.children.size(), 1u);
  const std::vector<std::string>& argv = plan.children[0].argv;
  ASSERT_GE(argv.size(), 3u);
  EXPECT_THAT(std::vector<std::string>(argv.begin() + 3, argv.end()),
              ElementsAre("worker", "3", "job-worker-2.job", "job-worker-0.job", "29500", "ray",
                          "start", "--block", "--disable-usage-stats", "--"));
  EXPECT_EQ(plan.children[0].global_rank, 2);
}

TEST(Ray, NeedsTheHeadsAddress) {
  World w = UniformWorld("ray", 2, 1, 1);
  w.master_addr.clear();
  EXPECT_TRUE(IsInvalidArgument(PlanChildren(w, kCmd).status()));
}

TEST(Generic, RankVariablesAndNcclUniqueId) {
  World w = UniformWorld("nccl", 2, 2, 1);
  w.nccl_unique_id_hex = std::string(256, 'a');
  ChildPlan plan = MustPlan(w);
  EXPECT_THAT(plan.children[0].env,
              ::testing::UnorderedElementsAre(
                  Pair("LOCKSTEP_RANK", "2"), Pair("LOCKSTEP_WORLD_SIZE", "4"),
                  Pair("LOCKSTEP_LOCAL_RANK", "0"), Pair("LOCKSTEP_LOCAL_WORLD_SIZE", "2"),
                  Pair("LOCKSTEP_NODE_RANK", "1"), Pair("LOCKSTEP_NNODES", "2"),
                  Pair("LOCKSTEP_NCCL_UNIQUE_ID", std::string(256, 'a'))));
  w.nccl_unique_id_hex.clear();
  EXPECT_EQ(PlanChildren(w, kCmd).status().code(), StatusCode::kFailedPrecondition);
  w.framework = "generic";
  EXPECT_EQ(MustPlan(w).children[1].env.count("LOCKSTEP_NCCL_UNIQUE_ID"), 0u);
}

}  // namespace
}  // namespace lockstep::launcher::frameworks
