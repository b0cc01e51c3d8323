#include "tests/e2e/agent/pod_worker.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/log.h"
#include "tests/e2e/agent/host_command.h"
#include "tests/e2e/agent/pod_env.h"
#include "tests/e2e/agent/pod_json.h"
#include "tests/e2e/agent/pod_volumes.h"

namespace lockstep::e2e {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxTerminationMessage = 4096;  // the kubelet's limit per container
constexpr size_t kFallbackLogBytes = 2048;
constexpr int kFallbackLogLines = 80;

std::string ReadFileHead(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::string out(max, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

std::string LogTail(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = std::max<std::streamoff>(0, size - 16 * 1024);
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t pos = text.size();
  for (int lines = 0; lines <= kFallbackLogLines && pos > 0;) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) {
      pos = 0;
      break;
    }
    if (pos + 1 < text.size()) ++lines;
    if (lines > kFallbackLogLines) ++pos;
  }
  std::string tail = text.substr(pos == 0 ? 0 : pos);
  if (!tail.empty() && tail[0] == '\n') tail.erase(0, 1);
  if (tail.size() > kFallbackLogBytes) tail = tail.substr(tail.size() - kFallbackLogBytes);
  return tail;
}

}  // namespace

PodWorker::PodWorker(AgentContext ctx, json pod)
    : ctx_(std::move(ctx)),
      ns_(Str(pod, "/metadata/namespace")),
      name_(Str(pod, "/metadata/name")),
      uid_(Str(pod, "/metadata/uid")),
      node_(Str(pod, "/spec/nodeName")),
      key_(ns_ + "/" + name_),
      dir_(ctx_.state->PodDir(uid_)),
      pod_(std::move(pod)) {}

PodWorker::~PodWorker() {
  Kill();
  if (thread_.joinable()) thread_.join();
}

void PodWorker::Start() {
  Observe(Snapshot());
  thread_ = std::thread([this] { Run(); });
}

json PodWorker::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pod_;
}

void PodWorker::Observe(const json& pod) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Str(pod, "/metadata/uid") != uid_) return;
  pod_ = pod;
  const json meta = pod.value("metadata", json::object());
  if (!delete_grace_ && meta.contains("deletionTimestamp")) {
    delete_grace_ = meta.value("deletionGracePeriodSeconds", int64_t{30});
    log::Info("pod deletion requested",
              {{"pod", key_}, {"grace_s", std::to_string(*delete_grace_)}});
  }
  cv_.notify_all();
}

void PodWorker::Kill() {
  std::lock_guard<std::mutex> lock(mu_);
  kill_ = true;
  cv_.notify_all();
}

bool PodWorker::StopRequested() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kill_ || delete_grace_.has_value();
}

bool PodWorker::PreviouslyStarted() const {
  const json pod = Snapshot();
  const std::string phase = Str(pod, "/status/phase");
  if (phase == "Running") return true;
  for (const char* list : {"initContainerStatuses", "containerStatuses"}) {
    const json status = pod.value("status", json::object());
    for (const json& c : Array(status, list)) {
      const json state = c.value("state", json::object());
      if (state.contains("running") || state.contains("terminated")) return true;
    }
  }
  return false;
}

void PodWorker::Run() {
  const json pod = Snapshot();
  const json spec = pod.value("spec", json::object());
  for (const json& c : Array(spec, "initContainers")) {
    record_.init_containers.push_back(
        NewContainerRecord(c.value("name", ""), c.value("image", "")));
  }
  for (const json& c : Array(spec, "containers")) {
    record_.containers.push_back(NewContainerRecord(c.value("name", ""), c.value("image", "")));
  }
  record_.host_ip = ctx_.network->host_ip();
  const std::string now = NowRfc3339();
  record_.SetCondition("PodScheduled", true, now);
  record_.SetCondition("Initialized", false, now, "ContainersNotInitialized");
  record_.SetCondition("ContainersReady", false, now, "ContainersNotReady");
  record_.SetCondition("Ready", false, now, "ContainersNotReady");

  const bool terminal =
      Str(pod, "/status/phase") == "Succeeded" || Str(pod, "/status/phase") == "Failed";
  bool stopping = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping = kill_ || delete_grace_.has_value();
  }
  if (terminal) {
    // Finished before this agent started: nothing to run, only a deletion to honour.
  } else if (PreviouslyStarted()) {
    // Started by an earlier agent whose processes are gone: like a kubelet that lost its
    // containers under restartPolicy Never, the pod fails.
    record_.phase = "Failed";
    record_.reason = "NodeAgentRestarted";
    record_.message = "the test node agent restarted and lost this pod's processes";
    WriteStatus();
  } else if (!stopping) {
    RunPod(spec);
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return kill_ || delete_grace_.has_value(); });
  }
  DeleteObject();
  finished_ = true;
}

