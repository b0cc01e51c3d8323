// Recovery time after node loss on a kwok cluster (bench/recovery/README.md).
//
// Lockstep mode (default): starts the built lockstep-operator (gang scheduler on,
// --node-lease-grace) on a namespace of its own, runs `--jobs` TrainingJobs of `--pods` 8-GPU
// workers, then stops the heartbeat of one node of each job (kwok's renewals refused), one
// every `--stagger-ms` so the kills fall at different phases of the 10 s Lease renewal. For each
// failure it reports last heartbeat (the lost node's Lease spec.renewTime) -> every pod of the
// job's next attempt Running, as seen by polling the pods; then median and p95.
//
// Peer mode (--peer): no operator. Stops the heartbeat of `--jobs` nodes that run a plain pod
// each and measures what stock Kubernetes does: last heartbeat -> the node controller marks the
// node Ready=Unknown (node-monitor-grace-period) and, with --peer-wait-eviction, -> the pod is
// deleted by taint-based eviction (default toleration 300 s).
//
// Launchers mode (--launchers): the recovery paths side by side in one run, with real
// lockstep-launcher processes (tests/integration/peer_loss/launcher_gang.h) on the pods' kwok
// IPs. One 2-worker job at a time; each failure kills the launcher of worker 1 (nothing answers
// at its IP any more) and freezes its node's Lease at the same moment. The paths alternate per
// failure: "peer" (the job's launchers run and report the loss: peer evidence), "lease" (a job
// without launchers: only the Lease grace can act), "spare" (the job has spareReplicas 1 and a
// standby spare launcher: the spare takes node-rank 1 in round 1, in place; recovered when every
// rank of round 1 started). Reports kill -> running again and last Lease renewal -> running
// again per path.
//
//   recovery_bench [--jobs 20] [--pods 8] [--grace 20] [--stagger-ms 1500] [--timeout 180]
//                  [--create-gap-ms 1000] [--sequential]
//                  [--peer [--peer-wait-eviction]]
//                  [--launchers [--failures 20] [--silent]]

#include <algorithm>
#include <memory>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "operator/api/time.h"
#include "operator/kube/base64.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/integration/kube/test_env.h"
#include "tests/integration/peer_loss/launcher_gang.h"

namespace lockstep::bench {
namespace {

using controller::testing::HttpGet;
using controller::testing::OperatorProcess;
using nlohmann::json;
using Clock = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

struct Flags {
  int jobs = 20;
  int pods = 8;
  int grace = 20;
  int stagger_ms = 1500;
  int create_gap_ms = 1000;
  int timeout = 180;
  bool peer = false;
  bool peer_wait_eviction = false;
  // One failure at a time: kill, wait until that job runs again, give the node back, next.
  bool sequential = false;
  // The recovery paths side by side with real launchers (RunLaunchers); failures per path.
  bool launchers = false;
  int failures = 20;
  // How the node dies in launchers mode. Killed (default): its launcher is SIGKILLed, so the
  // kernel closes its connections and node 0 sees EOF at once (a crashed or OOM-killed launcher,
  // a node whose network stack still answers). Silent (--silent): its launcher is frozen
  // (SIGSTOP) and every packet to and from it dropped, so node 0 hears nothing and waits its
  // peer timeout (a powered-off host, a kernel panic, a cut cable).
  bool silent = false;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--jobs") {
      f.jobs = next();
    } else if (a == "--pods") {
      f.pods = next();
    } else if (a == "--grace") {
      f.grace = next();
    } else if (a == "--stagger-ms") {
      f.stagger_ms = next();
    } else if (a == "--create-gap-ms") {
      f.create_gap_ms = next();
    } else if (a == "--timeout") {
      f.timeout = next();
    } else if (a == "--sequential") {
      f.sequential = true;
    } else if (a == "--peer") {
      f.peer = true;
    } else if (a == "--peer-wait-eviction") {
      f.peer_wait_eviction = true;
    } else if (a == "--launchers") {
      f.launchers = true;
    } else if (a == "--failures") {
      f.failures = next();
    } else if (a == "--silent") {
      f.silent = true;
    } else {
      std::cerr << "unknown flag " << a << "\n";
      std::exit(2);
    }
  }
  return f;
}

