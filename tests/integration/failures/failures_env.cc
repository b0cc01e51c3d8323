#include "tests/integration/failures/failures_env.h"

#include <fstream>
#include <sstream>

#include "operator/api/time.h"

namespace lockstep::failures::testing {

using controller::testing::HttpGet;
using controller::testing::OperatorProcess;
using kube::testing::WaitFor;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<kube::testing::Cluster> FailuresTest::cluster_;
std::unique_ptr<kube::testing::TestNamespace> FailuresTest::ns_;
std::unique_ptr<OperatorProcess> FailuresTest::op_;

namespace {

const char kJobLabel[] = "lockstep.dev/job-name";
const char kAttemptLabel[] = "lockstep.dev/attempt";

std::optional<Clock::time_point> Parse(const json& obj, const json::json_pointer& ptr) {
  if (!obj.contains(ptr) || !obj.at(ptr).is_string()) return std::nullopt;
  StatusOr<Clock::time_point> t = api::ParseTime(obj.at(ptr).get<std::string>());
  if (!t.ok()) return std::nullopt;
  return *t;
}

// Prometheus text format: `name{k="v",...} value`. Enough for the operator's own samples.
bool ParseSample(const std::string& line, const std::string& name,
                 std::vector<std::pair<std::string, std::string>>* labels, double* value) {
  if (line.rfind(name, 0) != 0 || line.size() <= name.size()) return false;
  size_t i = name.size();
  labels->clear();
  if (line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const size_t eq = line.find('=', i);
      if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return false;
      std::string key = line.substr(i, eq - i);
      std::string val;
      size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) ++j;
        val.push_back(line[j]);
      }
      labels->emplace_back(std::move(key), std::move(val));
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    ++i;  // '}'
  }
  if (i >= line.size() || line[i] != ' ') return false;
  *value = std::strtod(line.c_str() + i + 1, nullptr);
  return true;
}

}  // namespace

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Status FailuresTest::StartOperator() {
  op_ = std::make_unique<OperatorProcess>(
      std::vector<std::string>{ns_->name()},
      std::vector<std::string>{"--gang-scheduler=true",
                               "--node-lease-grace=" + std::to_string(lease_grace_seconds_) + "s"});
  LS_RETURN_IF_ERROR(op_->Start());
  if (!op_->WaitReady(seconds(30))) {
    return UnavailableError("the operator did not become ready (" + op_->ready_answer() +
                            "); log: " + op_->log_path());
  }
  return Status::Ok();
}

void FailuresTest::SetUpTestSuite() {
  if (std::getenv("KUBECONFIG") == nullptr) return;
  StatusOr<kube::testing::Cluster> c = kube::testing::Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  cluster_ = std::make_unique<kube::testing::Cluster>(std::move(c).value());
  ASSERT_TRUE(controller::testing::InstallCrd().ok());
  const std::string policy =
      std::string(LOCKSTEP_SOURCE_DIR) + "/tests/integration/failures/stop-heartbeat-policy.yaml";
  ASSERT_EQ(controller::testing::Kubectl("apply --server-side --force-conflicts -f " + policy +
                                         " >/dev/null"),
            0);
  ns_ = std::make_unique<kube::testing::TestNamespace>(*cluster_->client, "fail");
  ASSERT_TRUE(ns_->status().ok()) << ns_->status();
  Status started = StartOperator();
  ASSERT_TRUE(started.ok()) << started;
}

void FailuresTest::TearDownTestSuite() {
  if (op_ && op_->Running()) {
    op_->Kill(SIGTERM);
    EXPECT_EQ(op_->last_exit(), 0)
        << "the operator did not shut down cleanly; log: " << op_->log_path();
  }
  op_.reset();
  ns_.reset();
  cluster_.reset();
}

void FailuresTest::SetUp() {
  LS_REQUIRE_CLUSTER();
  ASSERT_TRUE(cluster_ && ns_ && op_) << "suite set-up failed";
  ASSERT_TRUE(op_->Running()) << "the operator died in an earlier test; log: " << op_->log_path();
  pool_ = "ft-" + kube::testing::RandomSuffix();
}

void FailuresTest::TearDown() {
  if (!cluster_) return;
  if (HasFailure() && op_) {
    // The operator's lines about this test's jobs and nodes, for the report.
    std::ifstream log(op_->log_path());
    std::string line;
    std::vector<std::string> hits;
    while (std::getline(log, line)) {
      bool mine = line.find(pool_) != std::string::npos;
      for (const std::string& j : jobs_) mine = mine || line.find(j) != std::string::npos;
      if (mine) hits.push_back(line);
    }
    const size_t from = hits.size() > 60 ? hits.size() - 60 : 0;
    std::cerr << "--- operator log (" << op_->log_path() << "), last lines about " << pool_
              << " ---\n";
    for (size_t i = from; i < hits.size(); ++i) std::cerr << hits[i] << "\n";
  }
  kube::DeleteOptions force;
  force.grace_period_seconds = 0;
  for (const std::string& job : jobs_) {
    client().Delete(kube::resources::TrainingJobs(), ns(), job).status().IgnoreError();
  }
  for (const std::string& job : jobs_) {
    for (const json& pod : Pods(job)) {
      client()
          .Delete(kube::resources::Pods(), ns(), pod["metadata"]["name"], force)
          .status()
          .IgnoreError();
    }
  }
  for (const std::string& node : nodes_) {
    client().Delete(kube::resources::Nodes(), "", node).status().IgnoreError();
  }
}

