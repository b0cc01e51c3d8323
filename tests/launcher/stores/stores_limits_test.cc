// The launcher's stores against hostile clients (issue 18, hole 2), over loopback. Each server
// runs in a child process of its own, so its memory is measured from outside (VmHWM, the peak
// resident set) and a server that a client could make allocate without bound dies alone under
// an address-space limit instead of taking the machine with it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "launcher/stores/gloo_kv_server.h"
#include "launcher/stores/tcp_store_server.h"
#include "launcher/stores/tcpstore_codec.h"
#include "tests/testing/free_port.h"

namespace lockstep::launcher::stores {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr size_t kMiB = 1024 * 1024;
// Far above what any bounded server here needs, far below what an unbounded one reaches.
constexpr rlim_t kChildAddressSpace = 3072 * kMiB;

// A store served by a child process until the test ends.
class ServerProcess {
 public:
  // `start` runs in the child: it starts a server and returns its port (or -1).
  explicit ServerProcess(const std::function<int()>& start) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      rlimit as{kChildAddressSpace, kChildAddressSpace};
      ::setrlimit(RLIMIT_AS, &as);
      const int port = start();
      [[maybe_unused]] ssize_t n = ::write(fds[1], &port, sizeof(port));
      while (true) ::pause();
    }
    ::close(fds[1]);
    if (::read(fds[0], &port_, sizeof(port_)) != sizeof(port_)) port_ = -1;
    ::close(fds[0]);
  }
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  int port() const { return port_; }
  bool Alive() const { return pid_ > 0 && ::kill(pid_, 0) == 0 && !Exited(); }
  // Peak resident memory of the server process, in bytes (0 when unreadable).
  size_t PeakRss() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
    }
    return 0;
  }

 private:
  bool Exited() const {
    int status = 0;
    return ::waitpid(pid_, &status, WNOHANG) == pid_;
  }
  pid_t pid_ = -1;
  int port_ = -1;
};

using ::lockstep::testing::ConnectTcp;

// Sends all of `bytes` unless the peer closes; false when it did.
bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Reads exactly `n` bytes within `timeout`; shorter when the peer closed or time ran out.
std::string ReadN(int fd, size_t n, milliseconds timeout = milliseconds(5000)) {
  std::string out;
  const auto deadline = Clock::now() + timeout;
  char buf[65536];
  while (out.size() < n && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 1))) <= 0) continue;
    ssize_t got = ::recv(fd, buf, std::min(sizeof(buf), n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

// True when the server closes `fd` within `timeout` (EOF or reset), draining what it sends.
bool ClosedWithin(int fd, milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  char buf[4096];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (::recv(fd, buf, sizeof(buf), 0) <= 0) return true;
  }
  return false;
}

std::string Encode(const Request& req) {
  std::string out;
  EncodeRequest(req, &out);
  return out;
}

std::string Validate() {
  Request r;
  r.type = QueryType::kValidate;
  r.u32 = kValidationMagic;
  return Encode(r);
}

std::string Set(std::string key, std::string value) {
  Request r;
  r.type = QueryType::kSet;
  r.keys = {std::move(key)};
  r.values = {std::move(value)};
  return Encode(r);
}

std::string Add(std::string key, int64_t delta) {
  Request r;
  r.type = QueryType::kAdd;
  r.keys = {std::move(key)};
  r.i64 = delta;
  return Encode(r);
}

std::string Get(std::string key) {
  Request r;
  r.type = QueryType::kGet;
  r.keys = {std::move(key)};
  return Encode(r);
}

int StartTcpStore() {
  static TcpStoreServer* server = new TcpStoreServer();  // lives until the child is killed
  StatusOr<int> port = server->Start("127.0.0.1", 0);
  return port.ok() ? *port : -1;
}

int StartGlooKv() {
  static GlooKvServer* server = new GlooKvServer({{"global", 2}});
  StatusOr<int> port = server->Start("127.0.0.1", 0);
  return port.ok() ? *port : -1;
}

// A store that still answers: SET then GET of a fresh key on a new connection.
bool StillServes(int port) {
  int fd = ConnectTcp(port);
  if (fd < 0) return false;
  const std::string key = "/alive";
  const bool sent = SendAll(fd, Validate() + Set(key, "yes") + Get(key));
  const std::string reply = ReadN(fd, 8 + 3);
  ::close(fd);
  return sent && reply.size() == 11 && reply.substr(8) == "yes";
}

// One MULTI_SET declaring 128Ki keys of 8 MiB values (each field within torch's own limits),
// streamed for up to 1 GiB or 60 s: the server must refuse it long before, and stay small.
TEST(TcpStoreLimits, AHugeDeclaredRequestIsRefusedAndMemoryStaysBounded) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  int fd = ConnectTcp(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, Validate()));
  std::string head;
  PutU8(static_cast<uint8_t>(QueryType::kMultiSet), &head);
  const uint64_t keys = kMaxKeyCount;
  head.append(reinterpret_cast<const char*>(&keys), sizeof(keys));
  ASSERT_TRUE(SendAll(fd, head));
  const std::string chunk(kMiB, 'x');
  size_t sent = 0;
  bool refused = false;
  const auto deadline = Clock::now() + seconds(60);
  while (!refused && sent < 1024 * kMiB && Clock::now() < deadline) {
    std::string field;  // a key "k", then an 8 MiB value sent 1 MiB at a time
    PutBytes("k", &field);
    const uint64_t len = kMaxPayloadLen;
    field.append(reinterpret_cast<const char*>(&len), sizeof(len));
    refused = !SendAll(fd, field);
    for (size_t i = 0; !refused && i < kMaxPayloadLen / kMiB; ++i) {
      refused = !SendAll(fd, chunk);
      if (!refused) sent += chunk.size();
    }
  }
  ::close(fd);
  std::cout << "[huge request] sent " << sent / kMiB << " MiB before "
            << (refused ? "the server closed" : "giving up") << "; server peak RSS "
            << server.PeakRss() / kMiB << " MiB\n";
  EXPECT_TRUE(refused) << "the server read " << sent / kMiB << " MiB of one request";
  EXPECT_LT(sent, 128 * kMiB);
  EXPECT_LT(server.PeakRss(), 160 * kMiB);
  EXPECT_TRUE(StillServes(server.port()));
}