void Check(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::cerr << what << ": " << s.ToString() << "\n";
  std::exit(1);
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Nearest-rank percentile of a non-empty sample.
double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  const size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::optional<Clock::time_point> RenewTime(kube::RestClient& client, const std::string& node) {
  StatusOr<json> lease = client.Get(kube::resources::Leases(), "kube-node-lease", node);
  if (!lease.ok() || !(*lease)["spec"].contains("renewTime")) return std::nullopt;
  StatusOr<Clock::time_point> t = api::ParseTime((*lease)["spec"]["renewTime"].get<std::string>());
  if (!t.ok()) return std::nullopt;
  return *t;
}

// Stops (or resumes) the node's heartbeat: kwok v0.7 keeps renewing a Lease after the node's
// kwok annotation is removed, so the admission policy in
// tests/integration/failures/stop-heartbeat-policy.yaml refuses kwok's writes to a Lease or
// Node labeled lockstep.dev/heartbeat=stopped. The Lease first, so its renewTime freezes.
void SetHeartbeat(kube::RestClient& client, const std::string& node, bool alive) {
  const json value = alive ? json(nullptr) : json("stopped");
  const json patch = {{"metadata", {{"labels", {{"lockstep.dev/heartbeat", value}}}}}};
  Check(client.MergePatch(kube::resources::Leases(), "kube-node-lease", node, patch).status(),
        "label lease " + node);
  Check(client.MergePatch(kube::resources::Nodes(), "", node, patch).status(), "label " + node);
}

void InstallHeartbeatPolicy() {
  const std::string policy =
      std::string(LOCKSTEP_SOURCE_DIR) + "/tests/integration/failures/stop-heartbeat-policy.yaml";
  if (controller::testing::Kubectl("apply --server-side --force-conflicts -f " + policy +
                                   " >/dev/null") != 0) {
    std::cerr << "cannot apply " << policy << "\n";
    std::exit(1);
  }
}

json Container(int gpus) {
  const json r = {{"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  return {{"name", "trainer"},
          {"image", "lockstep/examples:dev"},
          {"command", json::array({"python", "train.py"})},
          {"resources", {{"requests", r}, {"limits", r}}}};
}

json Job(const std::string& name, int pods) {
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"framework", "Generic"},
            {"replicas", pods},
            {"failurePolicy", {{"restartMode", "Recreate"}}},
            {"template",
             {{"spec",
               {{"nodeSelector", {{"type", "kwok"}}},
                {"containers", json::array({Container(8)})}}}}}}}};
}

std::vector<json> ListPods(kube::RestClient& client, const std::string& ns) {
  StatusOr<kube::ListResult> list = client.List(kube::resources::Pods(), ns);
  if (!list.ok()) return {};
  return std::move(list->items);
}

std::string Label(const json& pod, const std::string& key) {
  return pod["metadata"].value("labels", json::object()).value(key, "");
}

bool Runs(const json& pod) {
  return !pod["metadata"].contains("deletionTimestamp") &&
         !pod["spec"].value("nodeName", "").empty() &&
         pod["status"].value("phase", "") == "Running";
}

// job -> (attempt, pods of that attempt Running, pods of other attempts present)
struct JobPods {
  std::map<std::string, int> running_by_attempt;
  int total = 0;
};

std::map<std::string, JobPods> ByJob(const std::vector<json>& pods) {
  std::map<std::string, JobPods> out;
  for (const json& pod : pods) {
    JobPods& j = out[Label(pod, "lockstep.dev/job-name")];
    ++j.total;
    if (Runs(pod)) ++j.running_by_attempt[Label(pod, "lockstep.dev/attempt")];
  }
  return out;
}

// The operator's /metrics sample sum and count of a histogram for one label pair.
std::pair<double, double> Histogram(int port, const std::string& name, const std::string& label) {
  StatusOr<std::string> body = HttpGet(port, "/metrics");
  if (!body.ok()) return {0, 0};
  double sum = 0, count = 0;
  std::istringstream in(*body);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(label) == std::string::npos) continue;
    if (line.rfind(name + "_sum{", 0) == 0)
      sum += std::strtod(line.c_str() + line.rfind(' '), nullptr);
    if (line.rfind(name + "_count{", 0) == 0) {
      count += std::strtod(line.c_str() + line.rfind(' '), nullptr);
    }
  }
  return {sum, count};
}

