// Control requests against real launcher processes (protocol/control.h): Status
// reports rounds, restarts and the last failure; Restart restarts the gang in place without
// charging --max-restarts; a request with the wrong token, or keyed for another attempt's
// launchers, is refused and the round goes on.
#include <signal.h>

#include <functional>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "harness.h"
#include "protocol/control_client.h"
#include "protocol/termination.h"

namespace lockstep::launcher::testing {
namespace {

using protocol::ControlKind;
using protocol::ControlStatus;
using std::chrono::milliseconds;
using std::chrono::seconds;
using Steady = std::chrono::steady_clock;

constexpr char kRunId[] = "control-test";
constexpr char kToken[] = "control-token";

class ControlTest : public ::testing::Test {
 protected:
  void StartGang(int nnodes, int nproc, std::vector<std::string> child_args,
                 std::vector<std::string> extra = {}) {
    for (int i = 0; i < nnodes; ++i) {
      LauncherSpec s;
      s.args = {"--nnodes", std::to_string(nnodes), "--node-rank", std::to_string(i),
                "--nproc-per-node", std::to_string(nproc), "--rdzv-endpoint",
                "127.0.0.1:" + std::to_string(port_), "--rdzv-id", kRunId,
                "--advertise-addr", "127.0.0.1", "--join-timeout", "30", "--grace-period", "2"};
      s.args.insert(s.args.end(), extra.begin(), extra.end());
      s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path()};
      s.command.insert(s.command.end(), child_args.begin(), child_args.end());
      s.env = {{"LOCKSTEP_TOKEN", kToken},
               {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
      launchers_.push_back(std::make_unique<LauncherProcess>(
          s, dir_.path() + "/launcher." + std::to_string(i) + ".log"));
    }
  }
  std::string Logs() const {
    std::string out;
    for (const auto& l : launchers_) out += l->Log();
    return out;
  }
  protocol::ControlTarget Target(std::string token = kToken) const {
    return {"127.0.0.1", static_cast<uint16_t>(port_), kRunId, std::move(token)};
  }
  StatusOr<ControlStatus> GetStatus() const { return GetControlStatus(Target()); }
  // Polls Status until `done` holds or `timeout` passes; returns the last answer.
  StatusOr<ControlStatus> WaitForStatus(const std::function<bool(const ControlStatus&)>& done,
                                        seconds timeout = seconds(20)) const {
    return WaitForControlStatus(Target(), done, timeout, milliseconds(100));
  }

  TempDir dir_;
  int port_ = FreePort();
  std::vector<std::unique_ptr<LauncherProcess>> launchers_;
};

TEST_F(ControlTest, RequestedRestartIsNotChargedAndTheChildrenSeeTheNextRound) {
  StartGang(2, 2, {"--forever"}, {"--max-restarts", "0"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 4, seconds(30))) << Logs();
  StatusOr<ControlStatus> before = WaitForStatus([](const ControlStatus& s) { return s.running; });
  ASSERT_TRUE(before.ok()) << before.status() << Logs();
  EXPECT_EQ(before->round, 0u);
  EXPECT_TRUE(before->complete);
  EXPECT_TRUE(before->running) << Logs();
  EXPECT_EQ(before->members, 2u);
  EXPECT_EQ(before->failure_restarts, 0u);
  EXPECT_EQ(before->requested_restarts, 0u);
  EXPECT_FALSE(before->last_failure.has_value());

  StatusOr<protocol::ControlReply> reply =
      protocol::ControlCall(Target(), ControlKind::kRestart, "unit test", seconds(1));
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_TRUE(reply->ack.has_value());
  EXPECT_TRUE(reply->ack->accepted) << reply->ack->message;
  EXPECT_EQ(reply->ack->round, 0u);

  // --max-restarts 0, yet the gang restarts: a requested restart costs no budget.
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.1.", 4, seconds(30))) << Logs();
  for (const auto& env : ReadEnvFiles(dir_.path(), "1")) {
    EXPECT_EQ(env.at("LOCKSTEP_RESTART_COUNT"), "1");
    EXPECT_EQ(env.at("LOCKSTEP_ATTEMPT"), "1");
  }
  for (int rank = 0; rank < 4; ++rank) {
    EXPECT_TRUE(FileExists(dir_.path() + "/term.0." + std::to_string(rank))) << rank;
  }
  StatusOr<ControlStatus> after =
      WaitForStatus([](const ControlStatus& s) { return s.round == 1 && s.running; });
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->round, 1u) << Logs();
  EXPECT_TRUE(after->running);
  EXPECT_EQ(after->requested_restarts, 1u);
  EXPECT_EQ(after->failure_restarts, 0u);
  for (const auto& l : launchers_) EXPECT_FALSE(l->Wait(milliseconds(10)).has_value()) << Logs();
  EXPECT_NE(Logs().find("restarting in place on request"), std::string::npos);
}

TEST_F(ControlTest, WrongTokenOrAttemptIsRefusedAndTheRoundContinues) {
  StartGang(2, 1, {"--forever"}, {"--max-restarts", "3"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 2, seconds(30))) << Logs();
  for (ControlKind kind : {ControlKind::kStatus, ControlKind::kRestart}) {
    StatusOr<protocol::ControlReply> r =
        protocol::ControlCall(Target("wrong-token"), kind, "intruder", seconds(1));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
    EXPECT_NE(r.status().message().find("authentication failed"), std::string::npos);
  }
  // Another run's id is refused too, even with the right token.
  protocol::ControlTarget other = Target();
  other.run_id = "another-run";
  StatusOr<protocol::ControlReply> r =
      protocol::ControlCall(other, ControlKind::kRestart, "intruder", seconds(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
  // And a request for the next attempt's launchers (the right token and run, keyed by attempt
  // 1): what the operator sends to a new worker-0 whose address these attempt-0 launchers still
  // hold. Answered, their rounds and restarts would be taken for the new attempt's.
  for (ControlKind kind : {ControlKind::kStatus, ControlKind::kRestart}) {
    protocol::ControlTarget next = Target();
    next.attempt = 1;
    r = protocol::ControlCall(next, kind, "the next attempt", seconds(1));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
    EXPECT_NE(r.status().message().find("another attempt"), std::string::npos) << r.status();
  }

  StatusOr<ControlStatus> st = WaitForStatus([](const ControlStatus& s) { return s.running; });
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->round, 0u);
  EXPECT_TRUE(st->running);
  EXPECT_EQ(st->requested_restarts, 0u);
  EXPECT_FALSE(FileExists(dir_.path() + "/env.1.0")) << Logs();
  EXPECT_FALSE(FileExists(dir_.path() + "/term.0.0")) << Logs();
  for (const auto& l : launchers_) EXPECT_FALSE(l->Wait(milliseconds(10)).has_value()) << Logs();
}

TEST_F(ControlTest, StatusNamesTheFailedRankOfAnInPlaceRestart) {
  // Rank 1 (node 0, local rank 1) fails in the first round only; the gang restarts in place.
  StartGang(2, 2, {"--forever", "--fail-rank", "1", "--fail-code", "3", "--fail-restart", "0"},
            {"--max-restarts", "2"});
  StatusOr<ControlStatus> st =
      WaitForStatus([](const ControlStatus& s) { return s.round == 1 && s.running; }, seconds(30));
  ASSERT_TRUE(st.ok()) << st.status() << Logs();
  ASSERT_EQ(st->round, 1u) << Logs();
  EXPECT_EQ(st->failure_restarts, 1u);
  EXPECT_EQ(st->requested_restarts, 0u);
  ASSERT_TRUE(st->last_failure.has_value());
  const protocol::RoundFailure& f = *st->last_failure;
  EXPECT_EQ(f.round, 0u);
  EXPECT_EQ(f.node_rank, 0);
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.local_rank, 1);
  EXPECT_EQ(f.exit_code, 3);
  EXPECT_EQ(f.reason, protocol::FailureReason::kExit);
  std::string tail;
  for (const std::string& line : f.stderr_tail) tail += line + "\n";
  EXPECT_NE(tail.find("failing with code 3 on purpose"), std::string::npos) << tail;
}

TEST_F(ControlTest, RestartWhileGatheringIsDeclined) {
  // Only one of two launchers: the round never completes, so there is nothing to restart.
  LauncherSpec s;
  s.args = {"--nnodes", "2", "--node-rank", "0", "--nproc-per-node", "1", "--rdzv-endpoint",
            "127.0.0.1:" + std::to_string(port_), "--rdzv-id", kRunId, "--advertise-addr",
            "127.0.0.1", "--join-timeout", "30"};
  s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path(), "--forever"};
  s.env = {{"LOCKSTEP_TOKEN", kToken}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
  launchers_.push_back(std::make_unique<LauncherProcess>(s, dir_.path() + "/gather.log"));
  StatusOr<ControlStatus> st = WaitForStatus([](const ControlStatus&) { return true; });
  ASSERT_TRUE(st.ok()) << st.status() << Logs();
  EXPECT_FALSE(st->complete);
  EXPECT_FALSE(st->running);
  StatusOr<protocol::ControlReply> r =
      protocol::ControlCall(Target(), ControlKind::kRestart, "too early", seconds(1));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->ack.has_value());
  EXPECT_FALSE(r->ack->accepted);
  EXPECT_NE(r->ack->message.find("gathering"), std::string::npos) << r->ack->message;
}

}  // namespace
// Progress (docs/launcher.md "Progress"): every child gets LOCKSTEP_PROGRESS_FILE, one per pod
// in a directory of its launcher's; node 0's Status answer carries the latest report global
// rank 0 appended (test_child --progress-total), the malformed first line counted once; the
// directory goes with the launcher.
TEST_F(ControlTest, StatusCarriesTheProgressRankZeroAppended) {
  StartGang(2, 2, {"--forever", "--progress-total", "1000000"});
  ASSERT_TRUE(WaitForFiles(dir_.path(), "env.0.", 4, seconds(30))) << Logs();
  std::set<std::string> files;
  for (const auto& env : ReadEnvFiles(dir_.path(), "0")) {
    ASSERT_EQ(env.count("LOCKSTEP_PROGRESS_FILE"), 1u);
    files.insert(env.at("LOCKSTEP_PROGRESS_FILE"));
  }
  EXPECT_EQ(files.size(), 2u) << "one file per pod";
  StatusOr<ControlStatus> first =
      WaitForStatus([](const ControlStatus& s) { return s.progress && s.progress->step > 0; });
  ASSERT_TRUE(first.ok()) << first.status() << Logs();
  ASSERT_TRUE(first->progress.has_value()) << Logs();
  EXPECT_EQ(first->progress->total_steps, 1000000u);
  EXPECT_EQ(first->progress->samples_per_second_milli, 64000u);
  EXPECT_EQ(first->progress->malformed_lines, 1u);
  const uint64_t step = first->progress->step;
  StatusOr<ControlStatus> later = WaitForStatus(
      [step](const ControlStatus& s) { return s.progress && s.progress->step > step; });
  ASSERT_TRUE(later.ok() && later->progress) << Logs();
  EXPECT_EQ(later->progress->malformed_lines, 1u) << "a malformed line is counted once";
  // A launcher stopped by a signal removes its directory on the way out, and node 0 leaves the
  // trainers' last report in its termination message (the operator's final step).
  for (const auto& l : launchers_) l->Signal(SIGTERM);
  for (const auto& l : launchers_) EXPECT_TRUE(l->Wait(seconds(10)).has_value()) << Logs();
  for (const std::string& f : files) {
    EXPECT_FALSE(FileExists(f.substr(0, f.rfind('/')))) << f << " left behind";
  }
  std::optional<protocol::TerminationMessage> node0 = protocol::DecodeTermination(
      ReadWholeFile(dir_.path() + "/launcher.0.log.termination"));
  ASSERT_TRUE(node0.has_value()) << Logs();
  ASSERT_TRUE(node0->progress.has_value());
  EXPECT_GE(node0->progress->step, later->progress->step);
  EXPECT_EQ(node0->progress->total_steps, 1000000u);
}

}  // namespace lockstep::launcher::testing
