// A launcher of the previous attempt cannot join the next attempt's rounds (issue 18, hole 6).
// The operator's attempts and the launchers' in-place rounds share one counter: a launcher of
// attempt 0 that restarted in place once rejoins round 1, the number attempt 1's launchers start
// at. When its pod was force-deleted on a lost node while its process still runs, and attempt 1's
// node 0 (a new pod of the same name) listens at the same endpoint, it used to be let in. Joins are
// now made with the key of the attempt the operator created the pod for (protocol/auth.h).
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>

#include "common/net.h"
#include "harness.h"
#include "protocol/messages.h"

namespace lockstep::launcher::testing {
namespace {

using protocol::Frame;
using protocol::MessageType;
using Steady = std::chrono::steady_clock;
using std::chrono::seconds;

constexpr char kToken[] = "attempt-token";

LauncherSpec Spec(const TempDir& dir, int port, int node_rank, int attempt,
                  std::vector<std::string> child_args) {
  LauncherSpec s;
  s.args = {"--nnodes", "2", "--node-rank", std::to_string(node_rank), "--rdzv-endpoint",
            "127.0.0.1:" + std::to_string(port), "--rdzv-id", "attempt-run", "--advertise-addr",
            "127.0.0.1", "--attempt", std::to_string(attempt), "--max-restarts", "3",
            "--join-timeout", "60", "--grace-period", "1"};
  s.command = {LOCKSTEP_TEST_CHILD_BIN, dir.path()};
  s.command.insert(s.command.end(), child_args.begin(), child_args.end());
  s.env = {{"LOCKSTEP_TOKEN", kToken}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
  return s;
}

// The next frame of `type` from `fd` (others skipped), or nullopt at the deadline.
std::optional<Frame> AwaitFrame(int fd, protocol::FrameDecoder& decoder, MessageType type,
                                Steady::time_point deadline) {
  for (;;) {
    StatusOr<std::optional<Frame>> f = decoder.Next();
    if (!f.ok()) return std::nullopt;
    if (f->has_value()) {
      if ((*f)->type == static_cast<uint8_t>(type)) return std::move(**f);
      continue;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, net::MillisUntil(deadline)) <= 0) return std::nullopt;
    std::string bytes;
    StatusOr<net::ReadResult> r = net::ReadAvailable(fd, &bytes);
    if (!r.ok() || (r->eof && r->bytes == 0)) return std::nullopt;
    decoder.Append(bytes);
  }
}

// Attempt 0's node 0, played by the test: it gives the launcher at `port` a world of round 0,
// waits until its children run, then aborts the round (restartable, as a rank failing elsewhere
// in the old gang would) and goes away, so the launcher rejoins round 1 at the same endpoint.
void PlayOldNodeZero(UniqueFd listener) {
  const Steady::time_point deadline = Steady::now() + seconds(20);
  pollfd p{listener.get(), POLLIN, 0};
  ASSERT_GT(::poll(&p, 1, net::MillisUntil(deadline)), 0) << "the old gang's launcher never came";
  UniqueFd conn(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  ASSERT_TRUE(conn.valid());
  const int fd = conn.get();
  ASSERT_TRUE(net::WriteAll(fd, protocol::Encode(protocol::Challenge{
                                    protocol::kProtocolVersion,
                                    std::string(protocol::kNonceBytes, 'n')}),
                            deadline)
                  .ok());
  protocol::FrameDecoder decoder;
  ASSERT_TRUE(AwaitFrame(fd, decoder, MessageType::kJoin, deadline)) << "no join";
  const protocol::WorldMsg world{.attempt = 0, .group_rank = 1, .nnodes = 2, .world_size = 2,
                                 .first_rank = 1, .nproc = 1, .master_host = "127.0.0.1",
                                 .nccl_id = "", .role_first_rank = 1, .role_world_size = 2};
  ASSERT_TRUE(net::WriteAll(fd, protocol::Encode(world), deadline).ok());
  ASSERT_TRUE(AwaitFrame(fd, decoder, MessageType::kStarted, deadline)) << "children never ran";
  const protocol::Abort abort{.attempt = 0, .reason = protocol::FailureReason::kExit,
                              .node_rank = 0, .message = "rank 0 failed", .restartable = true};
  ASSERT_TRUE(net::WriteAll(fd, protocol::Encode(abort), deadline).ok());
  // Gone once the launcher has read the abort and closed its side (a close before could read as
  // a lost server instead).
  AwaitFrame(fd, decoder, MessageType::kControl, Steady::now() + seconds(5));
}

TEST(AttemptTest, ALauncherOfThePreviousAttemptCannotJoinTheNextAttemptsRound) {
  TempDir dir;
  const int port = FreePort();
  StatusOr<UniqueFd> listener = net::ListenTcp(static_cast<uint16_t>(port));
  ASSERT_TRUE(listener.ok()) << listener.status();
  std::vector<std::unique_ptr<LauncherProcess>> launchers;
  auto start = [&](const LauncherSpec& spec, const std::string& name) -> LauncherProcess& {
    launchers.push_back(std::make_unique<LauncherProcess>(spec, dir.path() + "/" + name + ".log"));
    return *launchers.back();
  };
  auto logs = [&] {
    std::string out;
    for (const auto& l : launchers) out += l->Log();
    return out;
  };
  LauncherProcess& stale = start(Spec(dir, port, 1, 0, {"--forever"}), "stale");
  PlayOldNodeZero(std::move(*listener));  // closes the old node 0's listener and connection
  ASSERT_FALSE(::testing::Test::HasFatalFailure()) << logs();

  // Attempt 1's node 0 listens where the old one did.
  LauncherProcess& node0 = start(Spec(dir, port, 0, 1, {"--sleep", "0.2"}), "node0");
  std::optional<int> code = stale.Wait(seconds(20));
  ASSERT_TRUE(code.has_value()) << "the old attempt's launcher was not refused\n" << logs();
  EXPECT_EQ(*code, 77) << stale.Log();
  EXPECT_NE(stale.Log().find("a launcher of attempt 0 is stale"), std::string::npos)
      << stale.Log();
  EXPECT_NE(stale.Log().find("world formed"), std::string::npos) << "it ran round 0 first";
  EXPECT_TRUE(ReadEnvFiles(dir.path(), "1").empty())
      << "no child may start in a round the old launcher joined\n" << logs();

  // Attempt 1's own node 1 completes the round, which started at 1 (in-place rounds go on from
  // there with the same key).
  LauncherProcess& node1 = start(Spec(dir, port, 1, 1, {"--sleep", "0.2"}), "node1");
  std::optional<int> c0 = node0.Wait(seconds(30));
  std::optional<int> c1 = node1.Wait(seconds(30));
  ASSERT_TRUE(c0 && c1) << logs();
  EXPECT_EQ(*c0, 0) << logs();
  EXPECT_EQ(*c1, 0) << logs();
  EXPECT_EQ(ReadEnvFiles(dir.path(), "1").size(), 2u) << logs();
}

}  // namespace
}  // namespace lockstep::launcher::testing
