// The port-fence check of the framework e2e tier: /proc/net/tcp parsing and NetworkPolicy reach.
#include "tests/testing/port_fence.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace lockstep::testing {
namespace {

using nlohmann::json;

TEST(ParseListeningPortsTest, ListenersOnAnyAddressCountLoopbackOnesAndConnectionsDoNot) {
  // Real lines' shape: sl, local, remote, st, ... (the header line does not parse).
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
      "   0: 00000000:72D8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   1: 0100007F:18EB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   2: 0A000105:7338 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
      "   3: 0A000105:72D8 0A000106:9C40 01 00000000:00000000 00:00000000 00000000     0\n"
      "   4: garbage\n";
  EXPECT_EQ(ParseListeningPorts(tcp), (std::set<int>{0x72D8, 0x7338}));  // 29400, 29496
  const std::string tcp6 =
      "   0: 00000000000000000000000000000000:18EB 00000000000000000000000000000000:0000 0A\n"
      "   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A\n"
      "   2: 0000000000000000FFFF00000100007F:1F91 00000000000000000000000000000000:0000 0A\n";
  EXPECT_EQ(ParseListeningPorts(tcp6), (std::set<int>{0x18EB}));  // 6379; ::1, ::ffff:127.0.0.1 not
}

TEST(ListeningTcpPortsOfTest, AListenerOfTheProcessesNamespaceIsFoundOnceGoneProcessesSkipped) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);  // port 0: the kernel picks one
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
  ASSERT_EQ(::listen(fd, 1), 0);
  socklen_t length = sizeof(any);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&any), &length), 0);
  const int port = ntohs(any.sin_port);
  // The same namespace twice (read once) and a pid no process has (pid_max is at most 2^22).
  const std::set<int> ports = ListeningTcpPortsOf({::getpid(), ::getpid(), (1 << 22) + 1});
  EXPECT_TRUE(ports.count(port)) << port;
  ::close(fd);
  EXPECT_FALSE(ListeningTcpPortsOf({::getpid()}).count(port));
  EXPECT_TRUE(ListeningTcpPortsOf({}).empty());
}

json Policy(json ingress) {
  return {{"spec", {{"policyTypes", {"Ingress"}}, {"ingress", std::move(ingress)}}}};
}

TEST(OpenToAnyoneTest, OnlyRulesWithoutPeersOpenPortsToEveryone) {
  const json own = {{"podSelector", {{"matchLabels", {{"lockstep.dev/job-name", "j"}}}}}};
  // Today's shape: own pods everywhere, the operator on 29400, 8265 declared.
  const json fenced = Policy(json::array(
      {{{"from", {own}}},
       {{"from", {{{"namespaceSelector", json::object()}}}},
        {"ports", {{{"protocol", "TCP"}, {"port", 29400}}}}},
       {{"ports", {{{"protocol", "TCP"}, {"port", 8265}}}}}}));
  EXPECT_FALSE(OpenToAnyone(fenced, 6379));
  EXPECT_FALSE(OpenToAnyone(fenced, 29400));
  EXPECT_TRUE(OpenToAnyone(fenced, 8265));
  // The shape before issue 44: every TCP port but the launcher's three open to everyone, which
  // the e2e check must catch on Ray's GCS (6379) or TensorFlow's gRPC server.
  const json before = Policy(json::array(
      {{{"from", {own}}},
       {{"ports", json::parse(R"([{"protocol": "TCP", "port": 1, "endPort": 29399},
                                  {"protocol": "TCP", "port": 29401, "endPort": 29499},
                                  {"protocol": "TCP", "port": 29502, "endPort": 65535},
                                  {"protocol": "UDP"}])")}}}));
  EXPECT_TRUE(OpenToAnyone(before, 6379));
  EXPECT_FALSE(OpenToAnyone(before, 29400));
  EXPECT_FALSE(OpenToAnyone(before, 29500));
  EXPECT_TRUE(OpenToAnyone(before, 29502));
  // Edge shapes: a rule with no ports, an empty `from`, a named port, UDP only, no Ingress type.
  EXPECT_TRUE(OpenToAnyone(Policy(json::array({json::object()})), 1234));
  EXPECT_TRUE(OpenToAnyone(Policy(json::array({{{"from", json::array()}}})), 1234));
  EXPECT_TRUE(OpenToAnyone(Policy(json::array({{{"ports", {{{"port", "metrics"}}}}}})), 1234));
  EXPECT_FALSE(OpenToAnyone(Policy(json::array({{{"ports", {{{"protocol", "UDP"}}}}}})), 1234));
  EXPECT_FALSE(OpenToAnyone(Policy(json::array()), 1234));
  EXPECT_TRUE(OpenToAnyone({{"spec", {{"policyTypes", {"Egress"}}}}}, 1234));
}

}  // namespace
}  // namespace lockstep::testing
