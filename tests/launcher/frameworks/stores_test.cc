// The launcher's stores against real clients: torch's own TCPStore client (several Python
// processes) for the TCPStore-compatible server, and Horovod's HTTP KV protocol for the Gloo
// rendezvous server.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "launcher/stores/gloo_kv_server.h"
#include "launcher/stores/tcp_store_server.h"
#include "tests/launcher/frameworks/pod_driver.h"

namespace lockstep::launcher::testing {
namespace {

using frameworks::ChildProcess;

// 4 torch clients (is_master=False) exercise every store operation against each other, then
// build a gloo process group over the store and all-reduce.
TEST(TcpStoreServer, TorchClientsUseEveryOperationAndBuildAProcessGroup) {
  if (!VenvHasModule("torch")) GTEST_SKIP() << "no torch in " << VenvPython();
  stores::TcpStoreServer server;
  StatusOr<int> port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  constexpr int kWorld = 4;
  std::vector<pid_t> pids;
  char dir_template[] = "/tmp/lockstep-storetest-XXXXXX";
  const std::string dir = ::mkdtemp(dir_template);
  for (int r = 0; r < kWorld; ++r) {
    const std::string log = dir + "/" + std::to_string(r) + ".log";
    const std::string cmd = VenvPython() + " " + RepoRoot() +
                            "/tests/launcher/frameworks/tcpstore_client.py 127.0.0.1 " +
                            std::to_string(*port) + " " + std::to_string(r) + " " +
                            std::to_string(kWorld) + " >" + log + " 2>&1";
    pid_t pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  std::string output;
  int failures = 0;
  for (int r = 0; r < kWorld; ++r) {
    int status = 0;
    ::waitpid(pids[static_cast<size_t>(r)], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failures;
    const std::string log = dir + "/" + std::to_string(r) + ".log";
    FILE* f = ::fopen(log.c_str(), "r");
    char buf[4096];
    size_t n = 0;
    while (f != nullptr && (n = ::fread(buf, 1, sizeof(buf), f)) > 0) output.append(buf, n);
    if (f != nullptr) ::fclose(f);
    ::unlink(log.c_str());
  }
  ::rmdir(dir.c_str());
  EXPECT_EQ(failures, 0) << output;
  for (int r = 0; r < kWorld; ++r) {
    EXPECT_NE(output.find("STORE_OK rank=" + std::to_string(r)), std::string::npos) << output;
    EXPECT_NE(output.find("ALLREDUCE rank=" + std::to_string(r) + " sum=10"), std::string::npos)
        << output;
  }
}

// One HTTP request per connection, as Horovod's C++ client (HTTPRequest) makes them.
std::pair<int, std::string> Http(int port, const std::string& method, const std::string& path,
                                 const std::string& body = "") {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return {-1, ""};
  }
  const std::string req = method + " " + path +
                          " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                          "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  // The server closes after one response (HTTP/1.0), so reading to EOF yields all of it.
  if (resp.size() < 12) return {-1, resp};
  const size_t body_at = resp.find("\r\n\r\n");
  return {std::stoi(resp.substr(9, 3)),
          body_at == std::string::npos ? "" : resp.substr(body_at + 4)};
}

TEST(GlooKvServer, ServesHorovodsProtocolOverLoopback) {
  stores::GlooKvServer server({{"global", 2}});
  StatusOr<int> port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(Http(*port, "GET", "/global/rank_1").first, 404);
  EXPECT_EQ(Http(*port, "PUT", "/global/rank_1", std::string("addr\0bytes", 10)).first, 200);
  auto got = Http(*port, "GET", "/global/rank_1");
  EXPECT_EQ(got.first, 200);
  EXPECT_EQ(got.second, std::string("addr\0bytes", 10));
  EXPECT_EQ(Http(*port, "GET", "/bad").first, 400);
  EXPECT_EQ(Http(*port, "DELETE", "/global/0").first, 200);
  EXPECT_EQ(Http(*port, "GET", "/global/rank_1").first, 200);  // rank 1 not finished yet
  EXPECT_EQ(Http(*port, "DELETE", "/global/1").first, 200);
  EXPECT_EQ(Http(*port, "GET", "/global/rank_1").first, 404);  // scope cleared for the next init
}

// Many clients at once on the one loop thread: 64 concurrent PUT/GET pairs all answered.
TEST(GlooKvServer, ManyConcurrentClients) {
  stores::GlooKvServer server({});
  StatusOr<int> port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      const std::string key = "/scope/k" + std::to_string(i);
      if (Http(*port, "PUT", key, std::to_string(i * i)).first != 200) return;
      auto got = Http(*port, "GET", key);
      if (got.first == 200 && got.second == std::to_string(i * i)) ok++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 64);
}

}  // namespace
}  // namespace lockstep::launcher::testing
