#include "tests/chaos/chaos_env.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/rfc3339.h"
#include "tests/chaos/invariants.h"
#include "tests/integration/controller/operator_env.h"
#include "tests/testing/host_state.h"

namespace lockstep::chaos {
namespace {

constexpr char kPoolLabel[] = "lockstep.dev/test-pool";
constexpr char kAttemptLabel[] = "lockstep.dev/attempt";

int64_t ResourceVersion(const json& object) {
  const std::string rv = object.value("/metadata/resourceVersion"_json_pointer, "0");
  return std::strtoll(rv.c_str(), nullptr, 10);
}

}  // namespace

Scale ChaosScale() {
  Scale scale;
  const char* mode = std::getenv("LOCKSTEP_CHAOS");
  if (mode != nullptr && std::string(mode) == "long") {
    scale.long_run = true;
    scale.operations = 200;
    scale.max_live_jobs = 40;
    scale.restart_jobs = 50;
    scale.failover_rounds = 3;
  }
  return scale;
}

void Figure(const std::string& what, const std::string& text) {
  std::printf("CHAOS-FIGURE %s: %s\n", what.c_str(), text.c_str());
  std::fflush(stdout);
  ::testing::Test::RecordProperty(what, text);
}

// --- History ---

History::History(kube::RestClient& client, std::string ns) : client_(client), ns_(std::move(ns)) {
  jobs_.ref = kube::resources::TrainingJobs();
  pods_.ref = kube::resources::Pods();
}

History::~History() { Stop(); }

Status History::Start() {
  for (Stream* s : {&jobs_, &pods_}) {
    LS_RETURN_IF_ERROR(List(s));
    s->thread = std::thread([this, s] { Watch(s); });
  }
  return Status::Ok();
}

void History::Stop() {
  stop_ = true;
  for (Stream* s : {&jobs_, &pods_}) {
    if (s->thread.joinable()) s->thread.join();
  }
}

std::vector<Version> History::Jobs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.versions;
}

std::vector<std::pair<int64_t, int64_t>> History::JobGaps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.gaps;
}

std::vector<std::pair<int64_t, int64_t>> History::PodGaps() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.gaps;
}

std::vector<Version> History::Pods() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pods_.versions;
}

void History::Add(Stream* stream, kube::WatchEventType type, bool listed, json&& object) {
  Version v;
  v.rv = ResourceVersion(object);
  v.type = type;
  v.listed = listed;
  v.object = std::move(object);
  std::lock_guard<std::mutex> lock(mu_);
  stream->versions.push_back(std::move(v));
}

Status History::List(Stream* stream) {
  kube::ListOptions options;
  options.limit = 0;
  LS_ASSIGN_OR_RETURN(kube::ListResult list, client_.List(stream->ref, ns_, options));
  for (json& item : list.items) Add(stream, kube::WatchEventType::kAdded, true, std::move(item));
  stream->last_rv = list.resource_version;
  return Status::Ok();
}

// Watches from last_rv until stopped. A broken watch (the apiserver restarting) resumes from the
// last version seen; 410 Gone means the versions since then are lost: re-list, count a gap.
void History::Watch(Stream* stream) {
  while (!stop_) {
    kube::WatchOptions options;
    options.resource_version = stream->last_rv;
    options.timeout_seconds = 60;
    options.idle_timeout = std::chrono::seconds(30);
    options.cancel = &stop_;
    bool gone = false;
    Status s = client_.Watch(stream->ref, ns_, options, [&](kube::WatchEvent&& event) {
      if (event.type == kube::WatchEventType::kError) {
        gone = event.object.value("code", 0) == 410;
        return false;
      }
      const std::string rv = event.object.value("/metadata/resourceVersion"_json_pointer, "");
      if (!rv.empty()) stream->last_rv = rv;
      if (event.type != kube::WatchEventType::kBookmark) {
        Add(stream, event.type, false, std::move(event.object));
      }
      return true;
    });
    if (stop_) return;
    if (gone || kube::IsGone(s)) {
      ++gaps_;
      const int64_t after = std::strtoll(stream->last_rv.c_str(), nullptr, 10);
      while (!stop_ && !List(stream).ok()) std::this_thread::sleep_for(std::chrono::seconds(1));
      std::lock_guard<std::mutex> lock(mu_);
      stream->gaps.emplace_back(after, std::strtoll(stream->last_rv.c_str(), nullptr, 10));
    } else if (!s.ok()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
}

// --- NodePool ---

NodePool::NodePool(kube::RestClient& client, std::string name)
    : client_(client), name_(std::move(name)) {}

NodePool::~NodePool() {
  for (const std::string& node : nodes_) {
    client_.Delete(kube::resources::Nodes(), "", node).status().IgnoreError();
  }
}

Status NodePool::Create(int count, int gpus) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    const std::string name = name_ + "-n" + std::to_string(nodes_.size());
    LS_RETURN_IF_ERROR(client_
                           .Create(kube::resources::Nodes(), "",
                                   controller::testing::KwokNode(name, kPoolLabel, name_, gpus))
                           .status());
    nodes_.push_back(name);
    names.push_back(name);
  }
  for (const std::string& name : names) {
    const bool ready = kube::testing::WaitFor(
        [&] {
          StatusOr<json> n = client_.Get(kube::resources::Nodes(), "", name);
          if (!n.ok()) return false;
          for (const json& c : n->value("/status/conditions"_json_pointer, json::array())) {
            if (c.value("type", "") == "Ready" && c.value("status", "") == "True") return true;
          }
          return false;
        },
        std::chrono::seconds(60), std::chrono::milliseconds(200));
    if (!ready) return DeadlineExceededError("node " + name + " never became Ready");
  }
  return Status::Ok();
}

