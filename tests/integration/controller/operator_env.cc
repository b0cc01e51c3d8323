#include "tests/integration/controller/operator_env.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <thread>

#include "tests/integration/kube/test_env.h"
#include "tests/testing/loopback.h"

namespace lockstep::controller::testing {

using nlohmann::json;

namespace {

std::string KubectlPath() {
  // hack/test.sh puts the cluster tools on PATH; fall back to the tools cache.
  if (std::system("command -v kubectl >/dev/null 2>&1") == 0) return "kubectl";
  const char* cache = std::getenv("LOCKSTEP_CACHE");
  const char* home = std::getenv("HOME");
  std::string base = cache != nullptr ? cache : std::string(home ? home : "/root") + "/.cache/lockstep";
  return base + "/tools/bin/kubectl";
}

}  // namespace

int Kubectl(const std::string& args) {
  const int rc = std::system((KubectlPath() + " " + args).c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Status InstallCrd() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [] {
    const std::string crds = std::string(LOCKSTEP_SOURCE_DIR) + "/crds/";
    if (Kubectl("apply --server-side --force-conflicts -f " + crds + " >/dev/null") != 0 ||
        Kubectl("wait --for=condition=Established crd/trainingjobs.lockstep.dev"
                " crd/clustertrainingtemplates.lockstep.dev crd/trainingtemplates.lockstep.dev"
                " --timeout=60s >/dev/null") != 0) {
      result = InternalError("cannot install the TrainingJob CRD");
    }
  });
  return result;
}

StatusOr<std::string> HttpGet(int port, const std::string& path) {
  const lockstep::testing::HttpReply reply = lockstep::testing::LoopbackHttp(port, "GET", path);
  if (reply.status != 200) {
    // The body too: a 503 from /readyz names the caches it waits for.
    return UnavailableError("HTTP " + std::to_string(reply.status) + " for " + path + ": " +
                            reply.body);
  }
  return reply.body;
}

int LeaderStatus(int port) {
  StatusOr<std::string> body = HttpGet(port, "/metrics");
  std::smatch m;
  if (!body.ok() ||
      !std::regex_search(*body, m, std::regex("leader_election_master_status\\{[^}]*\\} ([01])"))) {
    return -1;
  }
  return std::stoi(m[1]);
}

OperatorProcess::OperatorProcess(std::vector<std::string> namespaces,
                                 std::vector<std::string> extra_args)
    : namespaces_(std::move(namespaces)), extra_args_(std::move(extra_args)) {
  log_path_ = "/tmp/lockstep-operator-" + kube::testing::RandomSuffix() + ".log";
}

OperatorProcess::~OperatorProcess() {
  if (pid_ > 0) Kill(SIGKILL);
  // The log is for reading a failure; a binary whose tests all passed leaves none behind.
  if (::testing::UnitTest::GetInstance()->failed_test_count() == 0) {
    std::remove(log_path_.c_str());
  } else {
    std::fprintf(stderr, "operator log kept: %s\n", log_path_.c_str());
  }
}

Status OperatorProcess::Start() {
  metrics_port_ = FreePort();
  health_port_ = FreePort();  // never the same as the first (free_port.h)
  std::vector<std::string> args = {
      LOCKSTEP_OPERATOR_BIN,
      "--metrics-bind-address=127.0.0.1:" + std::to_string(metrics_port_),
      "--health-probe-bind-address=127.0.0.1:" + std::to_string(health_port_),
      "--launcher-image=lockstep/launcher:test", "--workers=4", "--log-format=text",
      // These tests bind pods themselves to drive the lifecycle pod by pod.
      "--gang-scheduler=false"};
  for (const std::string& ns : namespaces_) args.push_back("--namespace=" + ns);
  for (const std::string& a : extra_args_) args.push_back(a);
  pid_ = ::fork();
  if (pid_ < 0) return InternalError("fork failed");
  if (pid_ == 0) {
    int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return Status::Ok();
}

void OperatorProcess::Kill(int sig) {
  if (pid_ <= 0) return;
  ::kill(pid_, sig);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  last_exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  pid_ = -1;
}

void OperatorProcess::Signal(int sig) {
  if (pid_ > 0) ::kill(pid_, sig);
}

bool OperatorProcess::WaitExit(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      last_exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      pid_ = -1;
      return true;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool OperatorProcess::WaitReady(std::chrono::milliseconds timeout) {
  return kube::testing::WaitFor(
      [this] {
        StatusOr<std::string> ready = HttpGet(health_port_, "/readyz");
        ready_answer_ = ready.ok() ? "ready" : ready.status().message();
        return ready.ok();
      },
      timeout, std::chrono::milliseconds(100));
}

json MakeJob(const std::string& name, int replicas,
             const std::function<void(json&)>& mutate) {
  json job = {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"framework", "PyTorch"},
        {"replicas", replicas},
        {"template",
         {{"spec",
           {{"containers",
             json::array({{{"name", "trainer"},
                           {"image", "lockstep/examples:dev"},
                           {"command", json::array({"python", "train.py"})},
                           {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}})}}}}}}}};
  if (mutate) mutate(job);
  return job;
}

json KwokNode(const std::string& name, const std::string& pool_label, const std::string& pool,
              int gpus) {
  const json capacity = {{"cpu", "96"},
                         {"memory", "1536Gi"},
                         {"pods", "110"},
                         {"nvidia.com/gpu", std::to_string(gpus)}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", {{"kubernetes.io/hostname", name}, {"type", "kwok"}, {pool_label, pool}}},
        {"annotations", {{"kwok.x-k8s.io/node", "fake"}, {"node.alpha.kubernetes.io/ttl", "0"}}}}},
      {"spec", json::object()},
      {"status", {{"capacity", capacity}, {"allocatable", capacity}}}};
}

