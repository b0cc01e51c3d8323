// SIGSTOP the leading operator for 30 s while it is busy, then SIGCONT it. The standby must take
// over within the lease and do the work; the old leader, fenced by its lease, must write nothing
// after waking (it exits: a leader that lost its lease starts afresh). Who wrote what, and when,
// comes from the apiserver's audit log: each operator has an identity of its own.
#include <gtest/gtest.h>

#include <thread>

#include "tests/chaos/chaos_env.h"

namespace lockstep::chaos {
namespace {

constexpr auto kLease = seconds(15);  // the operator's default lease duration
constexpr auto kPause = seconds(30);

double Seconds(WallClock::duration d) { return std::chrono::duration<double>(d).count(); }

// The last successful Lease write of `events` (a renewal) before `before`.
std::optional<WallClock::time_point> LastRenewal(const std::vector<AuditEvent>& events,
                                                 WallClock::time_point before) {
  std::optional<WallClock::time_point> last;
  for (const AuditEvent& e : events) {
    if (e.resource == "leases" && e.code / 100 == 2 && e.received < before) last = e.received;
  }
  return last;
}

class LeaderPauseChaosTest : public ChaosTest {};

TEST_F(LeaderPauseChaosTest, AStoppedLeaderIsReplacedWithinTheLeaseAndWritesNothingAfterIt) {
  constexpr int kJobs = 20, kReplicas = 4;  // one GPU a pod: 80 GPUs
  ASSERT_NO_FATAL_FAILURE(Prepare("chaos-pause", kJobs * kReplicas / 8 + 1));

  const std::string user_a = "chaos-a-" + kube::testing::RandomSuffix();
  const std::string user_b = "chaos-b-" + kube::testing::RandomSuffix();
  StatusOr<std::string> kc_a = AuditedKubeconfig(user_a);
  StatusOr<std::string> kc_b = AuditedKubeconfig(user_b);
  ASSERT_TRUE(kc_a.ok() && kc_b.ok()) << kc_a.status() << kc_b.status();
  // Eight workers at 20 writes a second: when the leader is stopped right after its first pods,
  // most of its writes are still to be sent, some of them in flight between its threads.
  auto args = [&](const std::string& kubeconfig) {
    return std::vector<std::string>{"--gang-scheduler=true",
                                    "--leader-elect",
                                    "--leader-election-namespace=" + ns(),
                                    "--kubeconfig=" + kubeconfig,
                                    "--workers=8",
                                    "--qps=20",
                                    "--burst=10"};
  };
  OperatorProcess a({ns()}, args(*kc_a));
  OperatorProcess b({ns()}, args(*kc_b));
  ASSERT_TRUE(a.Start().ok());
  ASSERT_TRUE(
      kube::testing::WaitFor([&] { return LeaderStatus(a.metrics_port()) == 1; }, seconds(60)))
      << a.log_path();
  ASSERT_TRUE(b.Start().ok());
  ASSERT_TRUE(b.WaitReady(seconds(60))) << b.log_path();

  for (int i = 0; i < kJobs; ++i) {
    ASSERT_TRUE(client()
                    .Create(kube::resources::TrainingJobs(), ns(),
                            ChaosJob("job-" + std::to_string(i), kReplicas, pool()))
                    .ok());
  }
  // Stopped in the middle of its work: some pods created, most still to come.
  int created = 0;
  ASSERT_TRUE(kube::testing::WaitFor(
      [&] {
        created = 0;
        for (const Version& v : history().Pods()) {
          created += v.type == kube::WatchEventType::kAdded ? 1 : 0;
        }
        return created >= kReplicas;
      },
      seconds(60), milliseconds(5)))
      << a.log_path();
  ASSERT_LT(created, kJobs * kReplicas / 2) << "the leader finished too soon to be stopped mid-way";
  const WallClock::time_point stopped = WallClock::now();
  a.Signal(SIGSTOP);
  std::this_thread::sleep_for(kPause);
  const WallClock::time_point resumed = WallClock::now();
  a.Signal(SIGCONT);
  EXPECT_TRUE(a.WaitExit(seconds(30))) << "the old leader did not exit; log " << a.log_path();
  EXPECT_EQ(a.last_exit(), 1) << "a leader that lost its lease exits 1; log " << a.log_path();
  EXPECT_EQ(LeaderStatus(b.metrics_port()), 1) << b.log_path();

  // The standby does all the work: every job runs whole.
  for (int i = 0; i < kJobs; ++i) {
    const std::string job = "job-" + std::to_string(i);
    EXPECT_TRUE(kube::testing::WaitFor(
        [&] { return !RunningAttempt(JobPods(client(), ns(), job), 0, kReplicas).empty(); },
        seconds(120), milliseconds(250)))
        << job << "; log " << b.log_path();
  }

  const std::vector<AuditEvent> writes_a = AuditedWrites(*kc_a, user_a);
  const std::vector<AuditEvent> writes_b = AuditedWrites(*kc_b, user_b);
  const std::optional<WallClock::time_point> renewed = LastRenewal(writes_a, resumed);
  ASSERT_TRUE(renewed.has_value()) << "no lease renewal of the old leader in the audit log";
  std::optional<WallClock::time_point> acquired;   // the standby's first successful Lease write
  std::optional<WallClock::time_point> first_act;  // its first other write after that
  for (const AuditEvent& e : writes_b) {
    if (!acquired && e.resource == "leases" && e.code / 100 == 2) acquired = e.received;
    if (acquired && !first_act && e.resource != "leases" && e.resource != "events") {
      first_act = e.received;
    }
  }
  ASSERT_TRUE(acquired.has_value() && first_act.has_value()) << "the standby never took over";
  // Within the lease: taken when the old record expires, give or take a poll on a loaded host.
  EXPECT_LE(*acquired - *renewed, kLease + seconds(2))
      << "taken " << Seconds(*acquired - *renewed) << " s after the last renewal";
  EXPECT_GE(*acquired - *renewed, kLease - seconds(2)) << "taken before the lease expired";
  // Nothing decided by the old leader after it was stopped. A request already past its fence
  // (the transport's last check before sending, RestOptions::write_fence) when SIGSTOP came
  // lands when the process runs again: no check inside the process can recall it, which is why
  // every such write carries what lets the apiserver judge it (a status patch its
  // resourceVersion, a pod create the gang's fixed pod name). Those land within a second of the
  // resume, at most a gang's pods per worker; anything later, or any other write, was decided
  // after waking, when the expired lease must have stopped it. Seen under load: a status patch 17 ms
  // after the resume (2026-12-07, the chaos tier beside the kubelet tier).
  constexpr auto kInFlight = seconds(1);
  constexpr int kWorkers = 8;
  int late = 0, in_flight = 0;
  std::string in_flight_text;
  for (const AuditEvent& e : writes_a) {
    if (e.received <= stopped + kInFlight) continue;
    const std::string what = e.verb + " " + e.resource +
                             (e.subresource.empty() ? "" : "/" + e.subresource) + " " + e.name;
    const bool judged_by_the_apiserver =
        (e.verb == "create" && e.resource == "pods") ||
        (e.verb == "patch" && e.resource == "trainingjobs" && e.subresource == "status");
    if (e.received <= resumed + kInFlight && judged_by_the_apiserver) {
      ++in_flight;
      in_flight_text += " " + what + " (" + std::to_string(e.code) + ")";
      continue;
    }
    ++late;
    ADD_FAILURE() << "the old leader wrote " << what << " (HTTP " << e.code << ") "
                  << Seconds(e.received - resumed) << " s after it was resumed";
  }
  EXPECT_LE(in_flight, kWorkers * kReplicas)
      << "more writes landed at the resume than the old leader's "
         "workers can have in flight:"
      << in_flight_text;
  CheckHistory();
  Figure("pause", "leader stopped " + std::to_string(kPause.count()) + " s with " +
                      std::to_string(created) + " of " + std::to_string(kJobs * kReplicas) +
                      " pods created (" + std::to_string(writes_a.size()) +
                      " writes before); standby took the lease " +
                      std::to_string(Seconds(*acquired - *renewed)).substr(0, 4) +
                      " s after the last renewal, acted " +
                      std::to_string(Seconds(*first_act - *acquired)).substr(0, 4) +
                      " s later; old leader's writes after the stop: " + std::to_string(late) +
                      " decided after it, " + std::to_string(in_flight) + " in flight" +
                      in_flight_text + ", exit " + std::to_string(a.last_exit()));
  b.Kill(SIGTERM);
  EXPECT_EQ(b.last_exit(), 0) << b.log_path();
}

}  // namespace
}  // namespace lockstep::chaos
