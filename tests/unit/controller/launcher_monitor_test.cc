// LauncherMonitor (operator/controller/launcher_monitor.h) with a scripted LauncherControl and
// a scripted transport for the job's Secret: which launcher it asks with which token, what it
// remembers per pod, when it tells the controller, and when it fetches the token again. The
// protocol itself runs against real launchers in tests/launcher/core/control_test.cc, the whole
// loop against the real apiserver in tests/integration/inplace.
#include "operator/controller/launcher_monitor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "tests/testing/fake_transport.h"

namespace lockstep::controller {
namespace {

using std::chrono::seconds;

constexpr char kSecretPath[] = "/api/v1/namespaces/ns/secrets/job-rdzv";

// Answers from a script, in order; records what it was asked.
class ScriptedControl final : public LauncherControl {
 public:
  struct Call {
    protocol::ControlTarget target;
    bool restart = false;
    std::string reason;
  };
  void PushStatus(StatusOr<protocol::ControlStatus> s) {
    std::lock_guard<std::mutex> lock(mu_);
    statuses_.push_back(std::move(s));
  }
  void PushAck(StatusOr<protocol::ControlAck> a) {
    std::lock_guard<std::mutex> lock(mu_);
    acks_.push_back(std::move(a));
  }
  StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget& target) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({target, false, ""});
    if (statuses_.empty()) return UnavailableError("no answer scripted");
    StatusOr<protocol::ControlStatus> s = std::move(statuses_.front());
    statuses_.pop_front();
    return s;
  }
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget& target,
                                         const std::string& reason) override {
    std::lock_guard<std::mutex> lock(mu_);
    calls_.push_back({target, true, reason});
    if (acks_.empty()) return UnavailableError("no answer scripted");
    StatusOr<protocol::ControlAck> a = std::move(acks_.front());
    acks_.pop_front();
    return a;
  }
  ProbeAnswer Probe(const std::string& host, uint16_t port) override {
    std::lock_guard<std::mutex> lock(mu_);
    probes_.push_back(host + ":" + std::to_string(port));
    return probe_answer_;
  }
  void SetProbeAnswer(ProbeAnswer a) {
    std::lock_guard<std::mutex> lock(mu_);
    probe_answer_ = std::move(a);
  }
  std::vector<std::string> probes() const {
    std::lock_guard<std::mutex> lock(mu_);
    return probes_;
  }
  std::vector<Call> calls() const {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  mutable std::mutex mu_;
  std::deque<StatusOr<protocol::ControlStatus>> statuses_;
  std::deque<StatusOr<protocol::ControlAck>> acks_;
  std::vector<Call> calls_;
  std::vector<std::string> probes_;
  ProbeAnswer probe_answer_;
};

protocol::ControlStatus Round(uint32_t round, bool running, uint32_t failures = 0) {
  protocol::ControlStatus s;
  s.round = round;
  s.complete = running;
  s.running = running;
  s.members = 2;
  s.failure_restarts = failures;
  return s;
}

LauncherJob Target(const std::string& pod_uid = "pod-uid-0", uint32_t attempt = 0) {
  return {"ns/job", "ns", "job", "uid-1", pod_uid, "10.0.0.7", attempt};
}

class LauncherMonitorTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  void SetUp() override {
    transport_->SetHandler([](const kube::Request& r) -> StatusOr<kube::Response> {
      if (r.method == "GET" && r.path == kSecretPath) {
        return Json(200, {{"data", {{"token", "c2VjcmV0LXRva2Vu"}}}});  // secret-token
      }
      return ApiStatus(404, "NotFound");
    });
    monitor_.SetChangedHandler([this](const std::string& key) {
      std::lock_guard<std::mutex> lock(mu_);
      changed_.push_back(key);
      cv_.notify_all();
    });
    monitor_.Start();
  }

  // Waits until the changed handler has run `n` times in all.
  bool WaitForChanges(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, seconds(10), [&] { return changed_.size() >= n; });
  }
  size_t SecretReads() const { return transport_->RequestsTo("GET", kSecretPath).size(); }

  // Declared before the monitor, whose thread calls the handler until it is destroyed.
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> changed_;
  ScriptedControl* control_ = new ScriptedControl;  // owned by monitor_
  LauncherMonitor monitor_{client_, std::unique_ptr<LauncherControl>(control_)};
};

