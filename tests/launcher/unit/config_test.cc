#include "launcher/config/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "protocol/contract.h"

namespace lockstep::launcher {
namespace {

namespace contract = protocol::contract;

// `vars`, plus a token unless they name one (a launcher without a token refuses to start unless
// told --insecure-no-auth; NoTokenIsRefusedUnlessInsecureNoAuth tests that with BareEnv).
EnvLookup BareEnv(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

EnvLookup Env(std::map<std::string, std::string> vars) {
  vars.emplace(contract::kEnvToken, "test-token");
  return BareEnv(std::move(vars));
}

TEST(ConfigTest, DefaultsFromTheContract) {
  StatusOr<LauncherConfig> c = ParseConfig({"--", "python", "train.py"}, Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->framework, "generic");
  EXPECT_EQ(c->min_nodes, 1u);
  EXPECT_EQ(c->rdzv_endpoint.port, 29400);
  EXPECT_EQ(c->peer_timeout, protocol::contract::kDefaultPeerTimeout);
  EXPECT_EQ(c->heartbeat_interval, protocol::contract::kDefaultHeartbeatInterval);
  EXPECT_EQ(c->termination_log, "/dev/termination-log");
  EXPECT_EQ(c->command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_TRUE(c->has_token);
  EXPECT_FALSE(c->insecure_no_auth);
}

// Without a token any peer could compute a join's MAC: the launcher refuses to start unless told
// --insecure-no-auth (or LOCKSTEP_INSECURE_NO_AUTH=1) for local use.
TEST(ConfigTest, NoTokenIsRefusedUnlessInsecureNoAuth) {
  StatusOr<LauncherConfig> refused = ParseConfig({"--", "x"}, BareEnv({}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--insecure-no-auth"), std::string::npos)
      << refused.status();
  // An empty token variable is no token.
  EXPECT_FALSE(ParseConfig({"--", "x"}, BareEnv({{"LOCKSTEP_TOKEN", ""}})).ok());
  for (const auto& [args, env] :
       std::vector<std::pair<std::vector<std::string>, std::map<std::string, std::string>>>{
           {{"--insecure-no-auth", "--", "x"}, {}},
           {{"--", "x"}, {{"LOCKSTEP_INSECURE_NO_AUTH", "1"}}},
           {{"--", "x"}, {{"LOCKSTEP_INSECURE_NO_AUTH", "true"}}}}) {
    StatusOr<LauncherConfig> c = ParseConfig(args, BareEnv(env));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->insecure_no_auth);
    EXPECT_FALSE(c->has_token);
  }
  StatusOr<LauncherConfig> off =
      ParseConfig({"--", "x"}, BareEnv({{"LOCKSTEP_INSECURE_NO_AUTH", "0"}}));
  EXPECT_FALSE(off.ok());
  StatusOr<LauncherConfig> bad =
      ParseConfig({"--", "x"}, BareEnv({{"LOCKSTEP_INSECURE_NO_AUTH", "maybe"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("LOCKSTEP_INSECURE_NO_AUTH"), std::string::npos);
}

TEST(ConfigTest, FlagBeatsEnvBeatsDefault) {
  StatusOr<LauncherConfig> c =
      ParseConfig({"--nnodes=2:8", "--node-rank", "3", "--", "x"},
                  Env({{"LOCKSTEP_NNODES", "4"}, {"LOCKSTEP_NPROC_PER_NODE", "8"},
                       {"LOCKSTEP_HANG_TIMEOUT", "1.5"}, {"LOCKSTEP_TOKEN", "s3cret"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->min_nodes, 2u);
  EXPECT_EQ(c->max_nodes, 8u);
  EXPECT_EQ(c->node_rank, 3u);
  EXPECT_EQ(c->nproc_per_node, 8u);
  EXPECT_EQ(c->hang_timeout.count(), 1500);
  EXPECT_TRUE(c->has_token);
  EXPECT_EQ(c->token, "s3cret");
}

TEST(ConfigTest, TorchrunStyleCommandWithoutSeparator) {
  StatusOr<LauncherConfig> c = ParseConfig({"--nproc-per-node", "2", "train.py", "--lr", "1"},
                                           Env({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->command, (std::vector<std::string>{"train.py", "--lr", "1"}));
}

TEST(ConfigTest, ErrorsNameTheFlagOrVariable) {
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string want;
  };
  const std::vector<Case> cases = {
      {{"--bogus", "1", "--", "x"}, {}, "unknown flag --bogus"},
      {{"--nnodes", "0", "--", "x"}, {}, "--nnodes"},
      {{"--nnodes", "4:2", "--", "x"}, {}, "MIN must be <= MAX"},
      {{"--", "x"}, {{"LOCKSTEP_NODE_RANK", "1"}}, "LOCKSTEP_NODE_RANK"},
      {{"--framework", "mxnet", "--", "x"}, {}, "--framework"},
      {{"--rdzv-endpoint", "nohost", "--", "x"}, {}, "--rdzv-endpoint"},
      {{"--", "x"}, {{"LOCKSTEP_PEER_TIMEOUT", "soon"}}, "LOCKSTEP_PEER_TIMEOUT"},
      {{"--token-file", "/nonexistent/token", "--", "x"}, {}, "--token-file"},
      {{"--nproc-per-node"}, {}, "missing value"},
      {{"--nnodes", "2"}, {}, "no command"},
  };
  for (const Case& c : cases) {
    StatusOr<LauncherConfig> got = ParseConfig(c.args, Env(c.env));
    ASSERT_FALSE(got.ok()) << c.want;
    EXPECT_NE(got.status().message().find(c.want), std::string::npos) << got.status();
    EXPECT_EQ(got.status().message().find('\n'), std::string::npos) << "one line";
  }
}

TEST(ConfigTest, FailExitCodesTakeSinglesAndRanges) {
  StatusOr<LauncherConfig> c =
      ParseConfig({"--", "x"}, Env({{"LOCKSTEP_FAIL_EXIT_CODES", "2,10-12,255"}}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->fail_exit_codes, (std::set<int>{2, 10, 11, 12, 255}));
  StatusOr<LauncherConfig> none = ParseConfig({"--", "x"}, Env({}));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->fail_exit_codes.empty());
  for (const char* bad : {"0", "256", "3-2", "a", "1,,2", "-4"}) {
    StatusOr<LauncherConfig> got = ParseConfig({"--fail-exit-codes", bad, "--", "x"}, Env({}));
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_NE(got.status().message().find("--fail-exit-codes"), std::string::npos)
        << got.status();
  }
}

TEST(ConfigTest, TokenFileIsReadAndTrimmed) {
  const std::string path = testing::TempDir() + "/token";
  {
    std::ofstream(path) << "abc123\n";
  }
  StatusOr<LauncherConfig> c = ParseConfig({"--token-file", path, "--", "x"}, BareEnv({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->token, "abc123");
  std::remove(path.c_str());
}

TEST(ConfigTest, HelpListsEveryFlagAndEnvName) {
  const std::string help = HelpText();
  for (const contract::FlagSpec& f : contract::kFlags) {
    EXPECT_NE(help.find(std::string(f.env)), std::string::npos) << f.env;
    if (!f.flag.empty()) {
      EXPECT_NE(help.find(std::string(f.flag)), std::string::npos) << f.flag;
    }
  }
}

TEST(ConfigTest, ContractEnvNamesAreUniqueAndPrefixed) {
  for (size_t i = 0; i < contract::kFlags.size(); ++i) {
    EXPECT_EQ(contract::kFlags[i].env.rfind("LOCKSTEP_", 0), 0u);
    for (size_t j = i + 1; j < contract::kFlags.size(); ++j) {
      EXPECT_NE(contract::kFlags[i].env, contract::kFlags[j].env);
    }
  }
}

}  // namespace
}  // namespace lockstep::launcher
