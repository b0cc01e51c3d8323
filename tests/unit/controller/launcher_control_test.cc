// The operator's side of the control requests against a hostile worker-0 (issue 44 item 1):
// the job's bounds (LauncherBounds), the control client refusing an answer beyond them over a
// real loopback connection (RdzvLauncherControl), and the refusal reported as an event that is
// deduplicated and rate-limited per job (RefusalReportingControl, RefusalNotices).
#include "operator/controller/launcher_control.h"

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/socket.h>

#include <thread>
#include <vector>

#include "common/net.h"
#include "protocol/messages.h"
#include "tests/testing/fake_clock.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using protocol::ControlBounds;
using protocol::ControlStatus;
using std::chrono::minutes;
using std::chrono::seconds;

TEST(LauncherBoundsTest, EveryRoleAtItsLargestSizeAndTheSpares) {
  CachedJob job = testing::Job(4);
  EXPECT_EQ(LauncherBounds(job.job), (ControlBounds{4, 0}));
  job.job.spec.failure_policy.spare_replicas = 2;
  EXPECT_EQ(LauncherBounds(job.job), (ControlBounds{4, 2}));
  job.job.spec.roles.push_back(api::Role{"ps", 3, std::nullopt, job.job.spec.pod_template});
  EXPECT_EQ(LauncherBounds(job.job), (ControlBounds{7, 2}));
  job.job.spec.elastic = api::ElasticPolicy{2, 8};
  EXPECT_EQ(LauncherBounds(job.job).node_ranks, 11u);
  job.job.status.replicas = 12;  // an attempt started before the spec shrank
  EXPECT_EQ(LauncherBounds(job.job).node_ranks, 15u);
  job.job.spec.replicas = -5;  // never read as a huge unsigned
  job.job.spec.elastic.reset();
  job.job.status.replicas = 0;
  job.job.spec.failure_policy.spare_replicas = -1;
  EXPECT_EQ(LauncherBounds(job.job), (ControlBounds{3, 0}));
}

TEST(LauncherControlTest, RefusedAnswersAreTheMalformedAndTheOutOfBounds) {
  EXPECT_TRUE(IsRefusedAnswer(DataLossError("x")));
  EXPECT_TRUE(IsRefusedAnswer(OutOfRangeError("x")));
  EXPECT_FALSE(IsRefusedAnswer(UnavailableError("x")));
  EXPECT_FALSE(IsRefusedAnswer(DeadlineExceededError("x")));
  EXPECT_FALSE(IsRefusedAnswer(PermissionDeniedError("refused: bad token")));
}

// A worker-0 on 127.0.0.1 that sends a Challenge, reads the request, then sends `answer`.
class HostileServer {
 public:
  explicit HostileServer(std::string answer) {
    StatusOr<UniqueFd> fd = net::ListenTcp(0);
    EXPECT_TRUE(fd.ok()) << fd.status();
    listener_ = std::move(*fd);
    port_ = *net::LocalPort(listener_.get());
    thread_ = std::thread([this, answer = std::move(answer)] { Serve(answer); });
  }
  ~HostileServer() { thread_.join(); }
  uint16_t port() const { return port_; }

 private:
  void Serve(const std::string& answer) {
    pollfd p{listener_.get(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return;
    UniqueFd conn(::accept(listener_.get(), nullptr, nullptr));
    if (conn.get() < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + seconds(5);
    protocol::Challenge challenge;
    challenge.nonce.assign(protocol::kNonceBytes, 'n');
    if (!net::WriteAll(conn.get(), protocol::Encode(challenge), deadline).ok()) return;
    pollfd c{conn.get(), POLLIN, 0};
    if (::poll(&c, 1, 5000) != 1) return;  // the request; its bytes do not matter here
    std::string ignored;
    (void)net::ReadAvailable(conn.get(), &ignored);
    (void)net::WriteAll(conn.get(), answer, deadline);
    // Until the client closes: it must not wait for bytes a refused frame announces.
    if (::poll(&c, 1, 5000) == 1) (void)net::ReadAvailable(conn.get(), &ignored);
  }
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

protocol::ControlTarget Target(uint16_t port) {
  protocol::ControlTarget t;
  t.host = "127.0.0.1";
  t.port = port;
  t.run_id = "uid-1";
  t.token = "token";
  t.bounds = ControlBounds{2, 0};
  t.job_key = "ns/job";
  return t;
}

ControlStatus Honest() {
  ControlStatus s;
  s.round = 1;
  s.members = 2;
  s.lost = {protocol::LostMember{1, 1, "job-worker-1", "uid", "node-1", 1, 2, true, "closed"}};
  return s;
}

TEST(LauncherControlTest, AnAnswerWithinTheJobIsRead) {
  HostileServer server(protocol::Encode(Honest()));
  RdzvLauncherControl control(seconds(5));
  StatusOr<ControlStatus> status = control.GetStatus(Target(server.port()));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(*status, Honest());
}

TEST(LauncherControlTest, MoreMembersThanTheJobHasIsRefusedWhole) {
  ControlStatus s = Honest();
  s.lost.push_back(protocol::LostMember{1, 2, "job-worker-2", "uid", "node-2", 1, 2, true, "x"});
  HostileServer server(protocol::Encode(s));
  RdzvLauncherControl control(seconds(5));
  StatusOr<ControlStatus> status = control.GetStatus(Target(server.port()));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), StatusCode::kOutOfRange) << status.status();
  EXPECT_NE(status.status().message().find("lost node rank 2"), std::string::npos);
}

// The frame's header announces 4 MiB: refused as soon as it arrives (a deadline would mean the
// client waited for the body), never buffered.
TEST(LauncherControlTest, AFrameLongerThanTheJobCanBeSentIsRefusedAtItsHeader) {
  std::string header;
  header += '\x00';
  header += '\x40';
  header += '\x00';
  header += '\x00';
  header += static_cast<char>(protocol::MessageType::kControlStatus);
  HostileServer server(header);
  RdzvLauncherControl control(seconds(5));
  StatusOr<ControlStatus> status = control.GetStatus(Target(server.port()));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.status().code(), StatusCode::kOutOfRange) << status.status();
}

// Answers `script` in turn.
class ScriptedStatus final : public LauncherControl {
 public:
  explicit ScriptedStatus(std::vector<StatusOr<ControlStatus>> script)
      : script_(std::move(script)) {}
  StatusOr<ControlStatus> GetStatus(const protocol::ControlTarget&) override {
    return script_.at(next_++ % script_.size());
  }
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget&,
                                         const std::string&) override {
    return protocol::ControlAck{true, 1, ""};
  }
  ProbeAnswer Probe(const std::string&, uint16_t) override { return {}; }

