#include "tests/e2e/frameworks/framework_cluster.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "operator/api/network_policy.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "tests/e2e/agent/host_command.h"
#include "tests/integration/kube/test_env.h"
#include "tests/testing/host_state.h"
#include "tests/testing/port_fence.h"
#include "tests/testing/random_suffix.h"
#include "tests/testing/yaml_json.h"

extern char** environ;

namespace lockstep::e2e {

using ::lockstep::testing::ListeningTcpPortsOf;
using ::lockstep::testing::MarkedProcesses;
using ::lockstep::testing::OpenToAnyone;
using ::lockstep::testing::ReadWholeFile;
using ::lockstep::testing::SpawnAndAwaitLine;
using ::lockstep::testing::YamlToJson;
using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
namespace fs = std::filesystem;

namespace {

constexpr char kMarkerName[] = "LS_FW_E2E_MARKER";
constexpr char kJobMarkerName[] = "LS_FW_E2E_JOB";
constexpr char kBlockLabel[] = "topology.lockstep.dev/block";

// Twice a second: a job's poll is a GET of the job and a LIST of its pods. At 10 a second the
// two framework tests running side by side were 31 of the API server's 42 requests a second and
// most of its ~0.25 core (2026-12-03), on the 2 cores the jobs under test need. Nothing here
// times a job finer than a second.
bool Poll(const std::function<bool()>& done, milliseconds timeout) {
  return kube::testing::WaitFor(done, timeout, milliseconds(500));
}

std::string Python() {
  const std::string venv = std::string(LOCKSTEP_SOURCE_DIR) + "/.venv/bin/python";
  return fs::exists(venv) ? venv : "/usr/bin/python3";
}

// A /24 of the test range no bridge on this host uses yet: framework binaries run side by side.
StatusOr<std::string> FreeSubnet() {
  LS_ASSIGN_OR_RETURN(const std::string addrs, RunHostCommand({"ip", "-o", "-4", "addr", "show"}));
  std::random_device random;
  for (int tries = 0; tries < 100; ++tries) {
    const std::string prefix = "10.213." + std::to_string(random() % 250 + 1) + ".";
    if (addrs.find(prefix) == std::string::npos) return prefix + "0/24";
  }
  return UnavailableError("no free /24 in 10.213.0.0/16:\n" + addrs);
}

}  // namespace

std::string JobRun::state() const {
  return job.contains("status") ? job["status"].value("state", "") : "";
}

std::vector<std::string> JobRun::Lines(const std::string& prefix) const {
  std::vector<std::string> out;
  for (const Pod& pod : pods) {
    std::istringstream in(pod.log);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind(prefix, 0) == 0) out.push_back(line);
    }
  }
  return out;
}

std::string JobRun::LogTails(size_t lines) const {
  std::string out;
  for (const Pod& pod : pods) {
    std::vector<std::string> all;
    std::istringstream in(pod.log);
    for (std::string line; std::getline(in, line);) all.push_back(line.substr(0, 240));
    out += "----- " + pod.name + " (attempt " + std::to_string(pod.attempt) + ", last " +
           std::to_string(std::min(lines, all.size())) + " of " + std::to_string(all.size()) +
           " lines)\n";
    for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
      out += all[i] + "\n";
    }
  }
  return out;
}

std::string JobRun::AllLogs() const {
  std::string out;
  for (const Pod& pod : pods) {
    out += "----- " + pod.name + " (attempt " + std::to_string(pod.attempt) + ", " + pod.node +
           ", uid " + pod.uid + ")\n" + pod.log;
  }
  return out;
}

std::string FrameworkCluster::SkipReason() {
  if (std::getenv("KUBECONFIG") == nullptr) return "KUBECONFIG unset";
  if (geteuid() != 0) return "the test node agent needs root";
  return "";
}

std::string FrameworkCluster::HorovodSkipReason() {
  const char* without = std::getenv("LOCKSTEP_WITHOUT_HOROVOD");
  if (without != nullptr && std::string(without) == "1") {
    return "LOCKSTEP_WITHOUT_HOROVOD=1: hack/setup-venv-horovod.sh built no Horovod venv";
  }
  return "";
}

FrameworkCluster::FrameworkCluster(ClusterOptions options) : options_(std::move(options)) {
  id_ = ::lockstep::testing::RandomSuffix(5);
  ns_ = "fw-e2e-" + id_;
  block_ = "fw-e2e-" + id_;
  bridge_ = "lsf" + id_;
  marker_ = std::string(kMarkerName) + "=" + id_;
  state_dir_ = "/tmp/lockstep-fw-e2e-" + id_;
  work_dir_ = "/tmp/lockstep-fw-e2e-" + id_ + "-work";
  for (int i = 0; i < options_.nodes; ++i)
    nodes_.push_back("fw-e2e-" + id_ + "-" + std::to_string(i));
}