void PrintStats(const std::string& what, const std::vector<double>& v) {
  if (v.empty()) {
    std::printf("%-44s no samples\n", what.c_str());
    return;
  }
  std::printf("%-44s n=%zu median %.1f s  p95 %.1f s  min %.1f s  max %.1f s\n", what.c_str(),
              v.size(), Median(v), Percentile(v, 95), *std::min_element(v.begin(), v.end()),
              *std::max_element(v.begin(), v.end()));
}

// The operator every mode runs against: the gang scheduler on, the Lease grace of --grace, only
// `ns` watched. Null (after saying why) when it never became ready.
std::unique_ptr<OperatorProcess> StartOperator(const std::string& ns, const Flags& f) {
  auto op = std::make_unique<OperatorProcess>(
      std::vector<std::string>{ns},
      std::vector<std::string>{"--gang-scheduler=true",
                               "--node-lease-grace=" + std::to_string(f.grace) + "s"});
  Check(op->Start(), "start operator");
  if (!op->WaitReady(seconds(60))) {
    std::cerr << "operator not ready; log " << op->log_path() << "\n";
    return nullptr;
  }
  std::printf("operator log: %s\n", op->log_path().c_str());
  return op;
}

int RunLockstep(kube::RestClient& client, const std::string& ns, const Flags& f) {
  std::unique_ptr<OperatorProcess> started = StartOperator(ns, f);
  if (!started) return 1;
  OperatorProcess& op = *started;

  // 1. The jobs, all running.
  std::vector<std::string> jobs;
  for (int i = 0; i < f.jobs; ++i) {
    jobs.push_back("rec-" + std::to_string(i));
    Check(client.Create(kube::resources::TrainingJobs(), ns, Job(jobs.back(), f.pods)).status(),
          "create job");
    // A burst of 160 pods stalls kwok's Lease renewals on a loaded 2-core machine for longer
    // than the grace; spread the jobs out (real jobs do not all start in one second).
    std::this_thread::sleep_for(milliseconds(f.create_gap_ms));
  }
  bool restarted_early = false;  // a restart before any kill: a false positive of the detector
  const auto all_running = [&] {
    std::vector<json> pods = ListPods(client, ns);
    for (const json& p : pods) restarted_early |= Label(p, "lockstep.dev/attempt") != "0";
    std::map<std::string, JobPods> by = ByJob(pods);
    int done = 0;
    for (const std::string& j : jobs) {
      done += by[j].running_by_attempt["0"] == f.pods && by[j].total == f.pods ? 1 : 0;
    }
    return done;
  };
  if (!kube::testing::WaitFor([&] { return all_running() == f.jobs || restarted_early; },
                              seconds(f.timeout), milliseconds(500)) ||
      restarted_early) {
    std::cerr << all_running() << " of " << f.jobs << " jobs ran; restarted before any kill: "
              << (restarted_early ? "yes (detector false positive)" : "no") << "\n";
    return 1;
  }
  std::printf("%d jobs x %d pods Running\n", f.jobs, f.pods);

  // 2. One node of each job loses its heartbeat, staggered.
  std::map<std::string, std::string> victim;  // job -> node
  for (const json& pod : ListPods(client, ns)) {
    const std::string job = Label(pod, "lockstep.dev/job-name");
    if (pod["metadata"]["name"] == job + "-worker-0") victim[job] = pod["spec"]["nodeName"];
  }
  std::map<std::string, Clock::time_point> killed_at, running_at;
  // The lost node's last renewal, read before the node is given back (sequential mode).
  std::map<std::string, Clock::time_point> last_renew;
  const auto recovered = [&](const std::string& j, const std::map<std::string, JobPods>& by) {
    // Whole again in a later attempt (attempt 1, or later when a new attempt was lost too).
    if (!by.count(j) || by.at(j).total != f.pods) return false;
    for (const auto& [attempt, running] : by.at(j).running_by_attempt) {
      if (attempt != "0" && running == f.pods) return true;
    }
    return false;
  };
  if (f.sequential) {
    // 3a. One at a time: no other node is dead while a job recovers.
    for (const std::string& j : jobs) {
      SetHeartbeat(client, victim[j], false);
      killed_at[j] = Clock::now();
      const Clock::time_point deadline = Clock::now() + seconds(f.timeout);
      while (Clock::now() < deadline) {
        if (recovered(j, ByJob(ListPods(client, ns)))) {
          running_at[j] = Clock::now();
          break;
        }
        std::this_thread::sleep_for(milliseconds(200));
      }
      std::optional<Clock::time_point> renew = RenewTime(client, victim[j]);
      if (renew) last_renew[j] = *renew;
      std::printf("  %s: %s %s\n", j.c_str(), victim[j].c_str(),
                  running_at.count(j) && renew
                      ? (std::to_string(Seconds(*renew, running_at[j])) + " s").c_str()
                      : "NOT RECOVERED");
      SetHeartbeat(client, victim[j], true);
    }
  } else {
    // 3b. Staggered kills; meanwhile watch every job come back as attempt 1.
    std::thread killer([&] {
      for (const std::string& j : jobs) {
        SetHeartbeat(client, victim[j], false);
        killed_at[j] = Clock::now();  // read only after the join
        std::this_thread::sleep_for(milliseconds(f.stagger_ms));
      }
    });
    const Clock::time_point deadline = Clock::now() + seconds(f.timeout);
    while (running_at.size() < jobs.size() && Clock::now() < deadline) {
      std::map<std::string, JobPods> by = ByJob(ListPods(client, ns));
      const Clock::time_point now = Clock::now();
      for (const std::string& j : jobs) {
        if (!running_at.count(j) && recovered(j, by)) running_at[j] = now;
      }
      std::this_thread::sleep_for(milliseconds(200));
    }
    killer.join();
  }

  // 4. Report.
  std::vector<double> from_renew, from_kill;
  int restarts_beyond_one = 0;  // a job restarted again: its new attempt landed on a dead node
  for (const std::string& j : jobs) {
    StatusOr<json> tj = client.Get(kube::resources::TrainingJobs(), ns, j);
    if (tj.ok() && tj->value("/status/attempt"_json_pointer, 0) > 1) ++restarts_beyond_one;
  }
  std::printf("\n%-8s %-28s %10s %10s\n", "job", "lost node", "renew->run", "kill->run");
  for (const std::string& j : jobs) {
    std::optional<Clock::time_point> renew =
        last_renew.count(j) ? std::optional(last_renew[j]) : RenewTime(client, victim[j]);
    if (!running_at.count(j) || !renew) {
      std::printf("%-8s %-28s %10s\n", j.c_str(), victim[j].c_str(), "NOT RECOVERED");
      continue;
    }
    from_renew.push_back(Seconds(*renew, running_at[j]));
    from_kill.push_back(Seconds(killed_at[j], running_at[j]));
    std::printf("%-8s %-28s %9.1fs %9.1fs\n", j.c_str(), victim[j].c_str(), from_renew.back(),
                from_kill.back());
  }
  std::printf("\n");
  PrintStats("last heartbeat -> running again", from_renew);
  PrintStats("heartbeat stopped -> running again", from_kill);
  std::printf("jobs that needed more than one restart: %d of %d\n", restarts_beyond_one, f.jobs);
  const auto [dsum, dcount] =
      Histogram(op.metrics_port(), "lockstep_detection_delay_seconds", "NodeLeaseExpired");
  const auto [rsum, rcount] =
      Histogram(op.metrics_port(), "lockstep_recovery_duration_seconds", ns);
  if (dcount > 0) {
    std::printf("operator: detection delay mean %.1f s (n=%.0f)\n", dsum / dcount, dcount);
  }
  if (rcount > 0) {
    std::printf("operator: detection -> running mean %.1f s (n=%.0f)\n", rsum / rcount, rcount);
  }

  // 5. Clean up: nodes back under kwok, jobs and pods gone.
  for (const auto& [j, node] : victim) SetHeartbeat(client, node, true);
  for (const std::string& j : jobs) {
    client.Delete(kube::resources::TrainingJobs(), ns, j).status().IgnoreError();
  }
  op.Kill(SIGTERM);
  return static_cast<int>(from_renew.size()) == f.jobs ? 0 : 1;
}