 private:
  std::vector<StatusOr<ControlStatus>> script_;
  size_t next_ = 0;
};

struct Recorded {
  kube::InvolvedObject job;
  std::string reason;
  std::string message;
};

TEST(RefusalReportingControlTest, ARefusalIsAnEventOnTheJobOncePerMessageAndWindow) {
  lockstep::testing::FakeClock clock;
  std::vector<Recorded> events;
  RefusalReportingControl control(
      std::make_unique<ScriptedStatus>(std::vector<StatusOr<ControlStatus>>{
          OutOfRangeError("lost node rank 7, the job allows 2"), Honest(),
          UnavailableError("no route"), DeadlineExceededError("silent")}),
      [&](const kube::InvolvedObject& job, const std::string& reason, const std::string& m) {
        events.push_back({job, reason, m});
      },
      clock);
  const protocol::ControlTarget target = Target(1);
  for (int poll = 0; poll < 40; ++poll) {  // 80 s of 2-s polls: the same refusal every 4th
    StatusOr<ControlStatus> s = control.GetStatus(target);
    EXPECT_EQ(s.ok(), poll % 4 == 1);  // passed through unchanged
    clock.Advance(seconds(2));
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "LauncherAnswerRefused");
  EXPECT_EQ(events[0].job.kind, "TrainingJob");
  EXPECT_EQ(events[0].job.namespace_, "ns");
  EXPECT_EQ(events[0].job.name, "job");
  EXPECT_EQ(events[0].job.uid, "uid-1");
  EXPECT_NE(events[0].message.find("lost node rank 7"), std::string::npos) << events[0].message;
  clock.Advance(kRefusalWindow);
  (void)control.GetStatus(target);
  EXPECT_EQ(events.size(), 2u);  // again after the window
}

TEST(RefusalNoticesTest, AnAnswerThatChangesEveryPollCostsAtMostTheBurstPerWindow) {
  lockstep::testing::FakeClock clock;
  RefusalNotices notices;
  int reported = 0;
  for (int poll = 0; poll < 300; ++poll) {  // 10 min of 2-s polls, a new message each
    reported += notices.ShouldReport("ns/hostile", "lost " + std::to_string(poll), clock.Now());
    clock.Advance(seconds(2));
  }
  EXPECT_EQ(reported, static_cast<int>(kRefusalBurst));
  // Per job: another job's refusal is reported in the same window.
  EXPECT_TRUE(notices.ShouldReport("ns/other", "lost 1", clock.Now()));
  clock.Advance(minutes(10));
  EXPECT_TRUE(notices.ShouldReport("ns/hostile", "lost 1", clock.Now()));
}

TEST(RefusalNoticesTest, HoldsAtMostTheCapOfJobs) {
  lockstep::testing::FakeClock clock;
  RefusalNotices notices;
  for (size_t i = 0; i < kMaxRefusalJobs + 100; ++i) {
    EXPECT_TRUE(notices.ShouldReport("ns/job-" + std::to_string(i), "x", clock.Now()));
  }
  EXPECT_LE(notices.jobs(), kMaxRefusalJobs);
  clock.Advance(kRefusalWindow);
  EXPECT_TRUE(notices.ShouldReport("ns/late", "x", clock.Now()));
  EXPECT_LE(notices.jobs(), kMaxRefusalJobs);
}

}  // namespace
}  // namespace lockstep::controller
