// The operator against hostile worker-0s (issue 44 items 1 and 2, the acceptance's "hostile
// worker-0 test"), on the real kube-apiserver with the real operator binary: 30 jobs whose
// worker-0 is the tenant's code (worker0_fleet.h: the real control protocol, authenticated with
// each job's key) beside one healthy job with a hot spare, served by real lockstep-launcher
// processes (launcher_gang.h). The same 31 jobs run twice, each time under a freshly started
// operator:
//   honest:  the 30 worker-0s answer as node 0 of a running gang does, the same answer each poll;
//   hostile: 24 answer every poll differently at the protocol's maxima (a frame of kMaxFrameBytes,
//            answers beyond the job's size or the protocol's ranges, answers with every field at
//            the job's largest), 3 read the request and never answer, 3 never even send the
//            Challenge.
// In each run the operator polls every worker-0 (2P authenticated requests each), and halfway
// the pod serving the healthy job's node-rank 1 is killed: its standby spare takes the
// node-rank, which the operator must see within the usual bound.
// Checked: the operator's peak RSS (VmHWM) in the hostile run at most 1.2x the honest run's; the
// hostile run's CPU per reconcile pass (the operator's CPU time over the window / the passes
// controller_runtime_reconcile_time_seconds_count counted in it) within kCpuPerPassBoundMs; the
// healthy job's promotion in status within kPromotionBoundSeconds of the kill in both runs; the
// refusals reported as at most kRefusalBurst events per job. Figures are printed ("hostile
// worker-0:" lines; docs/reliability.md). Seen to fail with the control client's frame bound
// removed (peak RSS 264.6 MiB against 23.6 MiB).
//
// Measure tier (runs alone): about 60 s of 63 pods, 31 worker-0s and 6 launcher processes, and
// CPU and memory figures a neighbour's load would move. Node 0's launcher listens on port 29400
// of every address: RESOURCE_LOCK rdzv_port_29400, like tests/integration/peer_loss/.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "operator/api/children.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/launcher_monitor.h"
#include "operator/controller/peer_loss_log.h"
#include "operator/kube/base64.h"
#include "tests/integration/failures/failures_env.h"
#include "tests/integration/hostile/worker0_fleet.h"
#include "tests/integration/kube/test_env.h"
#include "tests/integration/peer_loss/launcher_gang.h"