json PoolJob(const std::string& name, int replicas, const std::string& pool_label,
             const std::string& pool, int gpus) {
  const json resources = {
      {"cpu", "1"}, {"memory", "1Gi"}, {"nvidia.com/gpu", std::to_string(gpus)}};
  const json container = {{"name", "trainer"},
                          {"image", "lockstep/examples:dev"},
                          {"command", json::array({"python", "train.py"})},
                          {"resources", {{"requests", resources}, {"limits", resources}}}};
  return {
      {"apiVersion", "lockstep.dev/v1alpha1"},
      {"kind", "TrainingJob"},
      {"metadata", {{"name", name}}},
      {"spec",
       {{"framework", "Generic"},
        {"replicas", replicas},
        {"failurePolicy",
         {{"restartMode", "Recreate"}, {"backoff", {{"initialSeconds", 0}, {"maxSeconds", 0}}}}},
        {"template",
         {{"spec",
           {{"nodeSelector", {{pool_label, pool}}}, {"containers", json::array({container})}}}}}}}};
}

StatusOr<std::vector<json>> ListJobPods(kube::RestClient& client, const std::string& ns,
                                        const std::string& job) {
  kube::ListOptions opts;
  opts.label_selector = "lockstep.dev/job-name=" + job;
  LS_ASSIGN_OR_RETURN(kube::ListResult list, client.List(kube::resources::Pods(), ns, opts));
  std::vector<json> out;
  for (json& p : list.items) out.push_back(std::move(p));
  return out;
}