std::vector<std::string> FailuresTest::CreateNodes(int count, int gpus) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const std::string name = pool_ + "-n" + std::to_string(nodes_.size());
    StatusOr<json> created = client().Create(
        kube::resources::Nodes(), "", controller::testing::KwokNode(name, kPoolLabel, pool_, gpus));
    EXPECT_TRUE(created.ok()) << created.status();
    nodes_.push_back(name);
    names.push_back(name);
  }
  for (const std::string& name : names) {
    EXPECT_TRUE(WaitNodeReady(name, seconds(60))) << name << " never became Ready";
    EXPECT_TRUE(WaitFor([&] { return LeaseRenewTime(name).has_value(); }, seconds(30)))
        << name << " never got a Lease";
  }
  return names;
}

void FailuresTest::StopHeartbeat(const std::string& node) { SetHeartbeatLabel(node, "stopped"); }

void FailuresTest::RestoreHeartbeat(const std::string& node) { SetHeartbeatLabel(node, nullptr); }

void FailuresTest::SetHeartbeatLabel(const std::string& node, const json& value) {
  // The Lease first: from then on kwok's renewals are refused (stop-heartbeat-policy.yaml).
  const json patch = {{"metadata", {{"labels", {{kHeartbeatLabel, value}}}}}};
  StatusOr<json> lease =
      client().MergePatch(kube::resources::Leases(), "kube-node-lease", node, patch);
  ASSERT_TRUE(lease.ok()) << lease.status();
  StatusOr<json> r = client().MergePatch(kube::resources::Nodes(), "", node, patch);
  ASSERT_TRUE(r.ok()) << r.status();
}

void FailuresTest::SetReady(const std::string& node, const std::string& status) {
  // kwok would write Ready=True back on its next status update: stop its writes first.
  StopHeartbeat(node);
  StatusOr<json> got = client().Get(kube::resources::Nodes(), "", node);
  ASSERT_TRUE(got.ok()) << got.status();
  json conditions = got->value("/status/conditions"_json_pointer, json::array());
  const std::string now = api::FormatTime(Clock::now());
  bool found = false;
  for (json& c : conditions) {
    if (c.value("type", "") != "Ready") continue;
    c["status"] = status;
    c["reason"] = "KubeletStopped";  // what a dying kubelet / the node controller would say
    c["message"] = "set by the failure test";
    c["lastTransitionTime"] = now;
    c["lastHeartbeatTime"] = now;
    found = true;
  }
  ASSERT_TRUE(found) << node << " has no Ready condition";
  StatusOr<json> r = client().MergePatch(kube::resources::Nodes(), "", node,
                                         {{"status", {{"conditions", conditions}}}}, "status");
  ASSERT_TRUE(r.ok()) << r.status();
}

void FailuresTest::TaintNoExecute(const std::string& node) {
  const json taint = {{"key", "lockstep.dev/test-fault"},
                      {"value", "hardware"},
                      {"effect", "NoExecute"},
                      {"timeAdded", api::FormatTime(Clock::now())}};
  StatusOr<json> r = client().MergePatch(kube::resources::Nodes(), "", node,
                                         {{"spec", {{"taints", json::array({taint})}}}});
  ASSERT_TRUE(r.ok()) << r.status();
}

void FailuresTest::DeleteNode(const std::string& node) {
  StatusOr<json> r = client().Delete(kube::resources::Nodes(), "", node);
  ASSERT_TRUE(r.ok()) << r.status();
}

bool FailuresTest::WaitNodeReady(const std::string& node, seconds timeout) {
  return WaitFor(
      [&] {
        StatusOr<json> got = client().Get(kube::resources::Nodes(), "", node);
        if (!got.ok()) return false;
        for (const json& c : got->value("/status/conditions"_json_pointer, json::array())) {
          if (c.value("type", "") == "Ready") return c.value("status", "") == "True";
        }
        return false;
      },
      timeout, milliseconds(200));
}

std::optional<Clock::time_point> FailuresTest::LeaseRenewTime(const std::string& node) {
  StatusOr<json> lease = client().Get(kube::resources::Leases(), "kube-node-lease", node);
  if (!lease.ok()) return std::nullopt;
  return Parse(*lease, "/spec/renewTime"_json_pointer);
}

json FailuresTest::MakeJob(const std::string& name, int replicas,
                           const std::function<void(json&)>& mutate) {
  json job = controller::testing::PoolJob(name, replicas, kPoolLabel, pool_, 8);
  if (mutate) mutate(job);
  return job;
}