void PodWorker::RunPod(const json& spec) {
  record_.start_time = NowRfc3339();
  for (auto& c : record_.init_containers) c.reason = "PodInitializing";
  for (auto& c : record_.containers) c.reason = "ContainerCreating";
  WriteStatus();
  Status sandbox = SetUpSandbox();
  if (!sandbox.ok()) {
    log::Error("pod sandbox failed", {{"pod", key_}, {"error", sandbox.ToString()}});
    record_.phase = "Failed";
    record_.reason = "SandboxFailed";
    record_.message = sandbox.message();
    WriteStatus();
    TearDownSandbox();
    return;
  }
  WriteStatus();  // the pod IP
  const json init_specs = Array(spec, "initContainers");
  const json specs = Array(spec, "containers");
  bool ok = true;
  for (size_t i = 0; i < init_specs.size() && ok; ++i) {
    if (StopRequested()) {
      ok = false;
      break;
    }
    ContainerRecord& rec = record_.init_containers[i];
    StatusOr<pid_t> pid = LaunchContainer(init_specs[i], &rec);
    if (pid.ok()) {
      WriteStatus();
      WaitAll({{&init_specs[i], &rec, *pid}});
    }
    WriteStatus();
    ok = rec.state == ContainerRecord::State::kTerminated && rec.exit_code == 0;
  }
  if (ok && !StopRequested()) {
    record_.SetCondition("Initialized", true, NowRfc3339());
    std::vector<Running> running;
    for (size_t i = 0; i < specs.size(); ++i) {
      StatusOr<pid_t> pid = LaunchContainer(specs[i], &record_.containers[i]);
      if (pid.ok()) running.push_back({&specs[i], &record_.containers[i], *pid});
    }
    if (!running.empty()) record_.phase = "Running";
    if (running.size() == specs.size()) {
      record_.SetCondition("ContainersReady", true, NowRfc3339());
      record_.SetCondition("Ready", true, NowRfc3339());
    }
    WriteStatus();
    WaitAll(std::move(running));
  }
  bool all_zero = ok;
  for (const auto& c : record_.containers) {
    all_zero = all_zero && c.state == ContainerRecord::State::kTerminated && c.exit_code == 0;
  }
  record_.phase = all_zero ? "Succeeded" : "Failed";
  const std::string done = NowRfc3339();
  record_.SetCondition("ContainersReady", false, done, "PodCompleted");
  record_.SetCondition("Ready", false, done, "PodCompleted");
  TearDownSandbox();
  WriteStatus();
  log::Info("pod finished", {{"pod", key_}, {"phase", record_.phase}});
}