FrameworkCluster::~FrameworkCluster() {
  if (!stopped_) Stop();
}

Status FrameworkCluster::Start() {
  // Step 1: a client, the CRD and a namespace of this run's own.
  StatusOr<kube::ClusterConfig> config = kube::LoadDefaultConfig();
  LS_RETURN_IF_ERROR(config.status());
  LS_ASSIGN_OR_RETURN(std::unique_ptr<kube::Transport> transport, kube::NewCurlTransport(*config));
  client_ = std::make_unique<kube::RestClient>(
      std::shared_ptr<kube::Transport>(std::move(transport)), kube::testing::NoLimits());
  LS_RETURN_IF_ERROR(controller::testing::InstallCrd());
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}};
  LS_RETURN_IF_ERROR(client_->Create(kube::resources::Namespaces(), "", ns).status());
  LS_RETURN_IF_ERROR(kube::testing::WaitForDefaultServiceAccount(*client_, ns_));
  fs::create_directories(work_dir_);

  // Step 2: the agent's Nodes, then the operator (it then sees their capacity at once).
  LS_RETURN_IF_ERROR(StartAgent());
  std::vector<std::string> args = {"--gang-scheduler=true",
                                   "--launcher-image=lockstep/launcher:e2e"};
  for (const std::string& a : options_.operator_args) args.push_back(a);
  operator_ =
      std::make_unique<controller::testing::OperatorProcess>(std::vector<std::string>{ns_}, args);
  LS_RETURN_IF_ERROR(operator_->Start());
  if (!operator_->WaitReady(seconds(60))) {
    return UnavailableError("the operator never became ready (" + operator_->ready_answer() +
                            "):\n" + operator_log());
  }
  return Status::Ok();
}

Status FrameworkCluster::StartAgent() {
  LS_ASSIGN_OR_RETURN(const std::string subnet, FreeSubnet());
  std::vector<std::string> args = {LOCKSTEP_AGENT_BINARY};
  if (options_.horovod_image) {
    LS_ASSIGN_OR_RETURN(const std::string root, MakeHorovodImage());
    args.push_back("--image-map");
    args.push_back("lockstep/horovod=" + root);
  }
  for (const std::string& node : nodes_) {
    args.push_back("--node-name");
    args.push_back(node);
  }
  for (const std::string& a : {std::string("--gpus"),
                               std::string("8"),
                               std::string("--block"),
                               block_,
                               std::string("--rack"),
                               block_ + "-r0",
                               std::string("--launcher-binary"),
                               std::string(LOCKSTEP_LAUNCHER_BINARY),
                               std::string("--launcher-image"),
                               std::string("lockstep/launcher"),
                               std::string("--python"),
                               Python(),
                               std::string("--image-map"),
                               std::string("lockstep/examples=") + LOCKSTEP_SOURCE_DIR,
                               std::string("--state-dir"),
                               state_dir_,
                               std::string("--bridge"),
                               bridge_,
                               std::string("--subnet"),
                               subnet,
                               std::string("--heartbeat-ms"),
                               std::string("1000"),
                               std::string("--lease-duration-s"),
                               std::string("5")}) {
    args.push_back(a);
  }
  agent_log_ = work_dir_ + "/agent.log";
  // The agent prints "ready" once its Nodes are registered and its pod watches run.
  const bool ready =
      SpawnAndAwaitLine(std::move(args), agent_log_, "ready", seconds(60), &agent_pid_);
  if (agent_pid_ == 0) return InternalError("cannot start " + std::string(LOCKSTEP_AGENT_BINARY));
  if (!ready) return UnavailableError("the agent did not start:\n" + agent_log());
  return Status::Ok();
}