void FailuresTest::CreateJob(const json& job) {
  jobs_.push_back(job["metadata"]["name"]);
  StatusOr<json> r = client().Create(kube::resources::TrainingJobs(), ns(), job);
  ASSERT_TRUE(r.ok()) << r.status();
}

StatusOr<json> FailuresTest::GetJob(const std::string& name) {
  return client().Get(kube::resources::TrainingJobs(), ns(), name);
}

StatusOr<json> FailuresTest::WaitForJob(const std::string& name,
                                        const std::function<bool(const json&)>& pred,
                                        milliseconds timeout) {
  return controller::testing::WaitForJob(client(), ns(), name, pred, timeout);
}

std::vector<json> FailuresTest::Pods(const std::string& job) {
  kube::ListOptions opts;
  opts.label_selector = std::string(kJobLabel) + "=" + job;
  StatusOr<kube::ListResult> list = client().List(kube::resources::Pods(), ns(), opts);
  if (!list.ok()) return {};
  return std::move(list->items);
}

std::vector<json> FailuresTest::RunningAttempt(const std::string& job, int attempt, int count) {
  std::vector<json> pods = Pods(job);
  if (static_cast<int>(pods.size()) != count) return {};
  for (const json& pod : pods) {
    const std::string a = pod["metadata"].value("/labels"_json_pointer / kAttemptLabel, "");
    if (a != std::to_string(attempt)) return {};
    if (pod["metadata"].contains("deletionTimestamp")) return {};
    if (pod["spec"].value("nodeName", "").empty()) return {};
    if (pod["status"].value("phase", "") != "Running") return {};
  }
  return pods;
}

std::optional<Clock::time_point> FailuresTest::WaitRunningAttempt(const std::string& job,
                                                                  int attempt, int count,
                                                                  seconds timeout) {
  std::optional<Clock::time_point> seen;
  WaitFor(
      [&] {
        if (RunningAttempt(job, attempt, count).empty()) return false;
        seen = Clock::now();
        return true;
      },
      timeout, milliseconds(100));
  return seen;
}

void FailuresTest::FailPod(const std::string& pod, int exit_code) {
  Status s = controller::testing::FinishPod(client(), ns(), pod, /*succeeded=*/false, exit_code);
  ASSERT_TRUE(s.ok()) << s;
}

void FailuresTest::DisruptPod(const std::string& pod) {
  const std::string now = api::FormatTime(Clock::now());
  const json patch = {{"status",
                       {{"phase", "Failed"},
                        {"reason", "Evicted"},
                        {"conditions", json::array({{{"type", "DisruptionTarget"},
                                                     {"status", "True"},
                                                     {"reason", "EvictionByEvictionAPI"},
                                                     {"message", "Eviction API: evicting"},
                                                     {"lastTransitionTime", now}}})}}}};
  StatusOr<json> r = client().MergePatch(kube::resources::Pods(), ns(), pod, patch, "status");
  ASSERT_TRUE(r.ok()) << r.status();
}

std::vector<json> FailuresTest::JobEvents(const std::string& job) {
  kube::ListOptions opts;
  opts.field_selector = "involvedObject.name=" + job;
  StatusOr<kube::ListResult> list = client().List(kube::resources::Events(), ns(), opts);
  if (!list.ok()) return {};
  return std::move(list->items);
}

json FailuresTest::FindEvent(const std::string& job, const std::string& reason) {
  for (json& e : JobEvents(job)) {
    if (e.value("reason", "") == reason) return std::move(e);
  }
  return nullptr;
}

json FailuresTest::WaitEvent(const std::string& job, const std::string& reason,
                             std::chrono::milliseconds timeout) {
  json found;
  kube::testing::WaitFor([&] { return !(found = FindEvent(job, reason)).is_null(); }, timeout);
  return found;
}

double FailuresTest::Metric(const std::string& name,
                            const std::vector<std::pair<std::string, std::string>>& labels) {
  StatusOr<std::string> body = HttpGet(op_->metrics_port(), "/metrics");
  if (!body.ok()) return -1;
  std::istringstream in(*body);
  std::string line;
  double sum = 0;
  std::vector<std::pair<std::string, std::string>> have;
  while (std::getline(in, line)) {
    double value = 0;
    if (!ParseSample(line, name, &have, &value)) continue;
    bool match = true;
    for (const auto& want : labels) {
      bool found = false;
      for (const auto& h : have) found = found || h == want;
      match = match && found;
    }
    if (match) sum += value;
  }
  return sum;
}

int FailuresTest::Attempt(const json& job) { return job.value("/status/attempt"_json_pointer, 0); }

std::string FailuresTest::State(const json& job) {
  return job.value("/status/state"_json_pointer, std::string());
}

json FailuresTest::Excluded(const json& job, const std::string& node) {
  for (const json& e : job.value("/status/excludedNodes"_json_pointer, json::array())) {
    if (e.value("name", "") == node) return e;
  }
  return nullptr;
}

}  // namespace lockstep::failures::testing
