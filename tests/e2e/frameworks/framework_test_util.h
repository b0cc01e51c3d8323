#pragma once
// What the framework e2e test binaries share: the suite fixture owning the one cluster of the
// binary, and small readers of the evidence a job leaves.

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/rfc3339.h"
#include "tests/e2e/frameworks/framework_cluster.h"

namespace lockstep::e2e {

// A test suite whose tests share one FrameworkCluster (operator + agent), started before the
// first test and stopped, with the agent's cleanup guarantees checked, after the last one.
// A suite may hide `Options()` (3 nodes, no extra operator flags) and `SuiteSkipReason()` with
// its own (e.g. the Horovod suite's image and opt-out).
template <typename Suite>
class SharedClusterTest : public ::testing::Test {
 public:
  static ClusterOptions Options() { return ClusterOptions{}; }
  static std::string SuiteSkipReason() { return ""; }

  static void SetUpTestSuite() {
    skip_ = FrameworkCluster::SkipReason();
    if (skip_.empty()) skip_ = Suite::SuiteSkipReason();
    if (!skip_.empty()) {
      // CMakeLists.txt's SKIP_REGULAR_EXPRESSION: ctest reports the binary as Skipped.
      std::cout << "framework e2e tier skipped: " << skip_ << std::endl;
      return;
    }
    cluster_ = std::make_unique<FrameworkCluster>(Suite::Options());
    start_ = cluster_->Start();
  }

  static void TearDownTestSuite() {
    if (cluster_ == nullptr) return;
    for (const std::string& problem : cluster_->Stop()) ADD_FAILURE() << problem;
    cluster_.reset();
  }

 protected:
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(start_.ok()) << start_;
  }

  // Runs examples/local/<file> (after `edit`), expecting it to end in `state` within `timeout`;
  // afterwards no process of the job may be left on the agent's nodes. The timeout guards
  // against a hang, it is no bound on speed: a job of ~30 s on a quiet 2-core machine took up to
  // 260 s at load 25-30 (importing torch or TensorFlow alone took 2-2.5 min).
  template <typename Edit>
  JobRun RunExample(const std::string& file, const std::string& state, Edit edit,
                    std::chrono::seconds timeout = std::chrono::seconds(420)) {
    StatusOr<nlohmann::json> job = cluster_->LoadExample(file);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return {};
    edit(*job);
    StatusOr<JobRun> run = cluster_->Run(*job, timeout);
    EXPECT_TRUE(run.ok()) << run.status() << "\nagent log tail:\n" << Tail(cluster_->agent_log());
    if (!run.ok()) return {};
    std::cout << "[ job ] " << file << " ended " << run->state() << " in " << run->seconds << " s"
              << std::endl;
    EXPECT_EQ(run->state(), state) << run->job["status"].dump(2) << "\n" << run->AllLogs();
    ExpectGoodput(run->job);
    ExpectFenced(file, *run);
    ExpectNoProcessesLeft((*job)["metadata"]["name"]);
    return *run;
  }
  JobRun RunExample(const std::string& file, const std::string& state = "Succeeded") {
    return RunExample(file, state, [](nlohmann::json&) {});
  }

  // Issue 44 item 5: every server the example's processes listened on is the job's only, by its
  // NetworkPolicy. Node 0's rendezvous server (29400) listens through every job that succeeds
  // (seconds: the trainers import their framework): if the sampling missed it, the sampling is
  // broken, not the job fenced.
  static void ExpectFenced(const std::string& file, const JobRun& run) {
    std::string ports;
    for (int port : run.listening_ports) ports += " " + std::to_string(port);
    std::cout << "[ ports ] " << file << " listened on" << ports << std::endl;
    if (run.state() == "Succeeded") {
      EXPECT_EQ(run.listening_ports.count(29400), 1u) << file << ": sampled" << ports;
    }
    EXPECT_TRUE(run.open_to_anyone.empty())
        << file << ": ports open to pods outside the job: "
        << nlohmann::json(run.open_to_anyone).dump() << " of" << ports;
  }

