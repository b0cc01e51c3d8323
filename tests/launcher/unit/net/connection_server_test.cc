// The launcher's server loop (launcher/net/connection_server.h) over loopback: the connection
// cap, eviction of the oldest unauthenticated connection, the pre-auth byte budget and deadline
// (on a FakeClock), the write-queue bound and write timeout, lingering, and that a handler's
// OnClose runs before Close returns.
#include "launcher/net/connection_server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/net.h"
#include "tests/testing/fake_clock.h"
#include "tests/testing/free_port.h"

namespace lockstep::net {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

constexpr size_t kMiB = 1u << 20;

// Greets every connection with "hi" and obeys one-letter commands: 'a' authenticates ("ok"),
// 'l' answers "bye" and lingers (half-closed), 'f' sends 32 MiB, 'c' closes it from the handler;
// anything else is echoed. With `consume` false it leaves every byte in `in`.
class ScriptedHandler : public ConnectionHandler {
 public:
  ConnectionServer* server = nullptr;
  bool consume = true;

  void OnOpen(ConnId id) override { server->Send(id, "hi"); }

  bool OnData(ConnId id, std::string* in) override {
    if (!consume) return true;
    std::string bytes;
    bytes.swap(*in);
    for (char c : bytes) {
      switch (c) {
        case 'a':
          server->Authenticate(id);
          server->Send(id, "ok");
          break;
        case 'l':
          server->Send(id, "bye");
          server->Linger(id, /*half_close=*/true);
          return true;
        case 'f':
          for (int i = 0; i < 512; ++i) server->Send(id, std::string(64u << 10, 'x'));
          break;
        case 'c':
          in_close_ = true;
          server->Close(id, "closed by the test handler");
          in_close_ = false;
          return true;
        default:
          server->Send(id, std::string(1, c));
      }
    }
    return true;
  }

  void OnClose(ConnId id, const CloseInfo& info) override {
    if (in_close_) closed_inside_ = true;  // OnClose runs before Close returns
    std::lock_guard<std::mutex> lock(mu_);
    closed_[id] = info.why;
  }

  // Every close reason, in id order, once at least `n` connections closed (or 5 s passed): the
  // peer may see its socket closed just before OnClose runs.
  std::vector<std::string> Reasons(size_t n = 1) {
    const auto until = Steady::now() + seconds(5);
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (closed_.size() >= n || Steady::now() >= until) {
          std::vector<std::string> out;
          for (const auto& [id, why] : closed_) out.push_back(why);
          return out;
        }
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
  }
  bool closed_inside() const { return closed_inside_.load(); }

 private:
  std::mutex mu_;
  std::map<ConnId, std::string> closed_;
  bool in_close_ = false;  // loop thread only
  std::atomic<bool> closed_inside_{false};
};

// A server on 127.0.0.1 with `limits`, stopped when the test ends.
struct Served {
  ScriptedHandler handler;
  std::unique_ptr<ConnectionServer> server;

  explicit Served(ConnectionLimits limits, const Clock* clock = &RealClock::Get()) {
    server = std::make_unique<ConnectionServer>(&handler, limits, "test: ", clock);
    handler.server = server.get();
    StatusOr<UniqueFd> fd = ListenTcp(0);
    EXPECT_TRUE(fd.ok()) << fd.status();
    std::vector<UniqueFd> listeners;
    listeners.push_back(std::move(*fd));
    Status s = server->Listen(std::move(listeners));
    EXPECT_TRUE(s.ok()) << s;
    server->Start();
  }
  ~Served() {
    for (int fd : clients) ::close(fd);
    server->Stop();
  }
  int port() const { return server->port(); }
  // A client the server accepted (it read the greeting), closed with the server; -1 if none.
  int Client();
  // A raw connection, greeting unread, closed with the server.
  int RawClient();

