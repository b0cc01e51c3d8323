// The rendezvous server's record of the members it lost (launcher/rendezvous/lost_members.h),
// first as the pure list, then through a real server on loopback: a member whose connection
// closes and a member that falls silent are both reported in Status, with their pod and node,
// after the round they were lost from was aborted.
#include "launcher/rendezvous/lost_members.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "launcher/rendezvous/client.h"
#include "launcher/rendezvous/server.h"
#include "protocol/control_client.h"

namespace lockstep::launcher::rendezvous {
namespace {

using protocol::LostMember;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

LostMember Lost(uint32_t round, uint32_t node_rank, std::string why = "silent") {
  LostMember m;
  m.round = round;
  m.node_rank = node_rank;
  m.pod_name = "job-worker-" + std::to_string(node_rank);
  m.why = std::move(why);
  return m;
}

TEST(LostMembersTest, KeepsTheNewestRoundOnlyOnePerNodeRankSorted) {
  LostMembers lost(4);
  lost.Record(Lost(2, 3));
  lost.Record(Lost(2, 1));
  ASSERT_EQ(lost.List().size(), 2u);
  EXPECT_EQ(lost.List()[0].node_rank, 1u);
  EXPECT_EQ(lost.List()[1].node_rank, 3u);
  lost.Record(Lost(2, 3, "closed"));  // the same rank again: replaced, not added
  ASSERT_EQ(lost.List().size(), 2u);
  EXPECT_EQ(lost.List()[1].why, "closed");
  lost.Record(Lost(1, 0));  // an older round's loss never displaces the newest
  EXPECT_EQ(lost.List().size(), 2u);
  lost.Record(Lost(3, 2));  // a newer round replaces the list
  ASSERT_EQ(lost.List().size(), 1u);
  EXPECT_EQ(lost.List()[0].round, 3u);
  EXPECT_EQ(lost.List()[0].node_rank, 2u);
}

TEST(LostMembersTest, IsBoundedByMaxEntries) {
  LostMembers lost(2);
  for (uint32_t r = 0; r < 10; ++r) lost.Record(Lost(5, r));
  EXPECT_EQ(lost.List().size(), 2u);
}

constexpr char kRunId[] = "run";
constexpr char kToken[] = "job-token";
constexpr uint32_t kAttempt = 2;

ClientOptions Member(uint16_t port, uint32_t node_rank) {
  ClientOptions c;
  c.endpoint = {"127.0.0.1", port};
  c.run_id = kRunId;
  c.token = kToken;
  c.key_attempt = kAttempt;
  c.attempt = kAttempt;
  c.node_rank = node_rank;
  c.host = "127.0.0.1";
  c.pod_name = "job-worker-" + std::to_string(node_rank);
  c.node_name = "node-" + std::to_string(node_rank);
  c.pod_uid = "uid-" + std::to_string(node_rank);
  c.heartbeat_interval = milliseconds(100);
  c.peer_timeout = seconds(1);
  c.deadline = Steady::now() + seconds(20);
  return c;
}

StatusOr<protocol::ControlStatus> AskStatus(uint16_t port) {
  LS_ASSIGN_OR_RETURN(protocol::ControlReply reply,
                      protocol::ControlCall({"127.0.0.1", port, kRunId, kToken, kAttempt},
                                            protocol::ControlKind::kStatus, "", seconds(2)));
  if (!reply.status) return DataLossError("no status");
  return *reply.status;
}

uint64_t UnixMsNow() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

// Three members form round 2. Node 2's connection closes: the round aborts, and Status, now
// about round 3, still names node 2 (round 2, disconnected, its pod and node).
std::unique_ptr<RendezvousServer> StartServer(uint32_t nodes) {
  ServerOptions opt;
  opt.run_id = kRunId;
  opt.token = kToken;
  opt.attempt = kAttempt;
  opt.min_nodes = opt.max_nodes = nodes;
  opt.peer_timeout = seconds(1);
  opt.heartbeat_interval = milliseconds(100);
  StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(opt, 0);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  (*server)->Start();
  return std::move(*server);
}

std::vector<StatusOr<JoinResult>> JoinAll(uint16_t port, uint32_t nodes) {
  std::vector<StatusOr<JoinResult>> joined;
  for (uint32_t r = 0; r < nodes; ++r) joined.emplace_back(UnavailableError("not run"));
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < nodes; ++r) {
    threads.emplace_back([&, r] { joined[r] = JoinRound(Member(port, r)); });
  }
  for (std::thread& t : threads) t.join();
  return joined;
}

// Polls Status until it reports a lost member (5 s at most).
protocol::ControlStatus StatusWithALoss(uint16_t port) {
  protocol::ControlStatus last;
  const Steady::time_point until = Steady::now() + seconds(5);
  while (Steady::now() < until) {
    StatusOr<protocol::ControlStatus> st = AskStatus(port);
    EXPECT_TRUE(st.ok()) << st.status();
    if (!st.ok()) break;
    last = *st;
    if (!last.lost.empty()) break;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return last;
}

TEST(LostMembersTest, AClosedMemberIsReportedAfterTheAbort) {
  std::unique_ptr<RendezvousServer> server = StartServer(3);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::vector<StatusOr<JoinResult>> joined = JoinAll(port, 3);
  for (const auto& j : joined) ASSERT_TRUE(j.ok()) << j.status();
  StatusOr<protocol::ControlStatus> first = AskStatus(port);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->lost.empty());
  EXPECT_EQ(first->running_since_unix_ms, 0u) << "no member reported Started yet";
  // Every member's Started: the round runs from the last one's (version 9, for goodput).
  const uint64_t before_started = UnixMsNow();
  for (auto& j : joined) ASSERT_TRUE(j->session->SendStarted().ok());
  StatusOr<protocol::ControlStatus> running = AskStatus(port);
  for (int i = 0; i < 250 && running.ok() && !running->running; ++i) {
    std::this_thread::sleep_for(milliseconds(20));
    running = AskStatus(port);
  }
  ASSERT_TRUE(running.ok() && running->running) << running.status();
  EXPECT_GE(running->running_since_unix_ms, before_started);
  EXPECT_LE(running->running_since_unix_ms, UnixMsNow());