namespace lockstep::failures::testing {
namespace {

using controller::testing::OperatorProcess;
using kube::testing::WaitFor;
using lockstep::testing::GangOptions;
using lockstep::testing::GangPod;
using lockstep::testing::HostileAnswer;
using lockstep::testing::LauncherGang;
using lockstep::testing::Worker0Fleet;
using lockstep::testing::Worker0Job;
using lockstep::testing::Worker0Kind;
using lockstep::testing::Worker0Mode;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr int kHostileJobs = 30;
constexpr int kReplicas = 2;
constexpr char kHealthy[] = "hw-healthy";
// Authenticated requests each worker-0 gets before the kill, and again after it (the watch asks
// each job every 2 s).
constexpr uint64_t kPollsPerHalf = 3;
constexpr double kRssBound = 1.2;
// CPU per reconcile pass in the hostile run: the operator's CPU time over the window (every
// thread: the monitor's requests, the informers, the status writes) over its passes. A pass of
// these jobs (2 pods) plans from one answer of at most MaxControlAnswerFrameBytes(2), about
// 20 KB, and writes one status patch of a few KB; with the answers changing on every poll there
// is about one pass per answer, so the figure carries the answer's read and judgment too. 10 ms
// is several times what was measured (1.5-2.3 ms on the 2-core host, beside two `yes` too), so a
// loaded host passes. It is the coarse check: with the frame bound removed the run spent 3.9 ms
// per pass, and it was the peak RSS that failed (264.6 MiB against 23.6 MiB). The honest run's
// passes are too few to divide by (its answers never change, so after the start-up passes the
// watch wakes no job): its CPU is printed per control request instead.
constexpr double kCpuPerPassBoundMs = 10;
// The healthy job's promotion, kill -> status.spares.promotions: the launchers see the
// connection close at once and promote the spare; the monitor's watch asks every 2 s
// (kWatchInterval), a request takes at most its 1 s deadline, then one pass writes status. 8 s
// leaves room for a loaded 2-core host (measured: 1.1-3.0 s).
constexpr double kPromotionBoundSeconds = 8;
// Control requests per job per watch interval (2 s) in the hostile run: the watch's one, and
// the few a pass woken by a pod or the job asks (launcher_monitor.h "Once per interval").
constexpr double kRequestsPerIntervalBound = 1.5;

std::string Token(kube::RestClient& client, const std::string& ns, const std::string& job) {
  StatusOr<json> secret = client.Get(kube::resources::Secrets(), ns, job + "-rdzv");
  if (!secret.ok()) return "";
  StatusOr<std::string> token = kube::Base64Decode((*secret)["data"]["token"].get<std::string>());
  return token.ok() ? *token : "";
}

// The operator's "a launcher reported a lost peer" lines in the log at `path`, by "job|verdict".
std::map<std::string, size_t> PeerLossLines(const std::string& path) {
  std::map<std::string, size_t> lines;
  std::ifstream in(path);
  std::string line;
  auto field = [&line](const std::string& key) {
    const size_t at = line.find(" " + key + "=");
    if (at == std::string::npos) return std::string();
    const size_t from = at + key.size() + 2;
    return line.substr(from, line.find(' ', from) - from);
  };
  while (std::getline(in, line)) {
    if (line.find("a launcher reported a lost peer") == std::string::npos) continue;
    ++lines[field("job") + "|" + field("verdict")];
  }
  return lines;
}

struct ProcFigures {
  double peak_rss_mib = 0;  // VmHWM
  double cpu_seconds = 0;   // utime + stime
};

ProcFigures ReadProc(pid_t pid) {
  ProcFigures f;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) f.peak_rss_mib = std::stod(line.substr(6)) / 1024;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
  std::istringstream rest(text.substr(text.rfind(')') + 2));
  std::vector<std::string> fields;
  for (std::string w; rest >> w;) fields.push_back(w);
  if (fields.size() > 12) {
    f.cpu_seconds = (std::stod(fields[11]) + std::stod(fields[12])) /
                    static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  return f;
}

struct RunFigures {
  double peak_rss_mib = 0;
  double cpu_seconds = 0;
  double passes = 0;
  double requests = 0;  // authenticated control requests the worker-0s got
  double window_seconds = 0;
  double promotion_seconds = -1;
  std::string log_path;  // the run's operator's log
  double cpu_ms_per_pass() const { return passes > 0 ? 1000 * cpu_seconds / passes : 0; }
  double cpu_ms_per_request() const { return requests > 0 ? 1000 * cpu_seconds / requests : 0; }
};

class HostileWorker0Test : public FailuresTest {
 protected:
  void TearDown() override {
    spare_.reset();
    gang_.reset();
    fleet_.reset();
    FailuresTest::TearDown();
  }

  static void RestartOperator() {
    op_->Kill(SIGTERM);
    op_ = std::make_unique<OperatorProcess>(
        std::vector<std::string>{ns()},
        std::vector<std::string>{
            "--gang-scheduler=true",
            "--node-lease-grace=" + std::to_string(lease_grace_seconds_) + "s"});
    ASSERT_TRUE(op_->Start().ok());
    ASSERT_TRUE(op_->WaitReady(seconds(30))) << op_->ready_answer();
  }

  json Pod(const std::string& name) {
    StatusOr<json> p = client().Get(kube::resources::Pods(), ns(), name);
    return p.ok() ? *p : json();
  }
  std::string PodIp(const std::string& name) {
    return Pod(name).value("/status/podIP"_json_pointer, std::string());
  }

  // Whether every worker-0 that talks in `mode` had at least `polls` authenticated requests.
  bool Polled(uint64_t polls) const {
    for (size_t i = 0; i < fleet_->size(); ++i) {
      if (fleet_->Requests(i) < polls) return false;
    }
    return true;
  }
  double Requests() const {
    double n = 0;
    for (size_t i = 0; i < fleet_->size(); ++i) n += static_cast<double>(fleet_->Requests(i));
    return n;
  }