// --- jobs and pods ---

json ChaosJob(const std::string& name, int replicas, const std::string& pool, int gpus) {
  json job = controller::testing::PoolJob(name, replicas, kPoolLabel, pool, gpus);
  job["spec"]["failurePolicy"]["maxRestarts"] = 1000;
  return job;
}

std::vector<json> JobPods(kube::RestClient& client, const std::string& ns, const std::string& job) {
  StatusOr<std::vector<json>> pods = controller::testing::ListJobPods(client, ns, job);
  return pods.ok() ? std::move(pods).value() : std::vector<json>{};
}

std::vector<json> RunningAttempt(const std::vector<json>& pods, int attempt, int replicas) {
  if (static_cast<int>(pods.size()) != replicas) return {};
  for (const json& pod : pods) {
    const json& meta = pod["metadata"];
    if (meta.value("/labels"_json_pointer / kAttemptLabel, "") != std::to_string(attempt) ||
        meta.contains("deletionTimestamp") || pod["spec"].value("nodeName", "").empty() ||
        pod["status"].value("phase", "") != "Running") {
      return {};
    }
  }
  return pods;
}

int Attempt(const json& job) { return job.value("/status/attempt"_json_pointer, 0); }

std::string State(const json& job) { return job.value("/status/state"_json_pointer, ""); }

Status FinishPod(kube::RestClient& client, const std::string& ns, const std::string& pod,
                 bool succeeded) {
  return controller::testing::FinishPod(client, ns, pod, succeeded, /*exit_code=*/1);
}

// --- the fixture ---

void ChaosTest::Prepare(const std::string& prefix, int nodes) {
  StatusOr<kube::testing::Cluster> c = kube::testing::Connect();
  ASSERT_TRUE(c.ok()) << c.status();
  cluster_ = std::move(c).value();
  ASSERT_TRUE(controller::testing::InstallCrd().ok());
  ns_ = std::make_unique<kube::testing::TestNamespace>(client(), prefix);
  ASSERT_TRUE(ns_->status().ok()) << ns_->status();
  pool_ = std::make_unique<NodePool>(client(), ns_->name());
  Status created = pool_->Create(nodes, kPoolGpusPerNode);
  ASSERT_TRUE(created.ok()) << created;
  history_ = std::make_unique<History>(client(), ns_->name());
  Status started = history_->Start();
  ASSERT_TRUE(started.ok()) << started;
}

PodCreations ChaosTest::CheckHistory() {
  history_->Stop();
  const std::vector<Version> jobs = history_->Jobs();
  const std::vector<Version> pods = history_->Pods();
  for (const std::string& v : CountersThatWentBack(jobs)) ADD_FAILURE() << v;
  PodCreations creations = JudgePodCreations(jobs, pods, history_->JobGaps());
  for (const std::string& v : creations.out_of_turn) ADD_FAILURE() << v;
  for (const std::string& v : GpusHeldTwice(pods, kPoolGpusPerNode, history_->PodGaps())) {
    ADD_FAILURE() << v;
  }
  return creations;
}

// --- audit ---

StatusOr<std::string> AuditedKubeconfig(const std::string& user) {
  std::string cmd = std::string(LOCKSTEP_SOURCE_DIR) + "/hack/cluster.sh kubeconfig --user " +
                    user + " --group system:masters --group lockstep:audited";
  if (const char* name = std::getenv("LOCKSTEP_CLUSTER_NAME"); name != nullptr && *name != '\0') {
    cmd += " --name " + std::string(name);
  }
  int rc = 0;
  std::string path = ::lockstep::testing::ShellOutput(cmd, &rc);
  while (!path.empty() && (path.back() == '\n' || path.back() == ' ')) path.pop_back();
  if (rc != 0 || path.empty()) return InternalError("`" + cmd + "` failed");
  return path;
}

std::vector<AuditEvent> AuditedWrites(const std::string& kubeconfig, const std::string& user) {
  // hack/cluster.sh: <state>/users/<user>.kubeconfig, <state>/logs/audit.log.
  const std::filesystem::path log =
      std::filesystem::path(kubeconfig).parent_path().parent_path() / "logs" / "audit.log";
  std::vector<AuditEvent> out;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    const json e = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!e.is_object() || e.value("/user/username"_json_pointer, "") != user) continue;
    AuditEvent a;
    a.verb = e.value("verb", "");
    a.resource = e.value("/objectRef/resource"_json_pointer, "");
    a.subresource = e.value("/objectRef/subresource"_json_pointer, "");
    a.name = e.value("/objectRef/name"_json_pointer, "");
    a.code = e.value("/responseStatus/code"_json_pointer, 0);
    StatusOr<WallClock::time_point> t = ParseTime(e.value("requestReceivedTimestamp", ""));
    if (t.ok()) a.received = *t;
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace lockstep::chaos
