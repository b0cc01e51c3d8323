// Worlds of 4 and 32 launchers, 1 and 4 processes each, formed on 127.0.0.1; every child's
// environment is checked. Also: refused joins (wrong token, other run, stale attempt).
#include <gtest/gtest.h>

#include <functional>
#include <set>

#include "harness.h"

namespace lockstep::launcher::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

struct Gang {
  TempDir dir;
  int port = FreePort();
  std::string nccl = NcclLibraryForTests();
  std::vector<std::unique_ptr<LauncherProcess>> launchers;

  LauncherSpec Spec(int nnodes, int node_rank, int nproc, std::vector<std::string> child_args) {
    LauncherSpec s;
    s.args = {"--nnodes",       std::to_string(nnodes),
              "--node-rank",    std::to_string(node_rank),
              "--nproc-per-node", std::to_string(nproc),
              "--rdzv-endpoint", "127.0.0.1:" + std::to_string(port),
              "--rdzv-id",      "test-run",
              "--advertise-addr", "127.0.0.1",
              "--join-timeout", "60"};
    s.command = {LOCKSTEP_TEST_CHILD_BIN, dir.path()};
    s.command.insert(s.command.end(), child_args.begin(), child_args.end());
    s.env = {{"LOCKSTEP_TOKEN", "good-token"}, {"LOCKSTEP_NCCL_LIBRARY",
                                                nccl.empty() ? "/nonexistent/libnccl.so.2" : nccl}};
    return s;
  }
  LauncherProcess& Start(const LauncherSpec& spec, const std::string& name) {
    launchers.push_back(std::make_unique<LauncherProcess>(spec, dir.path() + "/" + name + ".log"));
    return *launchers.back();
  }
  std::string Logs() const {
    std::string out;
    for (const auto& l : launchers) out += l->Log();
    return out;
  }
};

void ExpectConsistentWorld(const std::vector<std::map<std::string, std::string>>& envs,
                           int nnodes, int nproc, bool expect_nccl) {
  const int world = nnodes * nproc;
  ASSERT_EQ(envs.size(), static_cast<size_t>(world));
  std::set<int> ranks;
  std::set<std::string> nccl_ids;
  for (const auto& env : envs) {
    const int rank = std::stoi(env.at("LOCKSTEP_RANK"));
    ranks.insert(rank);
    EXPECT_EQ(env.at("LOCKSTEP_WORLD_SIZE"), std::to_string(world));
    EXPECT_EQ(env.at("LOCKSTEP_LOCAL_WORLD_SIZE"), std::to_string(nproc));
    EXPECT_EQ(env.at("LOCKSTEP_NNODES"), std::to_string(nnodes));
    EXPECT_EQ(env.at("LOCKSTEP_LOCAL_RANK"), std::to_string(rank % nproc));
    EXPECT_EQ(env.at("LOCKSTEP_NODE_RANK"), std::to_string(rank / nproc));
    EXPECT_EQ(env.at("LOCKSTEP_MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(env.count("LOCKSTEP_TOKEN"), 0u) << "the token must not reach children";
    if (env.count("LOCKSTEP_NCCL_UNIQUE_ID")) nccl_ids.insert(env.at("LOCKSTEP_NCCL_UNIQUE_ID"));
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(world));
  EXPECT_EQ(*ranks.begin(), 0);
  EXPECT_EQ(*ranks.rbegin(), world - 1);
  if (expect_nccl) {
    ASSERT_EQ(nccl_ids.size(), 1u) << "every rank must get the same NCCL id";
    EXPECT_EQ(nccl_ids.begin()->size(), 256u);
  } else {
    EXPECT_TRUE(nccl_ids.empty());
  }
}

class WorldTest : public ::testing::TestWithParam<std::pair<int, int>> {};

TEST_P(WorldTest, EveryChildGetsAConsistentEnvironment) {
  const auto [nnodes, nproc] = GetParam();
  Gang g;
  // Start the highest node ranks first: joiners must wait for the server to appear.
  for (int i = nnodes - 1; i >= 0; --i) {
    g.Start(g.Spec(nnodes, i, nproc, {"--sleep", "0.2"}), "launcher." + std::to_string(i));
  }
  for (auto& l : g.launchers) {
    std::optional<int> code = l->Wait(seconds(90));
    ASSERT_TRUE(code.has_value()) << "launcher did not finish\n" << g.Logs();
    EXPECT_EQ(*code, 0) << l->Log();
  }
  ExpectConsistentWorld(ReadEnvFiles(g.dir.path(), "0"), nnodes, nproc, !g.nccl.empty());
}

INSTANTIATE_TEST_SUITE_P(Sizes, WorldTest,
                         ::testing::Values(std::make_pair(4, 1), std::make_pair(4, 4),
                                           std::make_pair(32, 1), std::make_pair(32, 4)),
                         [](const auto& param_info) {
                           return std::to_string(param_info.param.first) + "x" +
                                  std::to_string(param_info.param.second);
                         });

// Worlds of many pods whose framework needs no peer table get the compact world (O(1) bytes per
// launcher; the launcher logs peer_table=no) and still every variable right, including
// PyTorch's role ranks in a job with two roles.
TEST(CompactWorldTest, GenericWorldOfManyNodesGetsNoTable) {
  constexpr int kNodes = 48;
  Gang g;
  for (int i = kNodes - 1; i >= 0; --i) {
    g.Start(g.Spec(kNodes, i, 1, {"--sleep", "0.2"}), "launcher." + std::to_string(i));
  }
  for (auto& l : g.launchers) {
    std::optional<int> code = l->Wait(seconds(90));
    ASSERT_TRUE(code.has_value()) << "launcher did not finish\n" << g.Logs();
    EXPECT_EQ(*code, 0) << l->Log();
    EXPECT_NE(l->Log().find("peer_table=no"), std::string::npos) << l->Log();
  }
  ExpectConsistentWorld(ReadEnvFiles(g.dir.path(), "0"), kNodes, 1, !g.nccl.empty());
}

TEST(CompactWorldTest, PyTorchWorldOfManyNodesWithTwoRolesGetsNoTableAndRightRoleRanks) {
  // Node ranks 0..1 are "driver" pods, 2..kNodes-1 workers; 2 processes each.
  constexpr int kNodes = 40, kNproc = 2, kDrivers = 2;
  Gang g;
  const int master_port = FreePort();
  for (int i = kNodes - 1; i >= 0; --i) {
    LauncherSpec s = g.Spec(kNodes, i, kNproc, {"--sleep", "0.2"});
    const bool driver = i < kDrivers;
    s.args.insert(s.args.end(),
                  {"--framework", "pytorch", "--master-port", std::to_string(master_port),
                   "--role", driver ? "driver" : "worker",
                   "--role-index", std::to_string(driver ? i : i - kDrivers)});
    g.Start(s, "launcher." + std::to_string(i));
  }
  for (auto& l : g.launchers) {
    std::optional<int> code = l->Wait(seconds(90));
    ASSERT_TRUE(code.has_value()) << "launcher did not finish\n" << g.Logs();
    EXPECT_EQ(*code, 0) << l->Log();
    EXPECT_NE(l->Log().find("peer_table=no"), std::string::npos) << l->Log();
  }
  const auto envs = ReadEnvFiles(g.dir.path(), "0");
  ExpectConsistentWorld(envs, kNodes, kNproc, !g.nccl.empty());
  for (const auto& env : envs) {
    const int rank = std::stoi(env.at("RANK"));
    const int node = rank / kNproc;
    const bool driver = node < kDrivers;
    EXPECT_EQ(env.at("LOCKSTEP_RANK"), env.at("RANK"));
    EXPECT_EQ(env.at("WORLD_SIZE"), std::to_string(kNodes * kNproc));
    EXPECT_EQ(env.at("LOCAL_RANK"), std::to_string(rank % kNproc));
    EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), std::to_string(kNproc));
    EXPECT_EQ(env.at("GROUP_RANK"), std::to_string(node));
    EXPECT_EQ(env.at("GROUP_WORLD_SIZE"), std::to_string(kNodes));
    EXPECT_EQ(env.at("ROLE_NAME"), driver ? "driver" : "worker");
    EXPECT_EQ(env.at("ROLE_RANK"), std::to_string(driver ? rank : rank - kDrivers * kNproc));
    EXPECT_EQ(env.at("ROLE_WORLD_SIZE"),
              std::to_string((driver ? kDrivers : kNodes - kDrivers) * kNproc));
    EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
    EXPECT_EQ(env.at("MASTER_PORT"), std::to_string(master_port));
    EXPECT_EQ(env.at("TORCHELASTIC_RUN_ID"), "test-run");
  }
}