  // Issue 45: a finished job has status.goodput, and its accounts add up to the job's wall time
  // (creation to completion, whole seconds; none of these jobs is ever suspended).
  static void ExpectGoodput(const nlohmann::json& job) {
    const nlohmann::json status = job.value("status", nlohmann::json::object());
    ASSERT_TRUE(status.contains("goodput")) << status.dump(2);
    const nlohmann::json& g = status["goodput"];
    const double ratio = g.value("ratio", -1.0);
    EXPECT_GE(ratio, 0.0) << g.dump();
    EXPECT_LE(ratio, 1.0) << g.dump();
    int64_t sum = 0;
    for (const char* account : {"productiveSeconds", "placementSeconds", "startupSeconds",
                                "recoverySeconds", "recomputeSeconds"}) {
      sum += g.value(account, int64_t{0});
    }
    StatusOr<std::chrono::system_clock::time_point> created =
        ParseTime(job["metadata"].value("creationTimestamp", ""));
    StatusOr<std::chrono::system_clock::time_point> completed =
        ParseTime(status.value("completionTime", ""));
    ASSERT_TRUE(created.ok() && completed.ok()) << job["metadata"].dump() << status.dump();
    const auto wall = std::chrono::duration_cast<std::chrono::seconds>(*completed - *created);
    std::cout << "[ goodput ] " << job["metadata"].value("name", "") << ": " << g.dump()
              << " over " << wall.count() << " s" << std::endl;
    EXPECT_LE(std::abs(sum - wall.count()), 1) << "accounted " << sum << " s of a " << wall.count()
                                              << " s job: " << g.dump();
  }

  // Issue 45: goodput's recovery seconds of `cause` match the recovery the test measured (from
  // the failure it caused to the gang training again, `measured` seconds) within 1 s. The
  // operator charges from the failure's evidence (a Lease's last renewal, the launchers' report
  // of a lost member), not from its detection (docs/goodput.md). With more than one recovery of
  // that cause the two cannot be compared: only one is measured.
  static void ExpectGoodputRecovery(const nlohmann::json& status, const std::string& cause,
                                    double measured) {
    int64_t charged = -1;
    for (const nlohmann::json& c :
         status.value("goodput", nlohmann::json::object()).value("recoveryByCause",
                                                                 nlohmann::json::array())) {
      if (c.value("cause", "") == cause) charged = c.value("seconds", int64_t{-1});
    }
    std::cout << "[ goodput ] " << cause << ": charged " << charged << " s, measured " << measured
              << " s" << std::endl;
    EXPECT_LE(std::abs(static_cast<double>(charged) - measured), 1.0)
        << "goodput charged " << charged << " s to " << cause << ", the test measured "
        << measured << " s: " << status.dump(2);
  }

  // When the job's Restarting condition last turned False (the gang ran again), if it did.
  static std::optional<std::chrono::system_clock::time_point> RecoveredAt(
      const nlohmann::json& status) {
    for (const nlohmann::json& c : status.value("conditions", nlohmann::json::array())) {
      if (c.value("type", "") != "Restarting" || c.value("status", "") != "False") continue;
      StatusOr<std::chrono::system_clock::time_point> at =
          ParseTime(c.value("lastTransitionTime", ""));
      if (at.ok()) return *at;
    }
    return std::nullopt;
  }

  void ExpectNoProcessesLeft(const std::string& job) {
    // The pods have ended (or are being deleted by the clean-pod policy, within their grace).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!cluster_->JobProcesses(job).empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_TRUE(cluster_->JobProcesses(job).empty()) << "processes of " << job << " outlived it";
  }

  static std::string Tail(const std::string& text, size_t bytes = 6000) {
    return text.size() <= bytes ? text : text.substr(text.size() - bytes);
  }

  static inline std::unique_ptr<FrameworkCluster> cluster_;
  static inline Status start_;
  static inline std::string skip_;
};