std::vector<std::string> FrameworkCluster::Stop() {
  std::vector<std::string> problems;
  if (stopped_) return problems;
  stopped_ = true;
  // The operator first, so it does not react to the Nodes going away.
  if (operator_ != nullptr) operator_->Kill(SIGTERM);
  if (agent_pid_ > 0) {
    kill(agent_pid_, SIGTERM);
    int wstatus = 0;
    const bool exited =
        Poll([&] { return waitpid(agent_pid_, &wstatus, WNOHANG) == agent_pid_; }, seconds(60));
    if (!exited) {
      kill(agent_pid_, SIGKILL);
      waitpid(agent_pid_, &wstatus, 0);
      problems.push_back("the agent did not exit within 60 s of SIGTERM");
    } else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
      problems.push_back("the agent exited with status " + std::to_string(wstatus));
    }
    agent_pid_ = 0;
    // The cleanup guarantees of docs/e2e.md.
    StatusOr<std::string> netns = RunHostCommand({"ip", "netns", "list"});
    if (!netns.ok() || netns->find(bridge_) != std::string::npos) {
      problems.push_back("network namespaces left: " +
                         (netns.ok() ? *netns : netns.status().ToString()));
    }
    StatusOr<std::string> links = RunHostCommand({"ip", "-o", "link", "show"});
    if (!links.ok() || links->find(bridge_) != std::string::npos) {
      problems.push_back("links left: " + (links.ok() ? *links : links.status().ToString()));
    }
    const std::string mounts = ReadWholeFile("/proc/self/mounts");
    if (mounts.find(bridge_) != std::string::npos || mounts.find(state_dir_) != std::string::npos) {
      problems.push_back("mounts left:\n" + mounts);
    }
    if (!MarkedProcesses(marker_).empty()) problems.push_back("pod processes survived the agent");
    if (fs::exists(state_dir_)) problems.push_back("the state dir " + state_dir_ + " was left");
    if (client_ != nullptr) {
      for (const std::string& node : nodes_) {
        if (!IsNotFound(client_->Get(kube::resources::Nodes(), "", node).status())) {
          problems.push_back("Node " + node + " was not deleted");
        }
      }
    }
  }
  if (client_ != nullptr) {
    client_->Delete(kube::resources::Namespaces(), "", ns_).status().IgnoreError();
  }
  if (problems.empty()) {
    std::error_code ec;
    fs::remove_all(work_dir_, ec);  // kept otherwise: the agent's log explains the leftovers
    if (operator_ != nullptr) fs::remove(operator_->log_path(), ec);
  }
  return problems;
}

StatusOr<std::string> FrameworkCluster::MakeHorovodImage() {
  const std::string venv_python = std::string(LOCKSTEP_SOURCE_DIR) + "/.venv-horovod/bin/python";
  if (!fs::exists(venv_python)) {
    return FailedPreconditionError(venv_python +
                                   " is missing: run hack/setup-venv-horovod.sh (or set "
                                   "LOCKSTEP_WITHOUT_HOROVOD=1 to skip the Horovod tests)");
  }
  // A wrapper, not a symlink: Python finds its venv from the path it was started by.
  const std::string root = work_dir_ + "/images/horovod";
  fs::create_directories(root + "/bin");
  std::ofstream(root + "/bin/python") << "#!/bin/sh\nexec " << venv_python << " \"$@\"\n";
  fs::permissions(root + "/bin/python", fs::perms::owner_all | fs::perms::group_read |
                                            fs::perms::group_exec | fs::perms::others_read |
                                            fs::perms::others_exec);
  std::error_code ec;
  fs::create_directory_symlink(std::string(LOCKSTEP_SOURCE_DIR) + "/examples", root + "/examples",
                               ec);
  if (ec) return InternalError("cannot link the examples into " + root + ": " + ec.message());
  return root;
}

void FrameworkCluster::MakeOurs(json& pod_template, const std::string& job) {
  json& spec = pod_template["spec"];
  spec["nodeSelector"][kBlockLabel] = block_;
  for (json& c : spec["containers"]) {
    if (!c.contains("env")) c["env"] = json::array();
    c["env"].push_back({{"name", kMarkerName}, {"value", id_}});
    c["env"].push_back({{"name", kJobMarkerName}, {"value", id_ + "/" + job}});
  }
  if (!spec.contains("volumes")) return;
  for (json& v : spec["volumes"]) {
    if (!v.contains("hostPath")) continue;
    const std::string dir = HostPathDir(job, v.value("name", ""));
    fs::create_directories(dir);
    v["hostPath"]["path"] = dir;
  }
}

std::string FrameworkCluster::HostPathDir(const std::string& job, const std::string& volume) const {
  return work_dir_ + "/" + job + "/" + volume;
}

StatusOr<json> FrameworkCluster::LoadExample(const std::string& file) {
  const std::string path = std::string(LOCKSTEP_SOURCE_DIR) + "/examples/local/" + file;
  json job;
  try {
    job = YamlToJson(YAML::LoadFile(path));
  } catch (const YAML::Exception& e) {
    return InvalidArgumentError(path + ": " + e.what());
  }
  job["metadata"]["namespace"] = ns_;
  return job;
}

Status FrameworkCluster::Create(json job) {
  // Made this run's here, after the test's edits: the job marker and the hostPath directories
  // follow the final name.
  const std::string name = job["metadata"].value("name", "");
  MakeOurs(job["spec"]["template"], name);
  if (job["spec"].contains("roles")) {
    for (json& role : job["spec"]["roles"]) MakeOurs(role["template"], name);
  }
  return client_->Create(kube::resources::TrainingJobs(), ns_, job).status();
}

