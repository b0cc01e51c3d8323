#include "operator/app/http_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/testing/free_port.h"
#include "tests/testing/loopback.h"

namespace lockstep::app {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

using ::lockstep::testing::ConnectTcp;

// `curl -m <timeout>`: the response, or "" when it did not come whole within the timeout.
std::string ExchangeWithin(int port, const std::string& request, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  int fd = ConnectTcp(port);
  if (fd < 0) return "";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string out;
  char buf[1024];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      ::close(fd);
      return out;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return "";
}

// The raw response to `request` sent to 127.0.0.1:port; "" when nothing answers.
std::string Exchange(int port, const std::string& request) {
  return ::lockstep::testing::LoopbackExchange(port, request).value_or("");
}

TEST(HttpServerTest, RoutesGetRequestsAndRejectsTheRest) {
  HttpServer server;
  int calls = 0;
  server.Handle("/readyz", [&calls] {
    ++calls;
    return HttpResponse{503, "text/plain", "not yet\n"};
  });
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "a 1\n"}; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  const std::string ok = Exchange(server.port(), "GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(ok.substr(ok.size() - 4), "a 1\n");
  EXPECT_EQ(Exchange(server.port(), "GET /readyz HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(Exchange(server.port(), "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Exchange(server.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0),
            0u);
  server.Stop();
  EXPECT_EQ(Exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n"), "");
}

// Issue 18, hole 5: clients that send a byte every 4 s (a request never finished) must not
// hold /healthz: every probe, `curl -m 2`, is answered while they drip.
TEST(HttpServerTest, SlowClientsDoNotBlockHealthz) {
  HttpServer server;
  server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::atomic<bool> stop{false};
  std::vector<std::thread> drips;
  for (int i = 0; i < 3; ++i) {
    drips.emplace_back([&] {
      int fd = ConnectTcp(server.port());
      const std::string req = "GET /healthz HTTP/1.1\r\nHost: slow\r\n\r\n";
      for (size_t at = 0; at < req.size() - 1 && !stop; ++at) {
        ::send(fd, req.data() + at, 1, MSG_NOSIGNAL);
        for (int tick = 0; tick < 40 && !stop; ++tick) {
          std::this_thread::sleep_for(milliseconds(100));
        }
      }
      ::close(fd);
    });
  }
  std::this_thread::sleep_for(milliseconds(200));
  int answered = 0;
  const auto start = Clock::now();
  while (Clock::now() - start < seconds(9)) {
    const std::string r = ExchangeWithin(server.port(), "GET /healthz HTTP/1.1\r\n\r\n",
                                         milliseconds(2000));
    EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << "probe " << answered << ": " << r;
    if (r.rfind("HTTP/1.1 200", 0) == 0) ++answered;
    std::this_thread::sleep_for(milliseconds(500));
  }
  stop = true;
  for (auto& t : drips) t.join();
  EXPECT_GE(answered, 5);
}

// Idle connections beyond the cap cannot lock the probe out: the oldest ones are dropped.
TEST(HttpServerTest, ManyIdleConnectionsDoNotBlockHealthz) {
  HttpServer server;
  server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::vector<int> idle;
  for (int i = 0; i < 300; ++i) {
    int fd = ConnectTcp(server.port());
    if (fd >= 0) idle.push_back(fd);
  }
  for (int i = 0; i < 3; ++i) {
    const std::string r = ExchangeWithin(server.port(), "GET /healthz HTTP/1.1\r\n\r\n",
                                         milliseconds(2000));
    EXPECT_EQ(r.rfind("HTTP/1.1 200", 0), 0u) << "probe " << i << ": " << r;
  }
  // The cap: all but the newest kMaxConnections (64) idle ones were closed by the server (a read
  // sees EOF or a reset). Without the cap none is, and the probes above still pass.
  size_t closed = 0;
  for (int fd : idle) {
    char c = 0;
    const ssize_t n = ::recv(fd, &c, 1, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) ++closed;
  }
  EXPECT_GE(closed, idle.size() - HttpServer::kMaxConnections);
  for (int fd : idle) ::close(fd);
}

TEST(HttpServerTest, RefusesABadAddress) {
  HttpServer server;
  EXPECT_FALSE(server.Start("not-an-ip:80").ok());
  EXPECT_FALSE(server.Start("127.0.0.1").ok());
}

}  // namespace
}  // namespace lockstep::app
