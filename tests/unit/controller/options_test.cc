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
  EXPECT_EQ(o->workers, 4);
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