Status BindJobPods(kube::RestClient& client, const std::string& ns, const std::string& job) {
  LS_ASSIGN_OR_RETURN(std::vector<json> pods, ListJobPods(client, ns, job));
  int node = 0;
  for (const json& pod : pods) {
    const std::string name = pod["metadata"]["name"];
    if (pod["spec"].contains("nodeName")) continue;
    json binding = {{"apiVersion", "v1"},
                    {"kind", "Binding"},
                    {"metadata", {{"name", name}}},
                    {"target", {{"apiVersion", "v1"},
                                {"kind", "Node"},
                                {"name", "gpu-node-" + std::to_string(node++ % 8)}}}};
    StatusOr<json> r = client.CreateSubresource(kube::resources::Pods(), ns, name, "binding",
                                                binding);
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Status FinishPod(kube::RestClient& client, const std::string& ns, const std::string& pod,
                 bool succeeded, int exit_code) {
  json terminated = {{"exitCode", succeeded ? 0 : exit_code},
                     {"reason", succeeded ? "Completed" : "Error"}};
  json patch = {{"status",
                 {{"phase", succeeded ? "Succeeded" : "Failed"},
                  {"containerStatuses",
                   json::array({{{"name", "trainer"},
                                 {"ready", false},
                                 {"restartCount", 0},
                                 {"image", "lockstep/examples:dev"},
                                 {"imageID", ""},
                                 {"state", {{"terminated", terminated}}}}})}}}};
  return client.MergePatch(kube::resources::Pods(), ns, pod, patch, "status").status();
}

std::string ConditionStatus(const json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return "";
  for (const json& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type) return c.value("status", "");
  }
  return "";
}

std::string ConditionReason(const json& job, const std::string& type) {
  if (!job.contains("status") || !job["status"].contains("conditions")) return "";
  for (const json& c : job["status"]["conditions"]) {
    if (c.value("type", "") == type) return c.value("reason", "");
  }
  return "";
}

bool ApplyDenyPolicy(const std::string& name, const std::string& ns, const AdmissionMatch& match,
                     const std::string& expression, const std::string& message) {
  const std::string manifest = R"({"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
     "metadata": {"name": ")" + name + R"("},
     "spec": {"failurePolicy": "Fail",
              "matchConstraints": {"resourceRules": [{"apiGroups": [)" +
                               json(match.group).dump() + R"(],
                "apiVersions": [)" + json(match.version).dump() + R"(], "operations": [)" +
                               json(match.operation).dump() + R"(],
                "resources": [)" + json(match.resource).dump() + R"(]}]},
              "validations": [{"expression": )" + json(expression).dump() +
                               R"(, "message": )" + json(message).dump() + R"(}]}},
    {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
     "metadata": {"name": ")" + name + R"("},
     "spec": {"policyName": ")" + name + R"(", "validationActions": ["Deny"],
              "matchResources": {"namespaceSelector": {"matchLabels":
                {"kubernetes.io/metadata.name": ")" + ns + R"("}}}}}]})";
  return Kubectl("apply -f - >/dev/null <<'EOF'\n" + manifest + "\nEOF") == 0;
}

void DeleteDenyPolicy(const std::string& name) {
  Kubectl("delete validatingadmissionpolicybinding,validatingadmissionpolicy " + name +
          " --ignore-not-found >/dev/null 2>&1");
}

RefuseStatusWrites::RefuseStatusWrites(const std::string& ns, const std::string& expression,
                                       const std::string& message)
    : name_("lockstep-refuse-status-" + ns) {
  ok_ = ApplyDenyPolicy(name_, ns, {"lockstep.dev", "*", "UPDATE", "trainingjobs/status"},
                        expression, message);
}

void RefuseStatusWrites::Remove() { DeleteDenyPolicy(name_); }

std::vector<std::string> EventReasons(kube::RestClient& client, const std::string& ns,
                                      const std::string& name) {
  kube::ListOptions opts;
  opts.field_selector = "involvedObject.name=" + name;
  std::vector<std::string> out;
  StatusOr<kube::ListResult> list = client.List(kube::resources::Events(), ns, opts);
  if (!list.ok()) return out;
  for (const json& e : list->items) out.push_back(e.value("reason", ""));
  return out;
}

StatusOr<json> WaitForJob(kube::RestClient& client, const std::string& ns,
                          const std::string& name, const std::function<bool(const json&)>& pred,
                          std::chrono::milliseconds timeout) {
  json last;
  Status err;
  const bool ok = kube::testing::WaitFor(
      [&] {
        StatusOr<json> j = client.Get(kube::resources::TrainingJobs(), ns, name);
        if (!j.ok()) {
          err = j.status();
          return false;
        }
        last = std::move(j).value();
        return pred(last);
      },
      timeout, std::chrono::milliseconds(100));
  if (!ok) {
    return DeadlineExceededError("job " + ns + "/" + name + " never reached the state; last: " +
                                 (last.is_null() ? err.ToString() : last.dump()));
  }
  return last;
}

}  // namespace lockstep::controller::testing
