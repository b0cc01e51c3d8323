#include "launcher/world_builder.h"

#include <gtest/gtest.h>

#include "launcher/child_plan.h"
#include "launcher/frameworks/frameworks.h"

namespace lockstep::launcher {
namespace {

LauncherConfig Config() {
  LauncherConfig c;
  c.rdzv_id = "run-1";
  c.max_restarts = 2;
  c.master_port = 29500;
  c.advertise_addr = "me";
  c.command = {"train"};
  return c;
}

protocol::WorldMsg Msg() {
  protocol::WorldMsg m;
  m.attempt = 4;
  m.group_rank = 1;
  m.nnodes = 3;
  m.world_size = 12;
  m.first_rank = 4;
  m.nproc = 4;
  m.master_host = "node0";
  m.nccl_id = std::string(128, '\x01');
  m.role_first_rank = 0;  // node 0 has another role ("chief"): this is the first worker
  m.role_world_size = 8;
  return m;
}

TEST(WorldBuilderTest, CompactWorldFillsSelfAndMaster) {
  World w = BuildWorld(Config(), Msg(), std::nullopt, 1);
  EXPECT_FALSE(w.peers_complete);
  EXPECT_EQ(w.node_rank, 1);
  EXPECT_EQ(w.self().first_rank, 4);
  EXPECT_EQ(w.self().host, "me");
  EXPECT_EQ(w.peers[0].host, "node0");
  EXPECT_EQ(w.master_addr, "node0");
  EXPECT_EQ(w.restart_count, 1);
  EXPECT_EQ(w.nccl_unique_id_hex.size(), 256u);
  EXPECT_EQ(w.role_first_rank, 0);
  EXPECT_EQ(w.role_world_size, 8);
}

// Only the frameworks that use every pod ask for the O(W) table.
TEST(WorldBuilderTest, OnlyTensorFlowAndHorovodNeedThePeerTable) {
  EXPECT_TRUE(NeedsPeerTable("tensorflow"));
  EXPECT_TRUE(NeedsPeerTable("horovod"));
  for (const char* f : {"pytorch", "jax", "ray", "nccl", "generic", ""}) {
    EXPECT_FALSE(NeedsPeerTable(f)) << f;
  }
}

// NeedsPeerTable must agree with the adapters: every framework it leaves compact plans its
// children from the compact world; the others refuse it rather than guess.
TEST(WorldBuilderTest, EveryFrameworkWithoutTheTablePlansFromTheCompactWorld) {
  for (const char* f : {"pytorch", "jax", "ray", "nccl", "generic", "tensorflow", "horovod"}) {
    LauncherConfig c = Config();
    c.framework = f;
    World w = BuildWorld(c, Msg(), std::nullopt, 0);
    w.kv_port = 29501;
    StatusOr<frameworks::ChildPlan> plan = frameworks::PlanChildren(w, {"train"});
    EXPECT_EQ(plan.ok(), !NeedsPeerTable(f)) << f << ": " << plan.status();
  }
}

TEST(WorldBuilderTest, PyTorchRoleRanksComeFromTheCompactWorld) {
  LauncherConfig c = Config();
  c.framework = "pytorch";
  World w = BuildWorld(c, Msg(), std::nullopt, 0);
  StatusOr<frameworks::ChildPlan> plan = frameworks::PlanChildren(w, {"train"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->children.size(), 4u);
  const auto& env = plan->children[3].env;
  EXPECT_EQ(env.at("RANK"), "7");
  EXPECT_EQ(env.at("WORLD_SIZE"), "12");
  EXPECT_EQ(env.at("ROLE_RANK"), "3");  // role ranks count workers only, not node 0's chief
  EXPECT_EQ(env.at("ROLE_WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("GROUP_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "node0");
}

TEST(WorldBuilderTest, PeerTableFillsEveryPeer) {
  protocol::PeerTable t;
  for (uint32_t i = 0; i < 3; ++i) {
    t.peers.push_back({i, i, "worker", i, "h" + std::to_string(i), 100 + i, 4, 4 * i});
  }
  World w = BuildWorld(Config(), Msg(), t, 0);
  EXPECT_TRUE(w.peers_complete);
  EXPECT_EQ(w.peers[2].host, "h2");
  EXPECT_EQ(w.peers[2].port, 102);
}

TEST(ChildPlanTest, EnvPerLocalRankWithoutToken) {
  LauncherConfig c = Config();
  c.heartbeat_file = "/tmp/hb";
  protocol::PeerTable t;
  for (uint32_t i = 0; i < 3; ++i) {
    t.peers.push_back({i, i, "worker", i, "h" + std::to_string(i), 100 + i, 4, 4 * i});
  }
  World w = BuildWorld(c, Msg(), t, 1);
  StatusOr<LocalPlan> plan =
      PlanLocalChildren(c, w, {"PATH=/bin", "LOCKSTEP_TOKEN=secret", "LOCKSTEP_RANK=stale"});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->children.size(), 4u);
  EXPECT_FALSE(plan->tcp_store);
  const supervisor::ChildSpec& last = plan->children[3];
  EXPECT_EQ(last.rank, 7);
  EXPECT_EQ(last.heartbeat_file, "/tmp/hb.3");
  auto has = [&](const std::string& kv) {
    for (const std::string& e : last.spawn.env) {
      if (e == kv) return true;
    }
    return false;
  };
  EXPECT_TRUE(has("PATH=/bin"));
  EXPECT_TRUE(has("LOCKSTEP_RANK=7"));
  EXPECT_TRUE(has("LOCKSTEP_WORLD_SIZE=12"));
  EXPECT_TRUE(has("LOCKSTEP_LOCAL_RANK=3"));
  EXPECT_TRUE(has("LOCKSTEP_RESTART_COUNT=1"));
  EXPECT_TRUE(has("LOCKSTEP_HEARTBEAT_FILE=/tmp/hb.3"));
  EXPECT_FALSE(has("LOCKSTEP_TOKEN=secret"));
  EXPECT_EQ(last.spawn.argv, (std::vector<std::string>{"train"}));
}

}  // namespace
}  // namespace lockstep::launcher
