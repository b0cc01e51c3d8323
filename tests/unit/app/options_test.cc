#include "operator/app/options.h"

#include <gtest/gtest.h>

#include "operator/app/http_server.h"

namespace lockstep::app {
namespace {

TEST(OptionsTest, Defaults) {
  auto o = ParseFlags({});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->namespaces.empty());
  EXPECT_FALSE(o->leader_elect);
  EXPECT_EQ(o->metrics_bind_address, ":8080");
  EXPECT_EQ(o->health_probe_bind_address, ":8081");
  EXPECT_EQ(o->workers, 16);
  EXPECT_EQ(o->node_lease_grace, std::chrono::seconds(20));
  EXPECT_FALSE(o->restart_on_node_cordon);
  EXPECT_DOUBLE_EQ(o->node_silence_hold_fraction, 0.55);
  EXPECT_TRUE(o->create_placed);
}

TEST(OptionsTest, NodeSilenceHoldFraction) {
  for (const auto& [arg, want] : std::vector<std::pair<std::string, double>>{
           {"--node-silence-hold-fraction=0", 0}, {"--node-silence-hold-fraction=0.9", 0.9},
           {"--node-silence-hold-fraction=1", 1}}) {
    auto o = ParseFlags({arg});
    ASSERT_TRUE(o.ok()) << arg << ": " << o.status();
    EXPECT_DOUBLE_EQ(o->node_silence_hold_fraction, want) << arg;
  }
}

TEST(OptionsTest, CreatePlacedFlag) {
  for (const auto& [args, want] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{"--create-placed=false"}, false},
           {{"--create-placed=true"}, true},
           {{"--create-placed"}, true},
       }) {
    auto o = ParseFlags(args);
    ASSERT_TRUE(o.ok()) << args[0] << ": " << o.status();
    EXPECT_EQ(o->create_placed, want) << args[0];
  }
}

TEST(OptionsTest, NodeHealthFlags) {
  struct Row {
    std::vector<std::string> args;
    std::chrono::seconds grace;
    bool restart_on_cordon;
  };
  for (const Row& row : std::vector<Row>{
           {{"--node-lease-grace=3s"}, std::chrono::seconds(3), false},
           {{"--node-lease-grace", "2m"}, std::chrono::seconds(120), false},
           {{"--node-lease-grace=1h"}, std::chrono::seconds(3600), false},
           {{"--on-node-cordon=restart"}, std::chrono::seconds(20), true},
           {{"--on-node-cordon", "ignore"}, std::chrono::seconds(20), false},
       }) {
    auto o = ParseFlags(row.args);
    ASSERT_TRUE(o.ok()) << row.args[0] << ": " << o.status();
    EXPECT_EQ(o->node_lease_grace, row.grace) << row.args[0];
    EXPECT_EQ(o->restart_on_node_cordon, row.restart_on_cordon) << row.args[0];
  }
}

TEST(OptionsTest, BadNodeHealthFlagsNameTheFlag) {
  for (const std::string arg :
       {"--node-lease-grace=20", "--node-lease-grace=0s", "--node-lease-grace=-5s",
        "--node-lease-grace=1.5s", "--node-lease-grace=20ms", "--node-lease-grace=s",
        "--node-lease-grace=", "--on-node-cordon=drain", "--on-node-cordon=",
        "--node-silence-hold-fraction=1.5", "--node-silence-hold-fraction=-0.1",
        "--node-silence-hold-fraction=nan", "--node-silence-hold-fraction=half",
        "--node-silence-hold-fraction="}) {
    auto o = ParseFlags({arg});
    ASSERT_FALSE(o.ok()) << arg;
    const std::string flag = arg.substr(0, arg.find('='));
    EXPECT_EQ(o.status().message().rfind(flag + ":", 0), 0u) << o.status();
    EXPECT_EQ(o.status().message().find('\n'), std::string::npos);
  }
}

TEST(OptionsTest, EveryFlagBothSpellings) {
  auto o = ParseFlags({"--kubeconfig", "/k", "--namespace=a", "--namespace", "b", "--leader-elect",
                       "--leader-election-namespace=sys", "--metrics-bind-address=0",
                       "--health-probe-bind-address", "127.0.0.1:9000", "--qps=20.5",
                       "--burst=40", "--workers", "8", "--log-format=json",
                       "--launcher-image=reg/l:1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->kubeconfig, "/k");
  EXPECT_EQ(o->namespaces, (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(o->leader_elect);
  EXPECT_EQ(o->leader_election_namespace, "sys");
  EXPECT_EQ(o->metrics_bind_address, "0");
  EXPECT_EQ(o->health_probe_bind_address, "127.0.0.1:9000");
  EXPECT_DOUBLE_EQ(o->qps, 20.5);
  EXPECT_EQ(o->burst, 40);
  EXPECT_EQ(o->workers, 8);
  EXPECT_EQ(o->log_format, log::Format::kJson);
  EXPECT_EQ(o->launcher_image, "reg/l:1");
}

TEST(OptionsTest, BadFlagsAreOneLineErrors) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"--bogus"},
                                             {"--workers=0"},
                                             {"--workers=x"},
                                             {"--log-format=xml"},
                                             {"--metrics-bind-address=8080"},
                                             {"--qps"},
                                             {"--leader-elect=maybe"},
                                             {"positional"}}) {
    auto o = ParseFlags(args);
    ASSERT_FALSE(o.ok()) << args[0];
    EXPECT_EQ(o.status().message().find('\n'), std::string::npos);
  }
}

TEST(OptionsTest, Help) {
  auto o = ParseFlags({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  EXPECT_NE(Usage().find("--launcher-image"), std::string::npos);
  EXPECT_NE(Usage().find("--node-lease-grace"), std::string::npos);
  EXPECT_NE(Usage().find("--on-node-cordon"), std::string::npos);
}

TEST(BindAddressTest, Parses) {
  std::string host;
  int port = 0;
  ASSERT_TRUE(ParseBindAddress(":8080", &host, &port).ok());
  EXPECT_EQ(host, "");
  EXPECT_EQ(port, 8080);
  ASSERT_TRUE(ParseBindAddress("127.0.0.1:0", &host, &port).ok());
  EXPECT_EQ(host, "127.0.0.1");
  EXPECT_FALSE(ParseBindAddress("localhost:99999", &host, &port).ok());
  EXPECT_FALSE(ParseBindAddress("nohost", &host, &port).ok());
}

}  // namespace
}  // namespace lockstep::app