  const uint64_t before_close = UnixMsNow();
  joined[2]->session.reset();  // node 2's launcher is gone: its connection closes
  const protocol::ControlStatus st = StatusWithALoss(port);
  ASSERT_EQ(st.lost.size(), 1u);
  const LostMember& closed = st.lost[0];
  EXPECT_EQ(closed.round, kAttempt);
  EXPECT_EQ(closed.node_rank, 2u);
  EXPECT_EQ(closed.pod_name, "job-worker-2");
  EXPECT_EQ(closed.node_name, "node-2");
  EXPECT_EQ(closed.pod_uid, "uid-2");
  EXPECT_TRUE(closed.disconnected);
  EXPECT_LE(closed.last_heard_unix_ms, closed.lost_unix_ms);
  EXPECT_GE(closed.lost_unix_ms + 50, before_close);
  EXPECT_EQ(st.round, kAttempt + 1);  // the abort happened; the report survived it
  // The failure's evidence is the close itself; the next round does not run yet.
  ASSERT_TRUE(st.last_failure.has_value());
  EXPECT_EQ(st.last_failure->failed_unix_ms, closed.lost_unix_ms);
  EXPECT_EQ(st.running_since_unix_ms, 0u);
}

// Two members form round 2; node 1 stays connected but never sends a heartbeat: after the peer
// timeout it is reported silent (not disconnected), last heard about a peer timeout before the
// server declared it lost.
TEST(LostMembersTest, ASilentMemberIsReportedAsSilent) {
  std::unique_ptr<RendezvousServer> server = StartServer(2);
  ASSERT_NE(server, nullptr);
  const uint16_t port = server->port();
  std::vector<StatusOr<JoinResult>> joined = JoinAll(port, 2);
  for (const auto& j : joined) ASSERT_TRUE(j.ok()) << j.status();
  std::atomic<bool> done{false};
  std::thread beats([&] {  // node 0 keeps its session alive
    while (!done.load()) {
      (void)joined[0]->session->SendHeartbeat();
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  const protocol::ControlStatus st = StatusWithALoss(port);
  done = true;
  beats.join();
  ASSERT_EQ(st.lost.size(), 1u);
  const LostMember& silent = st.lost[0];
  EXPECT_EQ(silent.node_rank, 1u);
  EXPECT_EQ(silent.pod_name, "job-worker-1");
  EXPECT_EQ(silent.node_name, "node-1");
  EXPECT_FALSE(silent.disconnected);
  EXPECT_EQ(silent.round, kAttempt);
  // Silent for the peer timeout (1 s) before it was declared lost, give or take a tick.
  EXPECT_GE(silent.lost_unix_ms - silent.last_heard_unix_ms, 900u);
  EXPECT_LE(silent.lost_unix_ms - silent.last_heard_unix_ms, 2000u);
  // A silent member failed after its last bytes, not when the server gave up on it.
  ASSERT_TRUE(st.last_failure.has_value());
  EXPECT_EQ(st.last_failure->failed_unix_ms, silent.last_heard_unix_ms);
}

}  // namespace
}  // namespace lockstep::launcher::rendezvous