  // Kills the healthy job's pod `gang_index` and returns the seconds until status shows
  // `promotions` promotions.
  double KillAndTimePromotion(size_t gang_index, int promotions) {
    const auto killed = Clock::now();
    EXPECT_TRUE(gang_->Kill(gang_index).ok());
    StatusOr<json> seen = WaitForJob(
        kHealthy,
        [&](const json& j) {
          return j.value("/status/spares/promotions"_json_pointer, 0) >= promotions;
        },
        seconds(30));
    EXPECT_TRUE(seen.ok()) << seen.status() << "\n" << gang_->Logs();
    return seen.ok() ? SecondsBetween(killed, Clock::now()) : 1e9;
  }

  // One run under a fresh operator: the worker-0s in `mode`, the healthy job's pod `kill` killed
  // halfway.
  RunFigures Run(Worker0Mode mode, size_t kill, int promotions) {
    RunFigures r;
    fleet_->SetMode(mode);
    RestartOperator();
    const pid_t pid = op_->pid();
    // The window starts once the start-up passes (one per job at least) are done, so that both
    // runs divide the same kind of work.
    const std::string passes = "controller_runtime_reconcile_time_seconds_count";
    EXPECT_TRUE(WaitFor([&] { return Metric(passes) >= kHostileJobs + 1; }, seconds(30)));
    const auto start = Clock::now();
    const ProcFigures before = ReadProc(pid);
    const double passes_before = Metric(passes);
    const double requests_before = Requests();
    EXPECT_TRUE(WaitFor([&] { return Polled(kPollsPerHalf); }, seconds(60)))
        << "the operator did not ask every worker-0 " << kPollsPerHalf << " times";
    r.promotion_seconds = KillAndTimePromotion(kill, promotions);
    EXPECT_TRUE(WaitFor([&] { return Polled(2 * kPollsPerHalf); }, seconds(60)))
        << "the operator did not ask every worker-0 " << 2 * kPollsPerHalf << " times";
    const ProcFigures after = ReadProc(pid);
    r.passes = Metric(passes) - passes_before;
    r.requests = Requests() - requests_before;
    r.peak_rss_mib = after.peak_rss_mib;
    r.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
    r.window_seconds = SecondsBetween(start, Clock::now());
    r.log_path = op_->log_path();
    EXPECT_TRUE(op_->Running()) << "the operator died; log: " << op_->log_path();
    return r;
  }

