// SIGKILL the operator at random moments while the test creates jobs, fails their pods (a gang
// restart), asks for restarts, completes and deletes them. The test keeps a model of where it
// drove every job; at the end each job must be exactly there (no lost job, no lost or doubled
// restart), and the recorded history must show no extra pod and no counter going back.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <thread>

#include "tests/chaos/chaos_env.h"

namespace lockstep::chaos {
namespace {

struct JobModel {
  int replicas = 1;
  int attempt = 0;      // status.attempt the job must reach
  int failures = 0;     // restarts.failures
  std::string request;  // the last restart-request value
  bool succeeded = false;
  bool deleted = false;
};

enum class Op { kCreate, kFail, kRequest, kComplete, kDelete };
const char* OpName(Op op) {
  switch (op) {
    case Op::kCreate:
      return "create";
    case Op::kFail:
      return "fail";
    case Op::kRequest:
      return "restart-request";
    case Op::kComplete:
      return "complete";
    case Op::kDelete:
      return "delete";
  }
  return "?";
}

class Driver {
 public:
  Driver(kube::RestClient& client, std::string ns, std::string pool, const Scale& scale,
         uint32_t seed)
      : client_(client), ns_(std::move(ns)), pool_(std::move(pool)), scale_(scale), rng_(seed) {}

  // One operation on a job that is ready for it; false when none was (try again shortly).
  bool Step() {
    Refresh();
    std::vector<Op> ops;
    if (Live() < scale_.max_live_jobs) ops.insert(ops.end(), 3, Op::kCreate);
    std::vector<std::string> settled = Settled();
    if (!settled.empty()) {
      ops.insert(ops.end(), 2, Op::kFail);
      ops.push_back(Op::kRequest);
      ops.push_back(Op::kComplete);
    }
    if (Live() > 0) ops.push_back(Op::kDelete);
    if (ops.empty()) return false;
    const Op op = ops[Pick(ops.size())];
    const bool done = op == Op::kCreate   ? Create()
                      : op == Op::kDelete ? Delete()
                                          : Act(op, settled[Pick(settled.size())]);
    if (done) ++counts_[OpName(op)];
    return done;
  }

  const std::map<std::string, JobModel>& jobs() const { return jobs_; }
  const std::map<std::string, int>& counts() const { return counts_; }

  // Whether the API showed the job where the model says it is, as of the last Refresh().
  bool Arrived(const std::string& name, const JobModel& m) {
    if (m.deleted) return !api_jobs_.contains(name) && pods_[name].empty();
    auto it = api_jobs_.find(name);
    if (it == api_jobs_.end()) return false;
    if (m.succeeded) return State(it->second) == "Succeeded";
    return Attempt(it->second) == m.attempt &&
           !RunningAttempt(pods_[name], m.attempt, m.replicas).empty();
  }

  json ApiJob(const std::string& name) {
    auto it = api_jobs_.find(name);
    return it == api_jobs_.end() ? json() : it->second;
  }

  // Reads every job and pod of the namespace (two LISTs) for Arrived() and the next Step().
  void Refresh() {
    api_jobs_.clear();
    pods_.clear();
    StatusOr<kube::ListResult> jobs = client_.List(kube::resources::TrainingJobs(), ns_);
    StatusOr<kube::ListResult> pods = client_.List(kube::resources::Pods(), ns_);
    if (!jobs.ok() || !pods.ok()) return;
    // The key first: the right side of an assignment is evaluated before the left.
    for (json& j : jobs->items) {
      const std::string name = j["metadata"]["name"];
      api_jobs_[name] = std::move(j);
    }
    for (json& p : pods->items) {
      const std::string job = p.value("/metadata/labels/lockstep.dev~1job-name"_json_pointer, "");
      pods_[job].push_back(std::move(p));
    }
  }

 private:
  size_t Pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

  int Live() const {
    int live = 0;
    for (const auto& [name, m] : jobs_) live += m.deleted ? 0 : 1;
    return live;
  }

  // Running jobs whose current attempt runs whole: ready for a failure, request or completion.
  std::vector<std::string> Settled() {
    std::vector<std::string> out;
    for (const auto& [name, m] : jobs_) {
      if (!m.deleted && !m.succeeded && Arrived(name, m)) out.push_back(name);
    }
    return out;
  }

  bool Create() {
    const std::string name = "job-" + std::to_string(next_++);
    const int replicas = 1 + static_cast<int>(Pick(3));
    if (!client_.Create(kube::resources::TrainingJobs(), ns_, ChaosJob(name, replicas, pool_))
             .ok()) {
      return false;
    }
    jobs_[name].replicas = replicas;
    return true;
  }

  bool Delete() {
    std::vector<std::string> live;
    for (const auto& [name, m] : jobs_) {
      if (!m.deleted) live.push_back(name);
    }
    const std::string name = live[Pick(live.size())];
    if (!client_.Delete(kube::resources::TrainingJobs(), ns_, name).ok()) return false;
    jobs_[name].deleted = true;
    return true;
  }