// Connections that never send VALIDATE, or stop in the middle of a request, are closed; a
// validated client that is simply idle (torch's clients hold their connection for the whole
// job, between requests) is not.
TEST(TcpStoreLimits, SilentAndStalledClientsAreClosedIdleValidatedOnesKept) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  int silent = ConnectTcp(server.port());
  int stalled = ConnectTcp(server.port());
  int idle = ConnectTcp(server.port());
  ASSERT_TRUE(silent >= 0 && stalled >= 0 && idle >= 0);
  ASSERT_TRUE(SendAll(idle, Validate()));
  // Half a SET, then a byte every 2 s: never complete.
  const std::string set = Set("/slow", "value");
  ASSERT_TRUE(SendAll(stalled, Validate() + set.substr(0, 5)));
  std::thread drip([&] {
    for (size_t i = 5; i < set.size() - 1; ++i) {
      std::this_thread::sleep_for(seconds(2));
      if (!SendAll(stalled, set.substr(i, 1))) return;
    }
  });
  const auto start = Clock::now();
  EXPECT_TRUE(ClosedWithin(silent, seconds(15))) << "a connection that never validated";
  EXPECT_TRUE(ClosedWithin(stalled, seconds(45))) << "a request dripped a byte every 2 s";
  std::cout << "[slow clients] both closed after "
            << std::chrono::duration_cast<milliseconds>(Clock::now() - start).count()
            << " ms\n";
  ::shutdown(stalled, SHUT_RDWR);
  drip.join();
  // The idle validated client still works.
  ASSERT_TRUE(SendAll(idle, Set("/idle", "ok") + Get("/idle")));
  EXPECT_EQ(ReadN(idle, 10).substr(8), "ok");
  for (int fd : {silent, stalled, idle}) ::close(fd);
}

// ADD past INT64_MAX is refused (the connection closed), never wrapped to a negative count.
TEST(TcpStoreLimits, AddThatWouldOverflowIsRefused) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  int fd = ConnectTcp(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, Validate() + Add("/n", std::numeric_limits<int64_t>::max())));
  std::string first = ReadN(fd, 8);
  ASSERT_EQ(first.size(), 8u);
  int64_t value = 0;
  std::memcpy(&value, first.data(), 8);
  EXPECT_EQ(value, std::numeric_limits<int64_t>::max());
  SendAll(fd, Add("/n", 1));
  std::string second = ReadN(fd, 8, milliseconds(2000));
  if (second.size() == 8) {
    std::memcpy(&value, second.data(), 8);
    ADD_FAILURE() << "ADD answered " << value << " after INT64_MAX + 1";
  }
  EXPECT_TRUE(ClosedWithin(fd, seconds(2)));
  ::close(fd);
  EXPECT_TRUE(StillServes(server.port()));
}