// The value of `key=` in a log line ("" if absent): Field("a=1 b=2", "b") == "2".
inline std::string Field(const std::string& line, const std::string& key) {
  const std::string needle = key + "=";
  size_t at = line.find(" " + needle);
  if (at == std::string::npos) {
    if (line.rfind(needle, 0) != 0) return "";
    at = 0;
  } else {
    at += 1;
  }
  const size_t start = at + needle.size();
  return line.substr(start, line.find(' ', start) - start);
}

inline std::set<std::string> Fields(const std::vector<std::string>& lines, const std::string& key) {
  std::set<std::string> out;
  for (const std::string& l : lines) out.insert(Field(l, key));
  return out;
}

// Replaces (or appends) `--flag value` in the trainer's args of the job's worker template.
inline void SetFlag(nlohmann::json& job, const std::string& flag, const std::string& value) {
  nlohmann::json& args = job["spec"]["template"]["spec"]["containers"][0]["args"];
  if (!args.is_array()) args = nlohmann::json::array();
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == flag) {
      args[i + 1] = value;
      return;
    }
  }
  args.push_back(flag);
  args.push_back(value);
}

// Every pod ran on one of this agent's nodes (the gang scheduler honoured the selector), and no
// pod exists that never ran (a pass on a stale job once recreated a finished job's pods).
inline void ExpectOnAgentNodes(const JobRun& run, const std::vector<std::string>& nodes) {
  const std::set<std::string> ours(nodes.begin(), nodes.end());
  for (const JobRun::Pod& pod : run.pods) {
    EXPECT_EQ(ours.count(pod.node), 1u) << pod.name << " (attempt " << pod.attempt
                                        << ") ran on node '" << pod.node << "'";
  }
}

// "... loss=<first>-><last>" with last < first.
inline bool LossFell(const std::string& line) {
  const std::string loss = Field(line, "loss");
  const size_t arrow = loss.find("->");
  if (arrow == std::string::npos) return false;
  return std::stod(loss.substr(arrow + 2)) < std::stod(loss.substr(0, arrow));
}

// A number field of a log line ("ref_diff=2.98e-08"); NaN when absent or not a number.
inline double NumberField(const std::string& line, const std::string& key) {
  try {
    return std::stod(Field(line, key));
  } catch (const std::exception&) {
    return std::nan("");
  }
}

// The evidence of an in-place restart after one killed rank: the kill once, the same 2 pods,
// every rank resumed at epoch 1 in the second round, identical final weights (the `sha=` of the
// 4 lines starting with `weights`), and the operator's record of one in-place restart.
inline void ExpectResumedInPlace(const JobRun& run, const std::string& killed,
                                 const std::string& weights_prefix = "WEIGHTS ") {
  EXPECT_EQ(run.Lines(killed).size(), 1u) << run.AllLogs();
  EXPECT_EQ(run.pods.size(), 2u);  // nothing was recreated
  const std::vector<std::string> resumed = run.Lines("RESUMED ");
  ASSERT_EQ(resumed.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(resumed, "rank"), (std::set<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(Fields(resumed, "epoch"), std::set<std::string>{"1"});    // epoch 0 was saved
  EXPECT_EQ(Fields(resumed, "attempt"), std::set<std::string>{"1"});  // the restart count
  const std::vector<std::string> weights = run.Lines(weights_prefix);
  ASSERT_EQ(weights.size(), 4u) << run.AllLogs();
  EXPECT_EQ(Fields(weights, "sha").size(), 1u) << run.AllLogs();
  const nlohmann::json& status = run.job["status"];
  EXPECT_EQ(status.value("restarts", nlohmann::json::object()).value("inPlace", -1), 1)
      << status.dump(2);
  EXPECT_EQ(status.value("lastRestart", nlohmann::json::object()).value("mode", ""), "InPlace")
      << status.dump(2);
}

// The job's condition of `type` (an empty object if absent).
inline nlohmann::json Condition(const nlohmann::json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return {};
  for (const nlohmann::json& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type) return c;
  }
  return nlohmann::json::object();
}

}  // namespace lockstep::e2e