  // A launcher for the replacement spare the operator created after the first promotion
  // (<job>-spare-1), standing by at node 0 as the gang's spare launcher does.
  void StartReplacementSpare(const std::string& uid, const std::string& token) {
    const std::string name = std::string(kHealthy) + "-spare-1";
    json pod;
    ASSERT_TRUE(WaitFor(
        [&] {
          pod = Pod(name);
          return pod.value("/status/phase"_json_pointer, std::string()) == "Running";
        },
        seconds(30)))
        << "no replacement spare ran";
    launcher::testing::LauncherSpec s;
    s.args = {"--nnodes",
              std::to_string(kReplicas),
              "--nproc-per-node",
              "2",
              "--rdzv-endpoint",
              gang_->pod(0).ip + ":" + std::to_string(api::kRdzvPort),
              "--rdzv-id",
              uid,
              "--advertise-addr",
              "127.0.0.1",
              "--join-timeout",
              "120",
              "--grace-period",
              "2",
              "--pod-name",
              name,
              "--node-name",
              pod["spec"].value("nodeName", ""),
              "--pod-uid",
              pod["metadata"].value("uid", ""),
              "--spare",
              "--role-index",
              "1"};
    s.command = {LOCKSTEP_TEST_CHILD_BIN, dir_.path(), "--heartbeat-every", "0.1", "--forever"};
    s.env = {{"LOCKSTEP_TOKEN", token}, {"LOCKSTEP_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}};
    spare_ = std::make_unique<launcher::testing::LauncherProcess>(s, dir_.path() + "/spare1.log");
  }

  launcher::testing::TempDir dir_;
  std::unique_ptr<Worker0Fleet> fleet_;
  std::unique_ptr<LauncherGang> gang_;
  std::unique_ptr<launcher::testing::LauncherProcess> spare_;
};

TEST_F(HostileWorker0Test, ThirtyHostileWorker0sCostWhatHonestOnesCostAndDelayNoRecovery) {
  // 1-GPU pods: 60 hostile, 3 healthy and a replacement spare on 9 nodes of 8.
  CreateNodes(9, 8);
  std::vector<std::string> names;
  for (int i = 0; i < kHostileJobs; ++i) {
    names.push_back("hw-" + std::to_string(i));
    CreateJob(controller::testing::PoolJob(names.back(), kReplicas, kPoolLabel, pool(), 1));
  }
  json healthy = controller::testing::PoolJob(kHealthy, kReplicas, kPoolLabel, pool(), 1);
  healthy["spec"]["failurePolicy"]["restartMode"] = "InPlace";
  healthy["spec"]["failurePolicy"]["maxRestarts"] = 3;
  healthy["spec"]["failurePolicy"]["spareReplicas"] = 1;
  CreateJob(healthy);
  for (const std::string& name : names) {
    ASSERT_TRUE(WaitRunningAttempt(name, 0, kReplicas, seconds(60))) << name << " never ran";
  }
  ASSERT_TRUE(WaitRunningAttempt(kHealthy, 0, kReplicas + 1, seconds(60)));

  // The hostile worker-0s, at their pods' IPs, with their jobs' keys.
  std::vector<Worker0Job> jobs;
  for (int i = 0; i < kHostileJobs; ++i) {
    StatusOr<json> job = GetJob(names[i]);
    ASSERT_TRUE(job.ok()) << job.status();
    Worker0Job w;
    ASSERT_TRUE(
        WaitFor([&] { return !(w.ip = PodIp(names[i] + "-worker-0")).empty(); }, seconds(20)));
    w.run_id = (*job)["metadata"]["uid"];
    w.token = Token(client(), ns(), names[i]);
    ASSERT_FALSE(w.token.empty());
    w.node_ranks = kReplicas;
    w.kind = i >= 27 ? Worker0Kind::kMute : i >= 24 ? Worker0Kind::kSilent : Worker0Kind::kAnswers;
    jobs.push_back(std::move(w));
  }
  StatusOr<std::unique_ptr<Worker0Fleet>> fleet = Worker0Fleet::Start(std::move(jobs));
  ASSERT_TRUE(fleet.ok()) << fleet.status();
  fleet_ = std::move(*fleet);

  // The healthy job: real launchers for worker 0, worker 1 and the standby spare.
  StatusOr<json> job = GetJob(kHealthy);
  ASSERT_TRUE(job.ok());
  const std::string uid = (*job)["metadata"]["uid"], token = Token(client(), ns(), kHealthy);
  std::vector<GangPod> pods;
  for (const std::string suffix : {"-worker-0", "-worker-1", "-spare-0"}) {
    json p;
    ASSERT_TRUE(WaitFor(
        [&] {
          p = Pod(kHealthy + suffix);
          return !p.value("/status/podIP"_json_pointer, std::string()).empty();
        },
        seconds(20)));
    pods.push_back({p["metadata"]["name"], p["status"]["podIP"], p["spec"]["nodeName"],
                    p["metadata"]["uid"], suffix == "-spare-0" ? 0 : -1});
  }
  GangOptions o;
  o.run_id = uid;
  o.token = token;
  o.launcher_bin = LOCKSTEP_LAUNCHER_BIN;
  o.child_bin = LOCKSTEP_TEST_CHILD_BIN;
  o.dir = dir_.path();
  o.launcher_args = {"--max-restarts", "0"};
  StatusOr<std::unique_ptr<LauncherGang>> gang = LauncherGang::Start(pods, o);
  ASSERT_TRUE(gang.ok()) << gang.status();
  gang_ = std::move(*gang);
  ASSERT_TRUE(gang_->WaitChildren(seconds(30))) << gang_->Logs();
  auto spare_ready = [](const json& j) {
    return j.value("/status/spares/ready"_json_pointer, 0) == 1;
  };
  ASSERT_TRUE(WaitForJob(kHealthy, spare_ready, seconds(30)).ok()) << gang_->Logs();

  // Honest: node 1 dies, spare 0 takes node-rank 1.
  const RunFigures honest = Run(Worker0Mode::kHonest, /*kill=*/1, /*promotions=*/1);
  // The operator deletes worker 1 and creates spare 1, whose launcher stands by in its turn.
  StartReplacementSpare(uid, token);
  ASSERT_TRUE(WaitForJob(kHealthy, spare_ready, seconds(30)).ok()) << gang_->Logs();
  // Hostile: spare 0 (serving node-rank 1) dies, spare 1 takes node-rank 1.
  const RunFigures hostile = Run(Worker0Mode::kHostile, /*kill=*/2, /*promotions=*/2);

  for (const auto& [what, r] : {std::pair{"honest ", honest}, std::pair{"hostile", hostile}}) {
    std::printf(
        "hostile worker-0: %s peak RSS %.1f MiB; CPU %.2f s in %.1f s, %.0f passes (%.2f ms "
        "per pass), %.0f control requests (%.2f ms per request); spare promotion %.1f s after "
        "the kill\n",
        what, r.peak_rss_mib, r.cpu_seconds, r.window_seconds, r.passes, r.cpu_ms_per_pass(),
        r.requests, r.cpu_ms_per_request(), r.promotion_seconds);
  }
  std::printf(
      "hostile worker-0: answers: %llu oversize frames, %llu beyond the job, %llu at the "
      "job's maxima, %llu held unanswered; %llu bad MACs\n",
      static_cast<unsigned long long>(fleet_->Answers(HostileAnswer::kOversizeFrame)),
      static_cast<unsigned long long>(fleet_->Answers(HostileAnswer::kBeyondJob)),
      static_cast<unsigned long long>(fleet_->Answers(HostileAnswer::kAtJobMaxima)),
      static_cast<unsigned long long>(fleet_->Answers(HostileAnswer::kHeld)),
      static_cast<unsigned long long>(fleet_->BadMacs()));

  // Requests per job per watch interval: one, from the watch, and now and then one from a pass
  // a pod or the job woke (before the once-per-interval rule: about 4 in the hostile run, each
  // changed answer waking a pass that asked again at once).
  auto per_interval = [](const RunFigures& r) {
    return r.requests / kHostileJobs / (r.window_seconds / controller::kWatchInterval.count());
  };
  // Peer-loss log lines per hostile job and verdict, at most kPeerLossLogBurst a minute (before
  // the limit: 485 lines in a 9 s run, one per hostile answer).
  const std::map<std::string, size_t> peer_loss_lines = PeerLossLines(hostile.log_path);
  size_t peer_loss_total = 0;
  for (const auto& [key, n] : peer_loss_lines) peer_loss_total += n;
  std::printf(
      "hostile worker-0: control requests per job per watch interval: honest %.2f, hostile "
      "%.2f; peer-loss log lines in the hostile run: %zu\n",
      per_interval(honest), per_interval(hostile), peer_loss_total);
  EXPECT_LE(per_interval(hostile), kRequestsPerIntervalBound);
  const double minutes = std::ceil(hostile.window_seconds / 60 + 1);
  for (const auto& [key, n] : peer_loss_lines) {
    EXPECT_LE(n, controller::kPeerLossLogBurst * static_cast<size_t>(minutes)) << key;
  }

  EXPECT_LE(hostile.peak_rss_mib, kRssBound * honest.peak_rss_mib);
  EXPECT_LE(hostile.cpu_ms_per_pass(), kCpuPerPassBoundMs);
  EXPECT_LE(honest.promotion_seconds, kPromotionBoundSeconds);
  EXPECT_LE(hostile.promotion_seconds, kPromotionBoundSeconds);
  // Every kind of answer was sent, and the operator always asked with the job's key.
  EXPECT_GT(fleet_->Answers(HostileAnswer::kOversizeFrame), 0u);
  EXPECT_GT(fleet_->Answers(HostileAnswer::kBeyondJob), 0u);
  EXPECT_GT(fleet_->Answers(HostileAnswer::kAtJobMaxima), 0u);
  EXPECT_GT(fleet_->Answers(HostileAnswer::kHeld), 0u);
  EXPECT_EQ(fleet_->BadMacs(), 0u);
  // Refusals are reported, at most kRefusalBurst events per job in the window.
  ASSERT_FALSE(WaitEvent(names[0], "LauncherAnswerRefused").is_null());
  for (int i = 0; i < 24; ++i) {
    size_t refused = 0;
    for (const json& e : JobEvents(names[i])) {
      if (e.value("reason", "") == "LauncherAnswerRefused") refused += e.value("count", 1);
    }
    EXPECT_LE(refused, controller::kRefusalBurst) << names[i];
  }
  // The healthy job recovered in place: attempt 0, node-rank 1 served by spare 1.
  StatusOr<json> after = GetJob(kHealthy);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(Attempt(*after), 0) << (*after)["status"].dump(2);
}

}  // namespace
}  // namespace lockstep::failures::testing