// One 8 MiB value asked for 100,000 times in one MULTI_GET (a 1 MiB request) would be an
// 800 GB reply: refused, and the server lives.
TEST(TcpStoreLimits, AMultiGetWhoseReplyWouldBeHugeIsRefused) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  int fd = ConnectTcp(server.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(SendAll(fd, Validate() + Set("k", std::string(kMaxPayloadLen, 'v'))));
  Request get;
  get.type = QueryType::kMultiGet;
  get.keys.assign(100000, "k");
  SendAll(fd, Encode(get));
  EXPECT_TRUE(ClosedWithin(fd, seconds(20)));
  ::close(fd);
  EXPECT_TRUE(server.Alive()) << "the server died";
  EXPECT_TRUE(StillServes(server.port()));
  EXPECT_LT(server.PeakRss(), 160 * kMiB);
}

// More connections than the cap: the extra ones are closed at once, the store keeps serving.
TEST(TcpStoreLimits, ConnectionsBeyondTheCapAreClosed) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  std::vector<int> fds;
  for (int i = 0; i < 4200; ++i) {
    int fd = ConnectTcp(server.port());
    if (fd >= 0) fds.push_back(fd);
  }
  std::this_thread::sleep_for(milliseconds(500));
  int closed = 0;
  for (int fd : fds) {
    pollfd p{fd, POLLIN, 0};
    char c = 0;
    if (::poll(&p, 1, 0) > 0 && ::recv(fd, &c, 1, MSG_DONTWAIT) <= 0) ++closed;
  }
  std::cout << "[connection cap] " << closed << " of " << fds.size() << " closed at once\n";
  EXPECT_GE(closed, 100);
  for (int fd : fds) ::close(fd);
  EXPECT_TRUE(StillServes(server.port()));
}

// The Gloo KV server: a connection that sends nothing, or drips its request, is closed; a body
// larger than the limit is refused without being read whole.
TEST(GlooKvLimits, SilentAndDrippingClientsAreClosed) {
  ServerProcess server(StartGlooKv);
  ASSERT_GT(server.port(), 0);
  int silent = ConnectTcp(server.port());
  int dripping = ConnectTcp(server.port());
  ASSERT_TRUE(silent >= 0 && dripping >= 0);
  std::thread drip([&] {
    const std::string req = "PUT /global/rank_0 HTTP/1.1\r\nContent-Length: 100\r\n\r\n";
    for (char c : req) {
      if (!SendAll(dripping, std::string(1, c))) return;
      std::this_thread::sleep_for(seconds(2));
    }
  });
  EXPECT_TRUE(ClosedWithin(silent, seconds(15)));
  EXPECT_TRUE(ClosedWithin(dripping, seconds(45)));
  ::shutdown(dripping, SHUT_RDWR);
  drip.join();
  ::close(silent);
  ::close(dripping);
}

// 128 clients each declare a 4 MiB body (the most one request may have) and send it slowly:
// together 512 MiB, held by no server that bounds what all its clients may have in flight.
TEST(GlooKvLimits, ManyLargeBodiesAtOnceStayBounded) {
  ServerProcess server(StartGlooKv);
  ASSERT_GT(server.port(), 0);
  constexpr size_t kBody = 4 * kMiB;
  std::vector<int> fds;
  const std::string chunk(kMiB / 4, 'b');
  for (int i = 0; i < 128; ++i) {
    int fd = ConnectTcp(server.port());
    if (fd < 0) continue;
    timeval tv{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    fds.push_back(fd);
    SendAll(fd, "PUT /global/k" + std::to_string(i) +
                    " HTTP/1.1\r\nContent-Length: " + std::to_string(kBody) + "\r\n\r\n");
  }
  for (size_t sent = 0; sent + chunk.size() < kBody; sent += chunk.size()) {
    for (int fd : fds) SendAll(fd, chunk);  // the last bytes never come
  }
  std::cout << "[gloo bodies] server peak RSS " << server.PeakRss() / kMiB << " MiB\n";
  EXPECT_TRUE(server.Alive());
  EXPECT_LT(server.PeakRss(), 160 * kMiB);
  for (int fd : fds) ::close(fd);
}

// The store listens on the address it was given, not on every interface: a client of another
// local address (127.0.0.2, also loopback) is not served.
TEST(StoreAddress, ListensOnlyOnTheGivenAddress) {
  ServerProcess server(StartTcpStore);
  ASSERT_GT(server.port(), 0);
  int other = ConnectTcp(server.port(), "127.0.0.2");
  EXPECT_LT(other, 0) << "a store bound to 127.0.0.1 accepted a connection to 127.0.0.2";
  if (other >= 0) ::close(other);
  EXPECT_TRUE(StillServes(server.port()));
}

}  // namespace
}  // namespace lockstep::launcher::stores