// --- Launchers mode: recovery paths side by side ---

// How a failure's job can recover. Peer: its launchers report the loss; Lease: it has no
// launchers, so only the Lease grace acts; Spare: the job has spareReplicas 1 and a standby
// spare launcher, which takes the lost node-rank in place (no new attempt, no pod created).
enum class Path { kPeer, kLease, kSpare };
const char* PathName(Path p) {
  return p == Path::kPeer ? "peer" : p == Path::kLease ? "lease" : "spare";
}

// Every rank of round `round` started: the test children wrote env.<round>.<rank>.
bool RoundRunning(const std::string& dir, int round, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    if (!std::filesystem::exists(dir + "/env." + std::to_string(round) + "." + std::to_string(r))) {
      return false;
    }
  }
  return true;
}

struct Failure {
  Path path;
  std::string job;
  std::string node;
  double kill_to_running = 0;
  double renew_to_running = 0;
  bool recovered = false;
};

std::string PodField(kube::RestClient& client, const std::string& ns, const std::string& pod,
                     const json::json_pointer& ptr) {
  StatusOr<json> p = client.Get(kube::resources::Pods(), ns, pod);
  return p.ok() ? p->value(ptr, std::string()) : std::string();
}

// One failure: a 2-worker job runs (with launchers on the peer path), then worker 1's node dies
// (its launcher killed, nothing answers at its IP, its Lease frozen, at once); until attempt 1
// runs.
Failure RunOneFailure(kube::RestClient& client, const std::string& ns, Path path, int index,
                      const std::string& dir, const Flags& f) {
  Failure out{path, "lr-" + std::to_string(index) + "-" + PathName(path), "", 0, 0, false};
  json job = Job(out.job, 2);
  const int pod_count = path == Path::kSpare ? 3 : 2;
  if (path == Path::kSpare) job["spec"]["failurePolicy"]["spareReplicas"] = 1;
  Check(client.Create(kube::resources::TrainingJobs(), ns, job).status(), "create job");
  const auto attempt_running = [&](const std::string& attempt) {
    std::map<std::string, JobPods> by = ByJob(ListPods(client, ns));
    return by[out.job].total == pod_count && by[out.job].running_by_attempt[attempt] == pod_count;
  };
  if (!kube::testing::WaitFor([&] { return attempt_running("0"); }, seconds(f.timeout),
                              milliseconds(200))) {
    std::cerr << out.job << ": attempt 0 never ran\n";
    return out;
  }
  std::vector<lockstep::testing::GangPod> pods;
  for (int i = 0; i < pod_count; ++i) {
    const bool spare = i >= 2;
    const std::string pod =
        out.job + (spare ? "-spare-" + std::to_string(i - 2) : "-worker-" + std::to_string(i));
    kube::testing::WaitFor(
        [&] { return !PodField(client, ns, pod, "/status/podIP"_json_pointer).empty(); },
        seconds(30), milliseconds(100));
    pods.push_back({pod, PodField(client, ns, pod, "/status/podIP"_json_pointer),
                    PodField(client, ns, pod, "/spec/nodeName"_json_pointer),
                    PodField(client, ns, pod, "/metadata/uid"_json_pointer), spare ? i - 2 : -1});
  }
  out.node = pods[1].node;
  std::unique_ptr<lockstep::testing::LauncherGang> gang;
  std::string gang_dir;
  if (path != Path::kLease) {
    StatusOr<json> tj = client.Get(kube::resources::TrainingJobs(), ns, out.job);
    StatusOr<json> secret = client.Get(kube::resources::Secrets(), ns, out.job + "-rdzv");
    Check(tj.status(), "get job");
    Check(secret.status(), "get secret");
    StatusOr<std::string> token = kube::Base64Decode((*secret)["data"]["token"].get<std::string>());
    Check(token.status(), "token");
    lockstep::testing::GangOptions o;
    o.run_id = (*tj)["metadata"]["uid"];
    o.token = *token;
    o.launcher_bin = LOCKSTEP_LAUNCHER_BIN;
    o.child_bin = LOCKSTEP_TEST_CHILD_BIN;
    o.dir = dir + "/" + out.job;
    gang_dir = o.dir;
    std::error_code ec;
    std::filesystem::create_directories(o.dir, ec);
    if (ec) Check(InternalError("mkdir " + o.dir + ": " + ec.message()), "mkdir");
    StatusOr<std::unique_ptr<lockstep::testing::LauncherGang>> g =
        lockstep::testing::LauncherGang::Start(pods, o);
    Check(g.status(), "start launchers");
    gang = std::move(*g);
    if (!gang->WaitChildren(seconds(30))) {
      std::cerr << out.job << ": the launchers' children never ran\n" << gang->Logs();
      return out;
    }
    // The operator has polled the running round once (status.rendezvous).
    kube::testing::WaitFor(
        [&] {
          StatusOr<json> j = client.Get(kube::resources::TrainingJobs(), ns, out.job);
          return j.ok() && j->contains("/status/rendezvous"_json_pointer);
        },
        seconds(30), milliseconds(200));
  }
  // The node dies: launcher and Lease at the same moment.
  SetHeartbeat(client, out.node, false);
  const Clock::time_point killed = Clock::now();
  if (gang) Check(f.silent ? gang->Freeze(1) : gang->Kill(1), "kill worker 1's launcher");
  std::optional<Clock::time_point> running;
  // Spare: every rank of round 1 started (the spare's children serve node-rank 1), still on
  // attempt 0; otherwise every pod of attempt 1 Running.
  const auto recovered = [&] {
    return path == Path::kSpare ? RoundRunning(gang_dir, 1, 4) : attempt_running("1");
  };
  if (kube::testing::WaitFor(recovered, seconds(f.timeout),
                             milliseconds(path == Path::kSpare ? 20 : 100))) {
    running = Clock::now();
  }
  std::optional<Clock::time_point> renew = RenewTime(client, out.node);
  gang.reset();
  SetHeartbeat(client, out.node, true);
  client.Delete(kube::resources::TrainingJobs(), ns, out.job).status().IgnoreError();
  kube::testing::WaitFor([&] { return ByJob(ListPods(client, ns))[out.job].total == 0; },
                         seconds(60), milliseconds(200));
  if (running && renew) {
    out.recovered = true;
    out.kill_to_running = Seconds(killed, *running);
    out.renew_to_running = Seconds(*renew, *running);
  }
  std::printf("  %-16s %-6s %-28s %s\n", out.job.c_str(), PathName(path), out.node.c_str(),
              out.recovered ? ("kill->run " + std::to_string(out.kill_to_running) +
                               " s, renew->run " + std::to_string(out.renew_to_running) + " s")
                                  .c_str()
                            : "NOT RECOVERED");
  return out;
}