StatusOr<json> FrameworkCluster::WaitFor(const std::string& name,
                                         const std::function<bool(const json&)>& pred,
                                         seconds timeout) {
  json last;
  Status err;
  const bool ok = Poll(
      [&] {
        Observe(name);
        StatusOr<json> j = client_->Get(kube::resources::TrainingJobs(), ns_, name);
        if (!j.ok()) {
          err = j.status();
          return false;
        }
        last = std::move(j).value();
        return pred(last);
      },
      timeout);
  if (!ok) {
    return DeadlineExceededError("job " + ns_ + "/" + name + " never reached the state; last: " +
                                 (last.is_null() ? err.ToString() : last.dump()));
  }
  return last;
}

void FrameworkCluster::Observe(const std::string& job) {
  StatusOr<std::vector<json>> pods = controller::testing::ListJobPods(*client_, ns_, job);
  if (!pods.ok()) return;
  for (json& pod : *pods) {
    std::string uid = pod["metadata"].value("uid", "");
    seen_pods_[job][uid] = std::move(pod);
  }
}

JobRun FrameworkCluster::Collect(const std::string& name) {
  JobRun run;
  StatusOr<json> job = client_->Get(kube::resources::TrainingJobs(), ns_, name);
  if (job.ok()) run.job = *job;
  Observe(name);
  // Pods a clean-pod policy deleted are gone from the API, but the agent keeps every pod's
  // directory (by uid) until it exits; the pods seen while waiting say which uid was which.
  for (const auto& [uid, pod] : seen_pods_[name]) {
    JobRun::Pod p;
    p.name = pod["metadata"].value("name", "");
    p.uid = uid;
    p.node = pod["spec"].value("nodeName", "");
    const json labels = pod["metadata"].value("labels", json::object());
    p.attempt = std::atoi(labels.value("lockstep.dev/attempt", "0").c_str());
    const std::string container = pod["spec"]["containers"][0].value("name", "");
    p.log = ReadWholeFile(state_dir_ + "/pods/" + uid + "/containers/" + container + ".log");
    run.pods.push_back(std::move(p));
  }
  return run;
}

StatusOr<JobRun> FrameworkCluster::Run(const json& job, seconds timeout) {
  const std::string name = job["metadata"].value("name", "");
  const auto start = std::chrono::steady_clock::now();
  LS_RETURN_IF_ERROR(Create(job));
  std::set<int> listening;
  StatusOr<json> done = WaitFor(
      name,
      [&](const json& j) {
        listening.merge(ListeningTcpPortsOf(JobProcesses(name)));
        const std::string state = j.contains("status") ? j["status"].value("state", "") : "";
        return state == "Succeeded" || state == "Failed";
      },
      timeout);
  JobRun run = Collect(name);
  run.listening_ports = std::move(listening);
  // The policy outlives the job's end (it goes with the job object), so it is read now.
  StatusOr<json> policy = client_->Get(kube::resources::NetworkPolicies(), ns_,
                                       api::NetworkPolicyName(name));
  for (int port : run.listening_ports) {
    if (!policy.ok() || OpenToAnyone(*policy, port)) run.open_to_anyone.insert(port);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!done.ok()) {
    // Its pods would otherwise keep the machine busy for the tests after this one.
    client_->Delete(kube::resources::TrainingJobs(), ns_, name).status().IgnoreError();
    // The tails first: CI shows the start and the end of a failure, not its middle.
    return DeadlineExceededError("job " + name + " did not end within " +
                                 std::to_string(timeout.count()) + " s; each pod's last lines:\n" +
                                 run.LogTails(8) + done.status().message() + "\n" + run.AllLogs());
  }
  return run;
}

std::vector<pid_t> FrameworkCluster::JobProcesses(const std::string& job) const {
  // The value ends the variable: NUL follows it in /proc/<pid>/environ.
  return MarkedProcesses(std::string(kJobMarkerName) + "=" + id_ + "/" + job +
                         std::string(1, '\0'));
}

Status FrameworkCluster::FailNode(const std::string& node) {
  return RunHostCommand({LOCKSTEP_AGENT_BINARY, "--fail-node", node, "--state-dir", state_dir_})
      .status();
}

std::string FrameworkCluster::agent_log() const { return ReadWholeFile(agent_log_); }

std::string FrameworkCluster::operator_log() const {
  return operator_ != nullptr ? ReadWholeFile(operator_->log_path()) : "";
}

}  // namespace lockstep::e2e