Status PodWorker::SetUpSandbox() {
  std::error_code ec;
  fs::create_directories(dir_ + "/containers", ec);
  fs::create_directories(dir_ + "/volumes", ec);
  if (ec) return InternalError("create " + dir_ + ": " + ec.message());
  const json pod = Snapshot();
  // Decided once: an image imported while the pod starts does not switch a container's path.
  for (const char* list : {"initContainers", "containers"}) {
    for (const json& c : Array(pod.value("spec", json::object()), list)) {
      std::optional<StoredImage> image;
      if (ctx_.image_store != nullptr) image = ctx_.image_store->Find(c.value("image", ""));
      if (image) stored_images_.emplace(c.value("name", ""), std::move(*image));
    }
  }
  PodVolumes volumes(*ctx_.client, *ctx_.state, pod, dir_,
                     PodRuntimeFields{record_.pod_ip, record_.host_ip});
  LS_ASSIGN_OR_RETURN(volume_dirs_, volumes.Prepare());
  LS_ASSIGN_OR_RETURN(std::vector<BindMount> mounts,
                      volumes.Mounts(
                          volume_dirs_,
                          [this](const json& c) {
                            return stored_images_.count(c.value("name", "")) == 0;
                          },
                          ctx_.images != nullptr ? ctx_.images->HostPaths()
                                                 : std::vector<std::string>{}));
  LS_ASSIGN_OR_RETURN(PodNet net, ctx_.network->Create());
  net_ = net;
  record_.pod_ip = net.ip;
  if (ctx_.kubernetes_service != nullptr) {
    LS_RETURN_IF_ERROR(
        RouteKubernetesService(net.name, *ctx_.kubernetes_service, ctx_.network->host_ip()));
  }
  HostsEntry self;
  self.ip = net.ip;
  self.hostname = Str(pod, "/spec/hostname");
  if (self.hostname.empty()) self.hostname = name_;
  self.hostname = self.hostname.substr(0, 63);
  self.subdomain = Str(pod, "/spec/subdomain");
  self.namespace_ = ns_;
  const std::string hosts_file = dir_ + "/hosts";
  LS_RETURN_IF_ERROR(ctx_.hosts->Add(key_, self, hosts_file));
  mounts.push_back({hosts_file, "/etc/hosts", false});
  PauseSpec pause{net.netns_path, self.hostname, std::move(mounts)};
  LS_ASSIGN_OR_RETURN(pause_pid_, StartPause(pause));
  log::Info("pod sandbox ready", {{"pod", key_}, {"ip", net.ip}, {"netns", net.name}});
  return Status::Ok();
}

