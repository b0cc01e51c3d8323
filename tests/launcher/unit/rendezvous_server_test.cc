// The rank-0 rendezvous server against peers that are not launchers of its attempt, on loopback
// (launcher/rendezvous/server.h "Bounds"): a refused request or a Join with a bad MAC followed by a
// stream of up to 1 GB on the same connection, 2,000 connections that trickle bytes and never
// authenticate, a member that reads none of a 17 MiB peer table, and launchers of another attempt. Each time the server's memory stays bounded
// (this process's RSS, which holds the server) and the real launchers still form their round.
#include "launcher/rendezvous/server.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "common/net.h"
#include "launcher/rendezvous/client.h"
#include "protocol/auth.h"

namespace lockstep::launcher::rendezvous {
namespace {

using protocol::Encode;
using protocol::Frame;
using protocol::FrameDecoder;
using protocol::MessageType;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kRunId[] = "run";
constexpr char kToken[] = "job-token";
constexpr uint32_t kAttempt = 3;
// What the server may add to this process's resident memory whatever the hostile peers send.
constexpr size_t kMemoryBound = 64u << 20;

size_t RssBytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmRSS:") {
      size_t kb = 0;
      in >> kb;
      return kb << 10;
    }
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

std::unique_ptr<RendezvousServer> StartServer(ServerOptions opt = {}) {
  opt.run_id = kRunId;
  if (opt.token.empty() && !opt.insecure_no_auth) opt.token = kToken;
  opt.attempt = kAttempt;
  opt.min_nodes = opt.max_nodes = 2;
  opt.peer_timeout = seconds(3);
  opt.heartbeat_interval = milliseconds(100);
  opt.auth_timeout = seconds(1);
  opt.closing_timeout = milliseconds(300);
  StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(opt, 0);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  (*server)->Start();
  return std::move(*server);
}

ClientOptions Launcher(uint16_t port, uint32_t node_rank, uint32_t key_attempt = kAttempt) {
  ClientOptions c;
  c.endpoint = {"127.0.0.1", port};
  c.run_id = kRunId;
  c.token = kToken;
  c.key_attempt = key_attempt;
  c.attempt = kAttempt;
  c.node_rank = node_rank;
  c.host = "127.0.0.1";
  c.heartbeat_interval = milliseconds(100);
  c.peer_timeout = seconds(3);
  c.deadline = Steady::now() + seconds(20);
  return c;
}

// The job's two real launchers join; both must get the world of two nodes.
void ExpectRealLaunchersFormTheRound(uint16_t port) {
  StatusOr<JoinResult> other = UnavailableError("not run");
  std::thread node1([&] { other = JoinRound(Launcher(port, 1)); });
  StatusOr<JoinResult> self = JoinRound(Launcher(port, 0));
  node1.join();
  ASSERT_TRUE(self.ok()) << self.status();
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(self->world.nnodes, 2u);
  EXPECT_EQ(other->world.nnodes, 2u);
}

// True when the server has closed `fd`: a read reaches its end (EOF or a reset) after whatever
// the server sent before.
bool ClosedByServer(int fd) {
  char buf[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) continue;
    if (n == 0) return true;
    if (errno == EINTR) continue;
    return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

// A raw connection that has read the server's Challenge.
struct RawPeer {
  UniqueFd fd;
  std::string nonce;
};

StatusOr<RawPeer> Connect(uint16_t port) {
  const Steady::time_point deadline = Steady::now() + seconds(5);
  LS_ASSIGN_OR_RETURN(UniqueFd fd, net::ConnectTcp({"127.0.0.1", port}, deadline));
  FrameDecoder decoder;
  for (;;) {
    LS_ASSIGN_OR_RETURN(std::optional<Frame> frame, decoder.Next());
    if (frame) {
      LS_ASSIGN_OR_RETURN(protocol::Challenge ch, protocol::Decode<protocol::Challenge>(frame->body));
      return RawPeer{std::move(fd), ch.nonce};
    }
    pollfd p{fd.get(), POLLIN, 0};
    if (::poll(&p, 1, net::MillisUntil(deadline)) <= 0) return DeadlineExceededError("challenge");
    std::string bytes;
    LS_ASSIGN_OR_RETURN(net::ReadResult r, net::ReadAvailable(fd.get(), &bytes));
    if (r.eof) return UnavailableError("closed before the challenge");
    decoder.Append(bytes);
  }
}

// Sends `first` (a frame the server refuses), then streams zeros on the same connection until the
// server closes it or 1 GB went (an RDZV-FIGURE line says how much it took, and when); fails the
// test as soon as the RSS grew by kMemoryBound (before the fix, the server buffered all of it).
void StreamAfterRefusal(uint16_t port, std::string first) {
  StatusOr<RawPeer> peer = Connect(port);
  EXPECT_TRUE(peer.ok()) << peer.status();
  if (!peer.ok()) return;
  const int fd = peer->fd.get();
  EXPECT_TRUE(net::WriteAll(fd, first, Steady::now() + seconds(2)).ok());
  const size_t base = RssBytes();
  const std::string chunk(1u << 20, '\0');
  size_t sent = 0;
  const Steady::time_point start = Steady::now();
  const Steady::time_point deadline = start + seconds(30);
  while (sent < (size_t{1} << 30) && Steady::now() < deadline) {
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, 100);
    const ssize_t n = ::send(fd, chunk.data(), chunk.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) continue;
    if (n < 0) {  // the server closed the connection (EPIPE, ECONNRESET)
      std::printf("RDZV-FIGURE refused peer: streamed %zu KiB before the close, %lld ms after "
                  "the refusal; RSS grew %zd KiB\n",
                  sent >> 10,
                  static_cast<long long>(std::chrono::duration_cast<milliseconds>(
                                             Steady::now() - start)
                                             .count()),
                  (static_cast<ssize_t>(RssBytes()) - static_cast<ssize_t>(base)) / 1024);
      return;
    }
    sent += static_cast<size_t>(n);
    if (RssBytes() > base + kMemoryBound) {
      ADD_FAILURE() << "the server buffered a refused peer's stream: RSS grew by "
                    << ((RssBytes() - base) >> 20) << " MiB after " << (sent >> 20) << " MiB";
      return;
    }
  }
  ADD_FAILURE() << "the server never closed the refused connection (" << (sent >> 20)
                << " MiB streamed)";
}

TEST(RendezvousServerBoundsTest, ARefusedControlRequestThenAGigabyteIsNotBuffered) {
  std::unique_ptr<RendezvousServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const protocol::ControlRequest bad{protocol::kProtocolVersion, kRunId,
                                     protocol::ControlKind::kStatus, "",
                                     std::string(protocol::kMacBytes, 'x')};
  StreamAfterRefusal(server->port(), Encode(bad));
  ExpectRealLaunchersFormTheRound(server->port());
}

TEST(RendezvousServerBoundsTest, AJoinWithABadMacThenAGigabyteIsNotBuffered) {
  std::unique_ptr<RendezvousServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  protocol::Join join;
  join.run_id = kRunId;
  join.key_attempt = kAttempt;
  join.attempt = kAttempt;
  join.node_rank = 1;
  join.mac = std::string(protocol::kMacBytes, 'x');
  StreamAfterRefusal(server->port(), Encode(join));
  ExpectRealLaunchersFormTheRound(server->port());
}

// 2,000 connections that never authenticate but send a byte of a frame header now and then
// (before the fix every byte extended the idle timeout, and nothing capped their number): the
// server closes every one of them within the auth timeout and the real launchers join meanwhile.
TEST(RendezvousServerBoundsTest, TwoThousandTricklingConnectionsAreClosedAndTheRoundForms) {
  net::RaiseFileLimit();
  std::unique_ptr<RendezvousServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  const size_t base = RssBytes();
  constexpr int kIdle = 2000;
  std::vector<UniqueFd> idle;
  idle.reserve(kIdle);
  for (int i = 0; i < kIdle; ++i) {
    StatusOr<UniqueFd> fd =
        net::ConnectTcp({"127.0.0.1", server->port()}, Steady::now() + seconds(5));
    ASSERT_TRUE(fd.ok()) << "connection " << i << ": " << fd.status();
    idle.push_back(std::move(*fd));
  }
  std::thread trickle([&] {
    // A frame header announcing 64 bytes, one byte per round, never completed.
    const char header[] = {0, 0, 0, 64, 2, 0, 0, 0};
    for (size_t b = 0; b < sizeof(header); ++b) {
      for (UniqueFd& fd : idle) (void)::send(fd.get(), &header[b], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(milliseconds(300));
    }
  });
  ExpectRealLaunchersFormTheRound(server->port());
  trickle.join();
  // By now (8 x 300 ms after they connected, the auth timeout being 1 s) the server has closed
  // every one: a read sees its end (EOF or a reset), after the Challenge it sent.
  int closed = 0;
  for (UniqueFd& fd : idle) closed += ClosedByServer(fd.get()) ? 1 : 0;
  EXPECT_EQ(closed, kIdle);
  EXPECT_LT(RssBytes(), base + kMemoryBound);
  std::printf("RDZV-FIGURE %d trickling connections: %d closed within 2.4 s; RSS grew %zd KiB\n",
              kIdle, closed,
              (static_cast<ssize_t>(RssBytes()) - static_cast<ssize_t>(base)) / 1024);
}

// Sends a member's Join on a raw connection (the MAC right) and reads nothing more.
StatusOr<UniqueFd> JoinRaw(uint16_t port, protocol::Join join) {
  LS_ASSIGN_OR_RETURN(RawPeer peer, Connect(port));
  join.run_id = kRunId;
  join.key_attempt = kAttempt;
  join.attempt = kAttempt;
  join.mac = protocol::JoinMac(protocol::AttemptKey(kToken, kAttempt), peer.nonce, kRunId,
                               kAttempt, join.node_rank);
  LS_RETURN_IF_ERROR(net::WriteAll(peer.fd.get(), Encode(join), Steady::now() + seconds(5)));
  return std::move(peer.fd);
}

// The server's only large output is the peer table (one entry per member: its role and host, up
// to 8 KiB each). 1,100 members whose entries are that large make a 17.2 MiB table; the member
// that asked for it reads nothing. Past kMaxPendingOutBytes (16 MiB) of output it has not taken,
// the server closes it like a lost member: the round aborts and the job's real launchers are told
// why. Without the bound the server keeps the table queued for as long as that member stays
// connected (its peer timeout here is 120 s, past the test's 30-s waits): seen with
// kMaxPendingOutBytes = SIZE_MAX, "no Abort within 30 s". The close took up to 4.9 s under load.
// The RSS growth is a figure, not asserted: the 1,100 joins the server holds and the table's
// transient copies (members, assignment, encoded table, the member's frame) dominate it.
TEST(RendezvousServerBoundsTest, AMemberThatDoesNotReadAPeerTablePast16MiBIsClosed) {
  net::RaiseFileLimit();
  constexpr uint32_t kFillers = 1100;
  constexpr uint32_t kHostile = kFillers + 2;  // the last node rank: the others get World first
  ServerOptions opt;
  opt.run_id = kRunId;
  opt.token = kToken;
  opt.attempt = kAttempt;
  opt.min_nodes = opt.max_nodes = kHostile + 1;
  opt.peer_timeout = seconds(120);
  opt.heartbeat_interval = milliseconds(100);
  StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(opt, 0);
  ASSERT_TRUE(server.ok()) << server.status();
  (*server)->Start();
  const uint16_t port = (*server)->port();
  const size_t base = RssBytes();

  // The job's own launchers 0 and 1 join first and wait for the round.
  StatusOr<JoinResult> real[2] = {UnavailableError("not run"), UnavailableError("not run")};
  std::vector<std::thread> launchers;
  for (uint32_t rank : {0u, 1u}) {
    launchers.emplace_back([&, rank] {
      ClientOptions c = Launcher(port, rank);
      c.peer_timeout = seconds(120);
      c.deadline = Steady::now() + seconds(60);
      real[rank] = JoinRound(c);
    });
  }
  std::vector<UniqueFd> fillers;
  fillers.reserve(kFillers);
  protocol::Join big;
  big.role = std::string(protocol::kMaxStringBytes, 'r');
  big.host = std::string(protocol::kMaxStringBytes, 'h');
  for (uint32_t i = 0; i < kFillers; ++i) {
    big.node_rank = 2 + i;
    StatusOr<UniqueFd> fd = JoinRaw(port, big);
    ASSERT_TRUE(fd.ok()) << "filler " << i << ": " << fd.status();
    fillers.push_back(std::move(*fd));
  }
  protocol::Join hostile = big;
  hostile.node_rank = kHostile;
  hostile.want_peer_table = true;
  const Steady::time_point joined = Steady::now();
  StatusOr<UniqueFd> reader_of_nothing = JoinRaw(port, hostile);
  ASSERT_TRUE(reader_of_nothing.ok()) << reader_of_nothing.status();
  for (std::thread& t : launchers) t.join();

  // Both real launchers got the world of every member, then an Abort naming the hostile member.
  for (StatusOr<JoinResult>& r : real) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->world.nnodes, kHostile + 1);
    std::optional<protocol::Abort> abort;
    const Steady::time_point deadline = Steady::now() + seconds(30);
    while (!abort && Steady::now() < deadline) {
      pollfd p{r->session->fd(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      for (const ServerEvent& e : r->session->OnReadable()) {
        if (e.kind == ServerEvent::Kind::kAbort) abort = e.abort;
      }
    }
    ASSERT_TRUE(abort.has_value()) << "no Abort within 30 s: the non-reading member was kept";
    EXPECT_EQ(abort->node_rank, static_cast<int32_t>(kHostile));
    EXPECT_NE(abort->message.find("does not read"), std::string::npos) << abort->message;
  }
  const int fd = reader_of_nothing->get();
  bool closed = false;
  while (!closed && Steady::now() < joined + seconds(30)) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, 100);
    closed = ClosedByServer(fd);
  }
  EXPECT_TRUE(closed) << "the member that reads nothing is still connected";
  const ssize_t grew = static_cast<ssize_t>(RssBytes()) - static_cast<ssize_t>(base);
  std::printf("RDZV-FIGURE a member that reads nothing, peer table of %u members of 16 KiB: "
              "closed %lld ms after its join; RSS grew %zd KiB, the members' joins and the "
              "table's copies included\n",
              kHostile + 1,
              static_cast<long long>(
                  std::chrono::duration_cast<milliseconds>(Steady::now() - joined).count()),
              grew / 1024);
}