TEST_F(LauncherMonitorTest, AsksWorkerZeroWithTheJobsTokenAndKeepsTheAnswerForThatPod) {
  control_->PushStatus(Round(0, true));
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  const std::vector<ScriptedControl::Call> calls = control_->calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].target.host, "10.0.0.7");
  EXPECT_EQ(calls[0].target.port, 29400);
  EXPECT_EQ(calls[0].target.run_id, "uid-1");
  EXPECT_EQ(calls[0].target.token, "secret-token");
  EXPECT_EQ(calls[0].target.attempt, 0u);

  std::optional<LauncherObservation> seen = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(seen.has_value());
  EXPECT_TRUE(seen->answered);
  EXPECT_TRUE(seen->status.running);
  // A new attempt's worker-0 is another pod: nothing is known about its server yet, and it is
  // asked with that attempt's key (protocol/control.h), which the old launchers refuse.
  EXPECT_FALSE(monitor_.Latest("ns/job", "pod-uid-of-attempt-1").has_value());
  monitor_.Poll(Target("pod-uid-of-attempt-1", 1));
  ASSERT_TRUE(WaitForChanges(2));
  ASSERT_EQ(control_->calls().size(), 2u);
  EXPECT_EQ(control_->calls()[1].target.attempt, 1u);
  monitor_.Forget("ns/job");
  EXPECT_FALSE(monitor_.Latest("ns/job", "pod-uid-0").has_value());
}

// The controller is told when an answer would change the plan, not at every poll; the token is
// read from the Secret once per job.
TEST_F(LauncherMonitorTest, TellsTheControllerOnlyOfChangesAndReadsTheTokenOnce) {
  control_->PushStatus(Round(0, true));
  control_->PushStatus(Round(0, true));
  control_->PushStatus(Round(1, true, 1));
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  monitor_.Poll(Target());  // the same answer
  // A job's requests run in order, one at a time, so once the third poll's change is reported
  // the second was handled; a poll is only queued again after the queued one was taken.
  while (control_->calls().size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  monitor_.Poll(Target());  // round 1 after an in-place restart
  ASSERT_TRUE(WaitForChanges(2));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(changed_, (std::vector<std::string>{"ns/job", "ns/job"}));
  }
  EXPECT_EQ(monitor_.Latest("ns/job", "pod-uid-0")->status.failure_restarts, 1u);
  EXPECT_EQ(SecretReads(), 1u);
}

TEST_F(LauncherMonitorTest, ARefusedMacFetchesTheTokenAgain) {
  control_->PushStatus(PermissionDeniedError("control: authentication failed (wrong token)"));
  control_->PushStatus(Round(0, true));
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  std::optional<LauncherObservation> refused = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(refused.has_value());
  EXPECT_FALSE(refused->answered);
  EXPECT_NE(refused->error.find("authentication failed"), std::string::npos);
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(2));
  EXPECT_EQ(SecretReads(), 2u);
}

TEST_F(LauncherMonitorTest, ARestartIsPendingUntilAnsweredAndForgetsTheOldRound) {
  control_->PushStatus(Round(0, true));
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  control_->PushAck(protocol::ControlAck{true, 0, ""});
  monitor_.Restart(Target(), "restart-1", "restart requested (lockstep.dev/restart-request=1)");
  // At once: the old round's status is gone and the request waits for its answer.
  std::optional<LauncherObservation> pending = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(pending.has_value());
  EXPECT_FALSE(pending->answered);
  ASSERT_TRUE(pending->restart.has_value());
  EXPECT_EQ(pending->restart->request, "restart-1");
  ASSERT_TRUE(WaitForChanges(2));
  std::optional<LauncherObservation> answered = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(answered->restart.has_value());
  EXPECT_TRUE(answered->restart->answered);
  EXPECT_TRUE(answered->restart->ack.accepted);
  const std::vector<ScriptedControl::Call> calls = control_->calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_TRUE(calls[1].restart);
  EXPECT_EQ(calls[1].reason, "restart requested (lockstep.dev/restart-request=1)");
}

TEST_F(LauncherMonitorTest, ASecretWithoutATokenIsAnAnswerlessPoll) {
  transport_->SetHandler([](const kube::Request&) -> StatusOr<kube::Response> {
    return Json(200, {{"data", {{"other", "eA=="}}}});
  });
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  std::optional<LauncherObservation> seen = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(seen.has_value());
  EXPECT_FALSE(seen->answered);
  EXPECT_NE(seen->error.find("no token"), std::string::npos) << seen->error;
  EXPECT_TRUE(control_->calls().empty());  // never asked without a token
}

// Peer evidence (docs/failures.md): the lost members a server reported stay known after the
// server stops answering (node 0's launcher exits when a loss leaves it no in-place restart),
// and a probe of a reported pod lands beside them, for the same worker-0 pod only.
TEST_F(LauncherMonitorTest, ALostReportOutlivesTheServerAndAProbeLandsBesideIt) {
  protocol::ControlStatus lost = Round(1, false);
  protocol::LostMember m;
  m.node_rank = 1;
  m.pod_name = "job-worker-1";
  m.lost_unix_ms = 42;
  lost.lost = {m};
  control_->PushStatus(lost);
  control_->PushStatus(UnavailableError("connection refused"));
  control_->SetProbeAnswer({ProbeResult::kUnreachable, "timed out"});
  monitor_.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));
  monitor_.Probe(Target(), "job-worker-1", "10.0.0.8", 42);
  ASSERT_TRUE(WaitForChanges(2));
  while (control_->calls().size() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  monitor_.Poll(Target());  // the server is gone
  ASSERT_TRUE(WaitForChanges(3));
  std::optional<LauncherObservation> seen = monitor_.Latest("ns/job", "pod-uid-0");
  ASSERT_TRUE(seen.has_value());
  EXPECT_FALSE(seen->answered);
  ASSERT_EQ(seen->status.lost.size(), 1u);
  EXPECT_EQ(seen->status.lost[0].pod_name, "job-worker-1");
  ASSERT_EQ(seen->probes.count("job-worker-1"), 1u);
  EXPECT_EQ(seen->probes.at("job-worker-1").report_lost_unix_ms, 42u);
  EXPECT_EQ(seen->probes.at("job-worker-1").answer.result, ProbeResult::kUnreachable);
  EXPECT_EQ(control_->probes(), std::vector<std::string>{"10.0.0.8:29400"});
  // Another attempt's worker-0 knows nothing of it.
  EXPECT_FALSE(monitor_.Latest("ns/job", "pod-uid-of-attempt-1").has_value());
}