void PodWorker::TearDownSandbox() {
  ctx_.hosts->Remove(key_);
  if (net_) {
    // Everything still in the pod's network namespace is the pod's, orphans included.
    SignalNetns(net_->netns_path, SIGKILL);
  }
  if (pause_pid_ > 0) {
    kill(pause_pid_, SIGKILL);
    waitpid(pause_pid_, nullptr, 0);
    pause_pid_ = 0;
  }
  if (net_) {
    for (int i = 0; i < 100 && !PidsInNetns(net_->netns_path).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    for (auto& [name, container] : oci_containers_) container->Remove();
    oci_containers_.clear();
    ctx_.network->Destroy(*net_);
    net_.reset();
  }
}

Status PodWorker::FailStart(ContainerRecord* rec, const Status& s) {
  log::Error("container did not start",
             {{"pod", key_}, {"container", rec->name}, {"error", s.ToString()}});
  rec->state = ContainerRecord::State::kTerminated;
  rec->exit_code = IsNotFound(s) ? 127 : 128;
  rec->reason = "StartError";
  rec->message = s.message();
  rec->finished_at = NowRfc3339();
  return s;
}

StatusOr<EnvList> PodWorker::ContainerEnv(const json& spec) {
  PodRuntimeFields rt{record_.pod_ip, record_.host_ip};
  LS_ASSIGN_OR_RETURN(
      EnvList env,
      ResolveEnv(Snapshot(), spec, rt, [this](const std::string& kind, const std::string& name) {
        return FetchConfigData(*ctx_.client, ns_, kind, name);
      }));
  if (ctx_.kubernetes_service == nullptr) return env;
  // First, so the container's own env overrides them, as with the kubelet's service env.
  EnvList out = KubernetesServiceEnv(*ctx_.kubernetes_service);
  out.insert(out.end(), env.begin(), env.end());
  return out;
}

StatusOr<pid_t> PodWorker::LaunchContainer(const json& spec, ContainerRecord* rec) {
  if (auto stored = stored_images_.find(rec->name); stored != stored_images_.end()) {
    return LaunchOciContainer(spec, rec, stored->second);
  }
  auto fail = [&](const Status& s) { return FailStart(rec, s); };
  const json pod = Snapshot();
  StatusOr<ResolvedCommand> cmd = ctx_.images->Resolve(
      spec.value("image", ""), Strings(spec, "command"), Strings(spec, "args"));
  if (!cmd.ok()) return fail(cmd.status());
  StatusOr<EnvList> env = ContainerEnv(spec);
  if (!env.ok()) return fail(env.status());

  const char* host_path = std::getenv("PATH");
  std::string path = host_path != nullptr ? host_path : "/usr/local/bin:/usr/bin:/bin";
  for (auto it = cmd->path_prefix.rbegin(); it != cmd->path_prefix.rend(); ++it) {
    path = *it + ":" + path;
  }
  EnvList full = {{"PATH", path}, {"HOME", "/root"}, {"HOSTNAME", Str(pod, "/spec/hostname")}};
  if (full.back().second.empty()) full.back().second = name_;
  for (auto& [k, v] : *env) {
    auto same =
        std::find_if(full.begin(), full.end(), [&](const auto& kv) { return kv.first == k; });
    if (same != full.end()) {
      same->second = v;
    } else {
      full.emplace_back(k, v);
    }
  }
  ContainerSpec cs;
  cs.pause_pid = pause_pid_;
  for (const auto& arg : cmd->argv) cs.argv.push_back(ExpandVars(arg, full));
  for (const auto& [k, v] : full) cs.env.push_back(k + "=" + v);
  cs.working_dir = spec.value("workingDir", "");
  if (!cs.working_dir.empty()) {
    Status s = ctx_.state->EnsurePath(cs.working_dir, false);
    if (!s.ok()) return fail(s);
  }
  cs.log_file = dir_ + "/containers/" + rec->name + ".log";
  const std::string term_path = spec.value("terminationMessagePath", "/dev/termination-log");
  const std::string term_host = dir_ + "/containers/" + rec->name + ".termination-log";
  if (Status s = WriteHostFile(term_host, "", 0666); !s.ok()) return fail(s);
  if (Status s = ctx_.state->EnsurePath(term_path, true); !s.ok()) return fail(s);
  cs.termination_log = {term_host, term_path, false};
  StatusOr<pid_t> pid = StartContainer(cs);
  if (!pid.ok()) return fail(pid.status());
  rec->state = ContainerRecord::State::kRunning;
  rec->reason.clear();
  rec->started_at = NowRfc3339();
  rec->container_id = "agent://" + std::to_string(*pid);
  log::Info("container started",
            {{"pod", key_}, {"container", rec->name}, {"pid", std::to_string(*pid)}});
  return pid;
}

StatusOr<pid_t> PodWorker::LaunchOciContainer(const json& spec, ContainerRecord* rec,
                                              const StoredImage& image) {
  auto fail = [&](const Status& s) { return FailStart(rec, s); };
  OciContainerSpec oci;
  StatusOr<EnvList> env = ContainerEnv(spec);
  if (!env.ok()) return fail(env.status());
  oci.env = std::move(env).value();
  oci.command = Strings(spec, "command");
  oci.args = Strings(spec, "args");
  oci.working_dir = spec.value("workingDir", "");
  oci.pause_pid = pause_pid_;
  StatusOr<std::vector<BindMount>> mounts = ContainerMounts(spec, volume_dirs_);
  if (!mounts.ok()) return fail(mounts.status());
  oci.mounts = std::move(mounts).value();
  oci.mounts.push_back({dir_ + "/hosts", "/etc/hosts", false});
  const std::string base = dir_ + "/containers/" + rec->name;
  if (Status s = WriteHostFile(base + ".termination-log", "", 0666); !s.ok()) return fail(s);
  oci.mounts.push_back({base + ".termination-log",
                        spec.value("terminationMessagePath", "/dev/termination-log"), false});
  const json pod = Snapshot();
  oci.pod_security = pod.value("spec", json::object()).value("securityContext", json());
  oci.security = spec.value("securityContext", json());
  auto container = std::make_unique<OciContainer>(ctx_.state->RuncDir(), base + ".oci",
                                                  net_->name + "-" + rec->name);
  if (Status s = container->Prepare(image, oci); !s.ok()) return fail(s);
  ContainerSpec cs;
  cs.pause_pid = pause_pid_;
  cs.argv = container->RunArgv();
  const char* host_path = std::getenv("PATH");
  cs.env = {std::string("PATH=") + (host_path != nullptr ? host_path : "/usr/sbin:/usr/bin:/bin")};
  cs.log_file = base + ".log";
  cs.join_pod_mounts = false;
  StatusOr<pid_t> pid = StartContainer(cs);
  if (!pid.ok()) return fail(pid.status());
  rec->state = ContainerRecord::State::kRunning;
  rec->reason.clear();
  rec->started_at = NowRfc3339();
  rec->container_id = "runc://" + container->id();
  // The repository without its tag, as runtimes report imageID.
  const size_t tag = image.reference.rfind(':');
  const bool tagged = tag != std::string::npos && tag > image.reference.rfind('/') + 1;
  rec->image_id = image.reference.substr(0, tagged ? tag : std::string::npos) + "@" + image.digest;
  log::Info(
      "container started with runc",
      {{"pod", key_}, {"container", rec->name}, {"image", rec->image_id}, {"id", container->id()}});
  oci_containers_[rec->name] = std::move(container);
  return pid;
}

void PodWorker::RecordExit(const json& spec, ContainerRecord* rec, int wstatus) {
  rec->state = ContainerRecord::State::kTerminated;
  rec->finished_at = NowRfc3339();
  if (WIFEXITED(wstatus)) {
    rec->exit_code = WEXITSTATUS(wstatus);
  } else if (WIFSIGNALED(wstatus)) {
    rec->exit_code = 128 + WTERMSIG(wstatus);  // what a container runtime reports
  }
  rec->reason = rec->exit_code == 0 ? "Completed" : "Error";
  if (auto oci = oci_containers_.find(rec->name); oci != oci_containers_.end()) {
    // runc failed before the container's process ran (e.g. no such executable in the image).
    if (std::string error = oci->second->RuntimeError(); !error.empty() && rec->exit_code != 0) {
      const bool missing = error.find("not found") != std::string::npos ||
                           error.find("no such file or directory") != std::string::npos;
      FailStart(rec, missing ? NotFoundError(error) : InternalError(error)).IgnoreError();
      return;
    }
  }
  const std::string base = dir_ + "/containers/" + rec->name;
  rec->message = ReadFileHead(base + ".termination-log", kMaxTerminationMessage);
  if (rec->message.empty() && rec->exit_code != 0 &&
      spec.value("terminationMessagePolicy", "File") == "FallbackToLogsOnError") {
    rec->message = LogTail(base + ".log");
  }
  log::Info(
      "container exited",
      {{"pod", key_}, {"container", rec->name}, {"exit_code", std::to_string(rec->exit_code)}});
}

void PodWorker::WaitAll(std::vector<Running> running) {
  bool term_sent = false;
  bool kill_sent = false;
  std::chrono::steady_clock::time_point kill_at{};
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      int wstatus = 0;
      if (waitpid(it->pid, &wstatus, WNOHANG) == it->pid) {
        RecordExit(*it->spec, it->record, wstatus);
        it = running.erase(it);
        WriteStatus();
      } else {
        ++it;
      }
    }
    if (running.empty()) break;
    std::unique_lock<std::mutex> lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!kill_sent && (kill_ || (term_sent && now >= kill_at))) {
      for (const auto& r : running) kill(-r.pid, SIGKILL);
      if (net_) SignalNetns(net_->netns_path, SIGKILL);
      kill_sent = true;
    } else if (!term_sent && delete_grace_) {
      for (const auto& r : running) kill(-r.pid, SIGTERM);
      kill_at = now + std::chrono::seconds(*delete_grace_);
      term_sent = true;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void PodWorker::WriteStatus() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kill_) return;
  }
  if (!ctx_.writes_allowed(node_)) return;
  json patch = {{"status", RenderPodStatus(record_)}};
  StatusOr<json> r = ctx_.client->MergePatch(kube::resources::Pods(), ns_, name_, patch, "status");
  if (!r.ok() && !IsNotFound(r.status())) {
    log::Warning("cannot write pod status", {{"pod", key_}, {"error", r.status().ToString()}});
  }
}

void PodWorker::DeleteObject() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (kill_) return;
  }
  if (!ctx_.writes_allowed(node_)) return;
  kube::DeleteOptions options;
  options.grace_period_seconds = 0;
  options.precondition_uid = uid_;
  StatusOr<json> r = ctx_.client->Delete(kube::resources::Pods(), ns_, name_, options);
  if (!r.ok() && !IsNotFound(r.status())) {
    log::Warning("cannot delete pod", {{"pod", key_}, {"error", r.status().ToString()}});
  } else {
    log::Info("pod deleted", {{"pod", key_}});
  }
}

}  // namespace lockstep::e2e