// A launcher of the previous attempt (its pod force-deleted on a lost node, its process still
// running) joins with that attempt's key, whatever round its in-place restarts brought it to.
TEST(RendezvousServerAttemptTest, ALauncherOfAnotherAttemptIsRefusedAndTheRoundForms) {
  std::unique_ptr<RendezvousServer> server = StartServer();
  ASSERT_NE(server, nullptr);
  for (uint32_t other : {kAttempt - 1, kAttempt + 1}) {
    StatusOr<JoinResult> stale = JoinRound(Launcher(server->port(), 1, other));
    ASSERT_FALSE(stale.ok());
    EXPECT_EQ(stale.status().code(), StatusCode::kPermissionDenied) << stale.status();
    EXPECT_NE(stale.status().message().find(other < kAttempt ? "stale" : "ahead"),
              std::string::npos)
        << stale.status();
  }
  // One that claims this attempt but holds the previous attempt's key fails the MAC.
  StatusOr<RawPeer> peer = Connect(server->port());
  ASSERT_TRUE(peer.ok()) << peer.status();
  protocol::Join forged;
  forged.run_id = kRunId;
  forged.key_attempt = kAttempt;
  forged.attempt = kAttempt;
  forged.node_rank = 1;
  forged.mac = protocol::JoinMac(protocol::AttemptKey(kToken, kAttempt - 1), peer->nonce, kRunId,
                                 kAttempt, 1);
  ASSERT_TRUE(net::WriteAll(peer->fd.get(), Encode(forged), Steady::now() + seconds(2)).ok());
  FrameDecoder decoder;
  std::optional<Frame> answer;
  while (!answer) {
    pollfd p{peer->fd.get(), POLLIN, 0};
    ASSERT_GT(::poll(&p, 1, 5000), 0) << "no answer to a forged join";
    std::string bytes;
    ASSERT_TRUE(net::ReadAvailable(peer->fd.get(), &bytes).ok());
    decoder.Append(bytes);
    StatusOr<std::optional<Frame>> f = decoder.Next();
    ASSERT_TRUE(f.ok()) << f.status();
    answer = std::move(*f);
  }
  ASSERT_EQ(answer->type, static_cast<uint8_t>(MessageType::kRefuse));
  StatusOr<protocol::Refuse> refuse = protocol::Decode<protocol::Refuse>(answer->body);
  ASSERT_TRUE(refuse.ok());
  EXPECT_EQ(refuse->code, protocol::RefuseCode::kBadToken) << refuse->reason;
  ExpectRealLaunchersFormTheRound(server->port());
}

TEST(RendezvousServerAuthTest, NoTokenIsRefusedUnlessInsecureNoAuth) {
  ServerOptions opt;
  opt.run_id = kRunId;
  StatusOr<std::unique_ptr<RendezvousServer>> refused = RendezvousServer::Listen(opt, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("--insecure-no-auth"), std::string::npos);
  opt.insecure_no_auth = true;
  EXPECT_TRUE(RendezvousServer::Listen(opt, 0).ok());
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