  std::vector<int> clients;
};

// Reads `n` bytes within `timeout`; fewer when the peer closed or time ran out.
std::string ReadN(int fd, size_t n, milliseconds timeout = milliseconds(5000)) {
  std::string out;
  const auto deadline = Steady::now() + timeout;
  char buf[4096];
  while (out.size() < n && Steady::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t got = ::recv(fd, buf, std::min(sizeof(buf), n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

// True when the server closes `fd` (EOF or reset) within `timeout`, dropping what it sends.
bool ClosedWithin(int fd, milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  char buf[65536];
  while (Steady::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    if (::recv(fd, buf, sizeof(buf), 0) <= 0) return true;
  }
  return false;
}

bool Send(int fd, std::string_view bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// A client the server has accepted (it read the greeting); -1 when it was not.
int Connect(int port) {
  const int fd = testing::ConnectTcp(port);
  if (fd >= 0 && ReadN(fd, 2) != "hi") {
    ::close(fd);
    return -1;
  }
  return fd;
}

int Served::Client() {
  clients.push_back(Connect(port()));
  return clients.back();
}

int Served::RawClient() {
  clients.push_back(testing::ConnectTcp(port()));
  return clients.back();
}

TEST(ConnectionServerTest, OneConnectionPastTheCapIsClosedAtOnceWhenAllAreAuthenticated) {
  ConnectionLimits limits;
  limits.max_connections = 2;
  limits.require_authentication = false;
  Served s(limits);
  const int a = s.Client();
  const int b = s.Client();
  ASSERT_TRUE(a >= 0 && b >= 0);
  const int c = s.RawClient();
  ASSERT_GE(c, 0);
  EXPECT_TRUE(ClosedWithin(c, seconds(5)));
  EXPECT_EQ(s.server->stats().refused_over_cap.load(), 1u);
  // The two in place still work.
  ASSERT_TRUE(Send(a, "x") && Send(b, "y"));
  EXPECT_EQ(ReadN(a, 1), "x");
  EXPECT_EQ(ReadN(b, 1), "y");
}

TEST(ConnectionServerTest, TheOldestUnauthenticatedConnectionIsEvictedForANewOne) {
  ConnectionLimits limits;
  limits.max_connections = 10;
  limits.max_unauthenticated = 2;
  Served s(limits);
  const int first = s.Client();
  const int second = s.Client();
  ASSERT_TRUE(first >= 0 && second >= 0);
  // The second authenticates: it no longer counts, and is never evicted.
  ASSERT_TRUE(Send(second, "a"));
  ASSERT_EQ(ReadN(second, 2), "ok");
  const int third = s.Client();  // waiting: first, third (full)
  ASSERT_GE(third, 0);
  const int fourth = s.Client();  // evicts the oldest waiting: `first`
  ASSERT_GE(fourth, 0);
  EXPECT_TRUE(ClosedWithin(first, seconds(5)));
  const int fifth = s.Client();  // then `third`, not the older `second`
  ASSERT_GE(fifth, 0);
  EXPECT_TRUE(ClosedWithin(third, seconds(5)));
  EXPECT_EQ(s.server->stats().evicted.load(), 2u);
  EXPECT_EQ(s.handler.Reasons(2), std::vector<std::string>(2, "closed for a newer connection"));
  for (int fd : {second, fourth, fifth}) {
    ASSERT_TRUE(Send(fd, "e"));
    EXPECT_EQ(ReadN(fd, 1), "e") << "a connection that should still be open";
  }
}

TEST(ConnectionServerTest, AnUnauthenticatedPeerMayLeaveAtMostThePreAuthBudgetUnconsumed) {
  ConnectionLimits limits;
  limits.pre_auth_bytes = 16;
  Served s(limits);
  s.handler.consume = false;
  const int within = s.Client();
  const int over = s.Client();
  ASSERT_TRUE(within >= 0 && over >= 0);
  ASSERT_TRUE(Send(within, std::string(16, 'z')));
  ASSERT_TRUE(Send(over, std::string(17, 'z')));
  EXPECT_TRUE(ClosedWithin(over, seconds(5)));
  EXPECT_FALSE(ClosedWithin(within, milliseconds(300)));
  const std::vector<std::string> reasons = s.handler.Reasons();
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("before authenticating"), std::string::npos) << reasons[0];
}

// On a FakeClock: the deadline is the clock's, so the test moves it instead of waiting. Each
// step wakes the loop with a new connection (the loop waits on epoll, not on the fake clock).
TEST(ConnectionServerTest, APeerThatDoesNotAuthenticateInTimeIsClosedBytesOrNot) {
  testing::FakeClock clock;
  ConnectionLimits limits;
  limits.pre_auth_timeout = seconds(10);
  Served s(limits, &clock);
  const int silent = s.Client();
  const int chatty = s.Client();
  const int authed = s.Client();
  ASSERT_TRUE(silent >= 0 && chatty >= 0 && authed >= 0);
  ASSERT_TRUE(Send(authed, "a"));
  ASSERT_EQ(ReadN(authed, 2), "ok");
  clock.Advance(seconds(9));
  ASSERT_TRUE(Send(chatty, "e"));  // bytes do not extend the deadline
  ASSERT_EQ(ReadN(chatty, 1), "e");
  s.Client();
  EXPECT_FALSE(ClosedWithin(silent, milliseconds(200))) << "closed before its deadline";
  clock.Advance(seconds(1));
  s.Client();
  EXPECT_TRUE(ClosedWithin(silent, seconds(5)));
  EXPECT_TRUE(ClosedWithin(chatty, seconds(5)));
  ASSERT_TRUE(Send(authed, "e"));
  EXPECT_EQ(ReadN(authed, 1), "e");
  const std::vector<std::string> reasons = s.handler.Reasons(2);
  EXPECT_EQ(reasons, std::vector<std::string>(2, "did not authenticate within the auth timeout"));
  EXPECT_EQ(s.server->stats().closed_by_deadline.load(), 2u);
}

TEST(ConnectionServerTest, APeerThatDoesNotReadIsClosedPastTheWriteQueueBound) {
  ConnectionLimits limits;
  limits.max_queued_bytes = 1 * kMiB;
  Served s(limits);
  const int fd = s.Client();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Send(fd, "a"));
  ASSERT_EQ(ReadN(fd, 2), "ok");
  ASSERT_TRUE(Send(fd, "f"));  // 32 MiB it does not read: more than the socket buffers hold
  EXPECT_EQ(s.handler.Reasons(),
            std::vector<std::string>{"the peer does not read what the server sends"});
  EXPECT_EQ(s.server->stats().closed_queue_full.load(), 1u);
}

TEST(ConnectionServerTest, QueuedBytesThatMakeNoProgressCloseTheConnection) {
  ConnectionLimits limits;
  limits.require_authentication = false;
  limits.write_timeout = milliseconds(200);
  Served s(limits);
  const int fd = s.Client();
  ASSERT_GE(fd, 0);
  const auto start = Steady::now();
  ASSERT_TRUE(Send(fd, "f"));
  EXPECT_EQ(s.handler.Reasons(),
            std::vector<std::string>{"no byte of the reply left within the write timeout"});
  EXPECT_EQ(s.server->stats().closed_write_stalled.load(), 1u);
  EXPECT_GE(Steady::now() - start, milliseconds(200));
}

TEST(ConnectionServerTest, ALingeringPeerGetsItsAnswerThenItsEndAndWhatItSendsIsDropped) {
  ConnectionLimits limits;
  limits.linger_discard_bytes = 64u << 10;
  limits.linger_timeout = milliseconds(300);
  Served s(limits);
  const int fd = s.Client();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Send(fd, "l"));
  EXPECT_EQ(ReadN(fd, 3), "bye");
  // Half-closed: the next read sees the end while the connection still takes bytes.
  EXPECT_EQ(ReadN(fd, 1, milliseconds(2000)), "");
  const auto start = Steady::now();
  size_t sent = 0;
  const std::string chunk(64u << 10, 'q');
  while (Steady::now() - start < seconds(5)) {
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;  // closed
    std::this_thread::sleep_for(milliseconds(5));
  }
  EXPECT_LT(Steady::now() - start, seconds(5)) << "never closed; " << sent << " bytes sent";
  EXPECT_EQ(s.handler.Reasons(), std::vector<std::string>{"closing timeout"});
}

TEST(ConnectionServerTest, CloseRunsTheHandlersOnCloseBeforeItReturns) {
  Served s(ConnectionLimits{});
  const int fd = s.Client();
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Send(fd, "c"));
  EXPECT_TRUE(ClosedWithin(fd, seconds(5)));
  EXPECT_EQ(s.handler.Reasons(), std::vector<std::string>{"closed by the test handler"});
  EXPECT_TRUE(s.handler.closed_inside());
}

}  // namespace
}  // namespace lockstep::net