int RunLaunchers(kube::RestClient& client, const std::string& ns, const Flags& f) {
  std::unique_ptr<OperatorProcess> started = StartOperator(ns, f);
  if (!started) return 1;
  OperatorProcess& op = *started;
  const std::string dir = "/tmp/recovery-launchers-" + ns;
  std::vector<Failure> all;
  for (int i = 0; i < f.failures; ++i) {
    for (Path path : {Path::kPeer, Path::kLease, Path::kSpare}) {
      all.push_back(RunOneFailure(client, ns, path, i, dir, f));
    }
  }
  int lost = 0;
  for (Path path : {Path::kPeer, Path::kLease, Path::kSpare}) {
    std::vector<double> from_kill, from_renew;
    for (const Failure& x : all) {
      if (x.path != path) continue;
      if (!x.recovered) {
        ++lost;
        continue;
      }
      from_kill.push_back(x.kill_to_running);
      from_renew.push_back(x.renew_to_running);
    }
    std::printf("\n");
    PrintStats(std::string(PathName(path)) + ": kill -> running again", from_kill);
    PrintStats(std::string(PathName(path)) + ": last renewal -> running again", from_renew);
  }
  op.Kill(SIGTERM);
  return lost == 0 ? 0 : 1;
}

// Stock Kubernetes: a plain pod on each of `jobs` nodes; the heartbeat stops; how long until the
// node controller notices and (optionally) until taint-based eviction deletes the pod.
int RunPeer(kube::RestClient& client, const std::string& ns, const Flags& f) {
  StatusOr<kube::ListResult> nodes = client.List(kube::resources::Nodes(), "");
  Check(nodes.status(), "list nodes");
  std::vector<std::string> victims;
  for (const json& n : nodes->items) {
    if (static_cast<int>(victims.size()) == f.jobs) break;
    if (n["metadata"].value("annotations", json::object()).value("kwok.x-k8s.io/node", "") ==
        "fake") {
      victims.push_back(n["metadata"]["name"]);
    }
  }
  for (size_t i = 0; i < victims.size(); ++i) {
    const json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", "peer-" + std::to_string(i)}}},
                      {"spec", {{"nodeName", victims[i]}, {"containers", {Container(0)}}}}};
    Check(client.Create(kube::resources::Pods(), ns, pod).status(), "create pod");
  }
  kube::testing::WaitFor(
      [&] {
        for (const json& p : ListPods(client, ns)) {
          if (!Runs(p)) return false;
        }
        return true;
      },
      seconds(60), milliseconds(500));
  std::map<std::string, Clock::time_point> unknown_at, evicted_at;
  for (const std::string& v : victims) SetHeartbeat(client, v, false);
  const Clock::time_point started = Clock::now();
  const int limit = f.peer_wait_eviction ? 50 + 300 + 120 : 120;
  while (Clock::now() < started + seconds(limit)) {
    const Clock::time_point now = Clock::now();
    for (const std::string& v : victims) {
      if (unknown_at.count(v)) continue;
      StatusOr<json> n = client.Get(kube::resources::Nodes(), "", v);
      if (!n.ok()) continue;
      for (const json& c : (*n)["status"].value("conditions", json::array())) {
        if (c.value("type", "") == "Ready" && c.value("status", "") != "True") unknown_at[v] = now;
      }
    }
    if (f.peer_wait_eviction) {
      // Evicted: marked for deletion, or already gone (kwok finishes the deletion at once).
      std::set<std::string> alive;
      for (const json& p : ListPods(client, ns)) {
        if (!p["metadata"].contains("deletionTimestamp"))
          alive.insert(p["spec"].value("nodeName", ""));
      }
      for (const std::string& v : victims) {
        if (!alive.count(v) && !evicted_at.count(v)) evicted_at[v] = now;
      }
    }
    const bool done = unknown_at.size() == victims.size() &&
                      (!f.peer_wait_eviction || evicted_at.size() == victims.size());
    if (done) break;
    std::this_thread::sleep_for(milliseconds(500));
  }
  std::vector<double> to_unknown, to_evicted;
  for (const std::string& v : victims) {
    std::optional<Clock::time_point> renew = RenewTime(client, v);
    if (!renew) continue;
    if (unknown_at.count(v)) to_unknown.push_back(Seconds(*renew, unknown_at[v]));
    if (evicted_at.count(v)) to_evicted.push_back(Seconds(*renew, evicted_at[v]));
  }
  PrintStats("stock: last heartbeat -> node NotReady/Unknown", to_unknown);
  if (f.peer_wait_eviction) PrintStats("stock: last heartbeat -> pod evicted", to_evicted);
  for (const std::string& v : victims) SetHeartbeat(client, v, true);
  return 0;
}

int Main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const Flags f = ParseFlags(argc, argv);
  StatusOr<kube::testing::Cluster> cluster = kube::testing::Connect();
  Check(cluster.status(), "connect ($KUBECONFIG)");
  kube::RestClient& client = *cluster->client;
  InstallHeartbeatPolicy();
  kube::testing::TestNamespace ns(client, f.peer ? "recovery-peer" : "recovery");
  Check(ns.status(), "namespace");
  std::printf("namespace %s\n", ns.name().c_str());
  const int rc = f.peer        ? RunPeer(client, ns.name(), f)
                 : f.launchers ? RunLaunchers(client, ns.name(), f)
                               : RunLockstep(client, ns.name(), f);
  // Pods on nodes kwok has just taken back may linger; force them out with the namespace.
  kube::DeleteOptions force;
  force.grace_period_seconds = 0;
  for (const json& p : ListPods(client, ns.name())) {
    client.Delete(kube::resources::Pods(), ns.name(), p["metadata"]["name"], force)
        .status()
        .IgnoreError();
  }
  return rc;
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) { return lockstep::bench::Main(argc, argv); }