// A worker-0 whose answer changes at every call (a hostile one: issue 44), and how often it was
// asked.
class ChangingControl final : public LauncherControl {
 public:
  StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget&) override {
    return Round(calls_.fetch_add(1) + 1, true);
  }
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget&,
                                         const std::string&) override {
    return UnavailableError("not scripted");
  }
  ProbeAnswer Probe(const std::string&, uint16_t) override { return {}; }
  uint32_t calls() const { return calls_.load(); }

 private:
  std::atomic<uint32_t> calls_{0};
};

// Each changed answer wakes a pass, and the pass of a running gang asks for a poll (here: the
// changed handler asks at once). Without the once-per-interval rule (launcher_monitor.h "Once
// per interval") that is a loop as fast as the control answers; with it, the watch's cadence.
TEST_F(LauncherMonitorTest, AnAnswerThatChangesEveryPollIsAskedOncePerWatchInterval) {
  constexpr std::chrono::milliseconds kInterval{100};
  constexpr std::chrono::milliseconds kRun{1000};
  auto* control = new ChangingControl;
  LauncherMonitor monitor(client_, std::unique_ptr<LauncherControl>(control));
  monitor.SetWatchInterval(kInterval);
  monitor.SetChangedHandler([&monitor](const std::string&) { monitor.Poll(Target()); });
  monitor.Start();
  const auto start = std::chrono::steady_clock::now();
  monitor.Poll(Target());
  std::this_thread::sleep_for(kRun);
  monitor.Stop();
  const auto ran = std::chrono::steady_clock::now() - start;
  // One per interval, the first poll, and one that may slip in as the watch's answer lands.
  EXPECT_LE(static_cast<int64_t>(control->calls()), ran / kInterval + 2)
      << "in " << ran.count() << " ns";
  EXPECT_GE(control->calls(), 2u) << "the watch kept asking";
}

// Which polls the rule defers, on a fake clock (the watch, an hour apart, never asks here): a
// poll right after a changed answer waits for the watch; one after an unchanged answer (a pass
// woken by a pod or the job, e.g. a pod that failed and a spare to promote) or after a Restart
// is asked at once.
TEST_F(LauncherMonitorTest, OnlyAPollRightAfterAChangedAnswerWaitsForTheWatch) {
  auto* control = new ScriptedControl;
  LauncherMonitor monitor(client_, std::unique_ptr<LauncherControl>(control), clock_);
  monitor.SetWatchInterval(std::chrono::hours(1));
  monitor.SetChangedHandler([this](const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    changed_.push_back(key);
    cv_.notify_all();
  });
  monitor.Start();
  auto wait_for_calls = [&](size_t n) {
    const auto start = std::chrono::steady_clock::now();
    while (control->calls().size() < n && std::chrono::steady_clock::now() - start < seconds(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return control->calls().size() >= n;
  };
  control->PushStatus(Round(0, true));
  control->PushStatus(Round(0, true));
  control->PushStatus(Round(1, true, 1));
  control->PushAck(protocol::ControlAck{true, 0, ""});
  control->PushStatus(Round(1, false));
  monitor.Poll(Target());
  ASSERT_TRUE(WaitForChanges(1));  // round 0: changed
  monitor.Poll(Target());          // waits for the watch
  clock_.Advance(std::chrono::hours(1));
  monitor.Poll(Target());  // the change is an interval old: asked
  ASSERT_TRUE(wait_for_calls(2));
  monitor.Poll(Target());          // after an unchanged answer: asked at once
  ASSERT_TRUE(WaitForChanges(2));  // round 1
  monitor.Poll(Target());          // waits for the watch
  monitor.Restart(Target(), "restart-1", "restart requested (test)");
  ASSERT_TRUE(WaitForChanges(3));
  monitor.Poll(Target());  // after a Restart: asked at once
  ASSERT_TRUE(WaitForChanges(4));
  monitor.Stop();
  std::vector<bool> restarts;
  for (const ScriptedControl::Call& c : control->calls()) restarts.push_back(c.restart);
  EXPECT_EQ(restarts, (std::vector<bool>{false, false, false, true, false}));
}

}  // namespace
}  // namespace lockstep::controller