TEST(RefusalTest, IntrudersExitAtOnceWithTheReasonAndTheRoundStillCompletes) {
  Gang g;
  LauncherSpec server = g.Spec(2, 0, 1, {"--sleep", "0.2"});
  server.args.insert(server.args.end(), {"--attempt", "1"});
  g.Start(server, "node0");

  struct Intruder {
    std::string name;
    std::function<void(LauncherSpec&)> tweak;
    std::string reason;
  };
  const std::vector<Intruder> intruders = {
      {"wrong-token", [](LauncherSpec& s) { s.env["LOCKSTEP_TOKEN"] = "bad-token"; },
       "wrong rendezvous token"},
      {"other-run", [](LauncherSpec& s) { s.args.insert(s.args.end(), {"--rdzv-id", "other"}); },
       "does not match"},
      {"stale", [](LauncherSpec& s) { s.args.insert(s.args.end(), {"--attempt", "0"}); },
       "stale"},
  };
  for (const Intruder& in : intruders) {
    LauncherSpec spec = g.Spec(2, 1, 1, {"--sleep", "0.2"});
    spec.args.insert(spec.args.end(), {"--attempt", "1"});
    in.tweak(spec);
    LauncherProcess& p = g.Start(spec, in.name);
    const auto start = std::chrono::steady_clock::now();
    std::optional<int> code = p.Wait(seconds(10));
    ASSERT_TRUE(code.has_value()) << in.name << " was not refused\n" << g.Logs();
    EXPECT_EQ(*code, 77) << p.Log();
    EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(5)) << in.name;
    EXPECT_NE(p.Log().find(in.reason), std::string::npos) << p.Log();
    EXPECT_NE(ReadWholeFile(g.dir.path() + "/" + in.name + ".log.termination").find("refused"),
              std::string::npos);
  }
  EXPECT_TRUE(ReadEnvFiles(g.dir.path(), "1").empty()) << "no child may start for an intruder";

  LauncherSpec rightful = g.Spec(2, 1, 1, {"--sleep", "0.2"});
  rightful.args.insert(rightful.args.end(), {"--attempt", "1"});
  g.Start(rightful, "node1");
  std::optional<int> c0 = g.launchers[0]->Wait(seconds(30));
  std::optional<int> c1 = g.launchers.back()->Wait(seconds(30));
  ASSERT_TRUE(c0 && c1) << g.Logs();
  EXPECT_EQ(*c0, 0) << g.Logs();
  EXPECT_EQ(*c1, 0) << g.Logs();
  EXPECT_EQ(ReadEnvFiles(g.dir.path(), "1").size(), 2u);
}

}  // namespace
}  // namespace lockstep::launcher::testing
