// The launcher's stores against real clients: torch's own TCPStore client (several Python
// processes) for the TCPStore-compatible server, and Horovod's HTTP KV protocol for the Gloo
// rendezvous server.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "launcher/stores/gloo_kv_server.h"
#include "launcher/stores/tcp_store_server.h"
#include "tests/launcher/frameworks/pod_driver.h"
#include "tests/testing/loopback.h"

namespace lockstep::launcher::testing {
namespace {

using frameworks::ChildProcess;
using ::lockstep::testing::LoopbackHttp;

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

TEST(GlooKvServer, ServesHorovodsProtocolOverLoopback) {
  stores::GlooKvServer server({{"global", 2}});
  StatusOr<int> port = server.Start("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  EXPECT_EQ(LoopbackHttp(*port, "GET", "/global/rank_1").status, 404);
  EXPECT_EQ(LoopbackHttp(*port, "PUT", "/global/rank_1", std::string("addr\0bytes", 10)).status,
            200);
  auto got = LoopbackHttp(*port, "GET", "/global/rank_1");
  EXPECT_EQ(got.status, 200);
  EXPECT_EQ(got.body, std::string("addr\0bytes", 10));
  EXPECT_EQ(LoopbackHttp(*port, "GET", "/bad").status, 400);
  EXPECT_EQ(LoopbackHttp(*port, "DELETE", "/global/0").status, 200);
  // Rank 1 has not finished yet.
  EXPECT_EQ(LoopbackHttp(*port, "GET", "/global/rank_1").status, 200);
  EXPECT_EQ(LoopbackHttp(*port, "DELETE", "/global/1").status, 200);
  // The scope is cleared for the next init.
  EXPECT_EQ(LoopbackHttp(*port, "GET", "/global/rank_1").status, 404);
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
      if (LoopbackHttp(*port, "PUT", key, std::to_string(i * i)).status != 200) return;
      auto got = LoopbackHttp(*port, "GET", key);
      if (got.status == 200 && got.body == std::to_string(i * i)) ok++;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 64);
}

}  // namespace
}  // namespace lockstep::launcher::testing