  bool Act(Op op, const std::string& name) {
    JobModel& m = jobs_[name];
    const std::vector<json>& pods = pods_[name];
    if (op == Op::kFail) {
      const std::string pod = pods[Pick(pods.size())]["metadata"]["name"];
      if (!FinishPod(client_, ns_, pod, /*succeeded=*/false).ok()) return false;
      ++m.attempt;
      ++m.failures;
    } else if (op == Op::kRequest) {
      const std::string value = "r" + std::to_string(next_++);
      const json patch = {
          {"metadata", {{"annotations", {{"lockstep.dev/restart-request", value}}}}}};
      if (!client_.MergePatch(kube::resources::TrainingJobs(), ns_, name, patch).ok()) {
        return false;
      }
      ++m.attempt;
      m.request = value;
    } else {
      // Every pod, even if one write fails (the apiserver is not what this test breaks).
      for (const json& pod : pods) {
        Status s = FinishPod(client_, ns_, pod["metadata"]["name"], /*succeeded=*/true);
        EXPECT_TRUE(s.ok()) << s;
      }
      m.succeeded = true;
    }
    return true;
  }

  kube::RestClient& client_;
  const std::string ns_;
  const std::string pool_;
  const Scale scale_;
  std::mt19937 rng_;
  int next_ = 0;
  std::map<std::string, JobModel> jobs_;
  std::map<std::string, int> counts_;
  std::map<std::string, json> api_jobs_;
  std::map<std::string, std::vector<json>> pods_;
};

class OperatorKillChaosTest : public ChaosTest {};

TEST_F(OperatorKillChaosTest, SigkillDuringCreationsRestartsAndDeletionsLosesNothing) {
  const Scale scale = ChaosScale();
  // Room for every live job at its largest (3 pods of one GPU), on 8-GPU nodes.
  ASSERT_NO_FATAL_FAILURE(Prepare("chaos-kill", (scale.max_live_jobs * 3 + 7) / 8 + 1));

  const uint32_t seed = std::random_device{}();
  Figure("kill.seed", std::to_string(seed));
  OperatorProcess op({ns()}, {"--gang-scheduler=true"});
  ASSERT_TRUE(op.Start().ok());
  std::atomic<bool> done{false};
  int kills = 0;
  std::thread killer([&] {
    std::mt19937 rng(seed + 1);
    std::uniform_int_distribution<int> pause_ms(scale.long_run ? 500 : 1000, 3000);
    while (!done) {
      std::this_thread::sleep_for(milliseconds(pause_ms(rng)));
      if (done) break;
      op.Kill(SIGKILL);
      ++kills;
      if (!op.Start().ok()) break;
    }
  });

  Driver driver(client(), ns(), pool(), scale, seed);
  const auto started = std::chrono::steady_clock::now();
  int operations = 0;
  while (operations < scale.operations && std::chrono::steady_clock::now() - started <
                                              std::chrono::minutes(scale.long_run ? 20 : 6)) {
    if (driver.Step()) {
      ++operations;
    } else {
      std::this_thread::sleep_for(milliseconds(200));
    }
  }
  done = true;
  killer.join();
  ASSERT_EQ(operations, scale.operations)
      << "the operations did not finish in time; log " << op.log_path();
  ASSERT_TRUE(op.Running());
  ASSERT_TRUE(op.WaitReady(seconds(60))) << op.ready_answer() << "; log: " << op.log_path();

  // Every job reaches the state the test drove it to, with exactly the restarts it caused.
  for (const auto& [name, m] : driver.jobs()) {
    EXPECT_TRUE(kube::testing::WaitFor(
        [&] {
          driver.Refresh();
          return driver.Arrived(name, m);
        },
        seconds(120), milliseconds(250)))
        << name << " never arrived (attempt " << m.attempt << ", succeeded " << m.succeeded
        << ", deleted " << m.deleted << "): " << driver.ApiJob(name).dump() << "; log "
        << op.log_path();
    if (m.deleted) continue;
    const json job = driver.ApiJob(name);
    EXPECT_EQ(job.value("/status/attempt"_json_pointer, 0), m.attempt) << name;
    EXPECT_EQ(job.value("/status/restarts/failures"_json_pointer, 0), m.failures) << name;
    if (!m.request.empty()) {
      EXPECT_EQ(job.value("/status/restartRequest/value"_json_pointer, ""), m.request) << name;
    }
  }
  const PodCreations pods = CheckHistory();
  EXPECT_EQ(history().gaps(), 0);

  std::string ops;
  for (const auto& [name, count] : driver.counts()) {
    ops += (ops.empty() ? "" : ", ") + std::to_string(count) + " " + name;
  }
  const auto secs =
      std::chrono::duration_cast<seconds>(std::chrono::steady_clock::now() - started).count();
  Figure("kill", std::to_string(kills) + " SIGKILLs during " + std::to_string(operations) +
                     " operations (" + ops + ") on " + std::to_string(driver.jobs().size()) +
                     " jobs, " + std::to_string(pods.seen) + " pods created (" +
                     std::to_string(pods.orphans) + " orphans of deleted jobs, collected), " +
                     std::to_string(history().Jobs().size()) + " job versions checked, in " +
                     std::to_string(secs) + " s");
  op.Kill(SIGTERM);
  EXPECT_EQ(op.last_exit(), 0) << op.log_path();
}

}  // namespace
}  // namespace lockstep::chaos
