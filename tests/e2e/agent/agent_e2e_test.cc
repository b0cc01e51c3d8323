// End-to-end tests of lockstep-test-node-agent against the real local control plane
// ($KUBECONFIG, started by hack/test.sh or hack/cluster.sh). They need root: the agent creates
// network namespaces, a bridge and mounts. Every test starts its own agent (2 nodes, a bridge and
// subnet of its own) and, when the test ends, stops it and checks that nothing it created is
// left: no netns, link, bridge, mount, process, state dir, created mount target or Node.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/host_command.h"
#include "tests/e2e/agent/shared_mount_target.h"
#include "tests/testing/host_state.h"
#include "tests/testing/random_suffix.h"

extern char** environ;

namespace lockstep::e2e {
namespace {

using ::lockstep::testing::MarkedProcesses;
using ::lockstep::testing::ReadWholeFile;
using ::lockstep::testing::SpawnAndAwaitLine;

using nlohmann::json;
using std::chrono::milliseconds;
using std::chrono::seconds;
namespace fs = std::filesystem;

constexpr char kLauncherImage[] = "ghcr.io/lockstep/launcher:e2e";

bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return true;
}



class AgentE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::getenv("KUBECONFIG") == nullptr) GTEST_SKIP() << "KUBECONFIG unset";
    if (geteuid() != 0) GTEST_SKIP() << "the test node agent needs root";
    StatusOr<kube::ClusterConfig> config = kube::LoadDefaultConfig();
    ASSERT_TRUE(config.ok()) << config.status();
    StatusOr<std::unique_ptr<kube::Transport>> transport = kube::NewCurlTransport(*config);
    ASSERT_TRUE(transport.ok()) << transport.status();
    kube::RestOptions rest;
    rest.qps = 0;
    client_ = std::make_unique<kube::RestClient>(
        std::shared_ptr<kube::Transport>(std::move(transport).value()), rest);

    id_ = ::lockstep::testing::RandomSuffix(5);
    ns_ = "agent-e2e-" + id_;
    bridge_ = "lse" + id_;
    marker_ = "LS_AGENT_E2E_MARKER=" + id_;
    state_dir_ = "/tmp/lockstep-agent-e2e-" + id_;
    work_dir_ = ::testing::TempDir() + "/agent-e2e-" + id_;
    nodes_ = {"agent-e2e-" + id_ + "-0", "agent-e2e-" + id_ + "-1"};
    fs::create_directories(work_dir_);
    // The launcher image maps /lockstep-launcher to this file (a stand-in for the built binary).
    fake_launcher_ = work_dir_ + "/fake-launcher";
    std::ofstream(fake_launcher_) << "#!/bin/sh\necho \"launcher-ok $*\"\n";
    fs::permissions(fake_launcher_, fs::perms::owner_all | fs::perms::group_read |
                                        fs::perms::others_read | fs::perms::others_exec);
    lockstep_dir_existed_ = fs::exists("/lockstep");

    json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns_}}}};
    ASSERT_TRUE(client_->Create(kube::resources::Namespaces(), "", ns).ok());
    StartAgent();
  }

  void TearDown() override {
    if (client_ == nullptr) return;
    if (agent_pid_ > 0) StopAgentAndCheckCleanup();
    client_->Delete(kube::resources::Namespaces(), "", ns_).status().IgnoreError();
    std::error_code ec;
    fs::remove_all(work_dir_, ec);
  }

  std::string Python() const {
    const std::string venv = std::string(LOCKSTEP_SOURCE_DIR) + "/.venv/bin/python";
    return fs::exists(venv) ? venv : "/usr/bin/python3";
  }

  void StartAgent() {
    // A /24 of the test range per run, so concurrent runs on one host never overlap.
    const std::string subnet =
        "10.213." + std::to_string(std::random_device{}() % 250 + 1) + ".0/24";
    std::vector<std::string> args = {LOCKSTEP_AGENT_BINARY,
                                     "--node-name",
                                     nodes_[0],
                                     "--node-name",
                                     nodes_[1],
                                     "--gpus",
                                     "4",
                                     "--block",
                                     "block-e2e",
                                     "--rack",
                                     "rack-e2e",
                                     "--launcher-binary",
                                     fake_launcher_,
                                     "--launcher-image",
                                     "ghcr.io/lockstep/launcher",
                                     "--python",
                                     Python(),
                                     "--state-dir",
                                     state_dir_,
                                     "--bridge",
                                     bridge_,
                                     "--subnet",
                                     subnet,
                                     "--heartbeat-ms",
                                     "500",
                                     "--lease-duration-s",
                                     "5"};
    agent_log_ = work_dir_ + "/agent.log";
    const bool ready = SpawnAndAwaitLine(args, agent_log_, "ready", seconds(60), &agent_pid_);
    ASSERT_NE(agent_pid_, 0) << "cannot start " << args[0];
    ASSERT_TRUE(ready) << "agent did not start:\n" << ReadWholeFile(agent_log_);
  }

  // SIGTERM, then the cleanup guarantees of docs/e2e.md.
  void StopAgentAndCheckCleanup() {
    ASSERT_EQ(kill(agent_pid_, SIGTERM), 0);
    int wstatus = 0;
    bool exited =
        WaitFor([&] { return waitpid(agent_pid_, &wstatus, WNOHANG) == agent_pid_; }, seconds(60));
    if (!exited) kill(agent_pid_, SIGKILL);
    agent_pid_ = 0;
    ASSERT_TRUE(exited) << "agent did not exit\n" << ReadWholeFile(agent_log_);
    EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << ReadWholeFile(agent_log_);

    StatusOr<std::string> netns = RunHostCommand({"ip", "netns", "list"});
    ASSERT_TRUE(netns.ok()) << netns.status();
    EXPECT_EQ(netns->find(bridge_), std::string::npos) << *netns;
    StatusOr<std::string> links = RunHostCommand({"ip", "-o", "link", "show"});
    ASSERT_TRUE(links.ok()) << links.status();
    EXPECT_EQ(links->find(bridge_), std::string::npos) << *links;
    const std::string mounts = ReadWholeFile("/proc/self/mounts");
    EXPECT_EQ(mounts.find(bridge_), std::string::npos) << mounts;
    EXPECT_EQ(mounts.find(state_dir_), std::string::npos) << mounts;
    EXPECT_TRUE(MarkedProcesses(marker_).empty()) << "pod processes survived the agent";
    EXPECT_FALSE(fs::exists(state_dir_));
    // Unless another agent (a framework e2e binary's, side by side) holds it meanwhile.
    if (!lockstep_dir_existed_ && !SharedMountTarget::Held("/lockstep/bin")) {
      EXPECT_FALSE(fs::exists("/lockstep")) << "a created mount target was left";
    }
    for (const auto& node : nodes_) {
      EXPECT_TRUE(IsNotFound(client_->Get(kube::resources::Nodes(), "", node).status()))
          << node << " was not deleted";
    }
  }

  // A pod bound to `node` running `sh -c script`, carrying the test marker in its env.
  json ShellPod(const std::string& name, int node, const std::string& script) {
    return json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"namespace", ns_}, {"labels", {{"app", "e2e"}}}}},
                {"spec",
                 {{"nodeName", nodes_[static_cast<size_t>(node)]},
                  {"restartPolicy", "Never"},
                  {"terminationGracePeriodSeconds", 2},
                  {"containers", json::array({{{"name", "main"},
                                               {"image", "lockstep/examples:dev"},
                                               {"command", {"sh", "-c", script}},
                                               {"env", json::array({MarkerEnv()})}}})}}}};
  }

  json MarkerEnv() const {
    return {{"name", marker_.substr(0, marker_.find('='))},
            {"value", marker_.substr(marker_.find('=') + 1)}};
  }

  json Create(const json& pod) {
    StatusOr<json> created = client_->Create(kube::resources::Pods(), ns_, pod);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : json();
  }

  // Waits for the pod to reach `phase`; returns its last state.
  json WaitPhase(const std::string& name, const std::string& phase, seconds timeout = seconds(60)) {
    json last;
    WaitFor(
        [&] {
          StatusOr<json> pod = client_->Get(kube::resources::Pods(), ns_, name);
          if (!pod.ok()) return false;
          last = *pod;
          return last["status"].value("phase", "") == phase;
        },
        timeout);
    EXPECT_EQ(last["status"].value("phase", ""), phase) << last["status"].dump(2) << "\n"
                                                        << ReadWholeFile(agent_log_);
    return last;
  }

  static json Terminated(const json& pod, size_t i = 0, const char* list = "containerStatuses") {
    return pod["status"][list][i]["state"].value("terminated", json::object());
  }

  std::unique_ptr<kube::RestClient> client_;
  std::string id_, ns_, bridge_, marker_, state_dir_, work_dir_, agent_log_, fake_launcher_;
  std::vector<std::string> nodes_;
  bool lockstep_dir_existed_ = false;
  pid_t agent_pid_ = 0;
};

TEST_F(AgentE2eTest, RegistersNodesWithCapacityReadyAndFreshLeases) {
  for (const auto& name : nodes_) {
    StatusOr<json> node = client_->Get(kube::resources::Nodes(), "", name);
    ASSERT_TRUE(node.ok()) << node.status();
    EXPECT_EQ((*node)["status"]["capacity"]["nvidia.com/gpu"], "4");
    EXPECT_EQ((*node)["status"]["allocatable"]["nvidia.com/gpu"], "4");
    EXPECT_EQ((*node)["metadata"]["labels"]["topology.lockstep.dev/block"], "block-e2e");
    EXPECT_EQ((*node)["metadata"]["labels"]["topology.lockstep.dev/rack"], "rack-e2e");
    EXPECT_FALSE(
        (*node)["metadata"].value("annotations", json::object()).contains("kwok.x-k8s.io/node"));
    bool ready = false;
    for (const json& c : (*node)["status"]["conditions"]) {
      if (c["type"] == "Ready") ready = c["status"] == "True";
    }
    EXPECT_TRUE(ready);
    StatusOr<json> lease = client_->Get(kube::resources::Leases(), "kube-node-lease", name);
    ASSERT_TRUE(lease.ok()) << lease.status();
    const std::string first = (*lease)["spec"]["renewTime"];
    EXPECT_TRUE(WaitFor(
        [&] {
          StatusOr<json> l = client_->Get(kube::resources::Leases(), "kube-node-lease", name);
          return l.ok() && (*l)["spec"]["renewTime"] != first;
        },
        seconds(5)))
        << "lease of " << name << " is not renewed";
  }
}

TEST_F(AgentE2eTest, ShellCommandSucceeds) {
  Create(ShellPod("ok", 0, "echo hello"));
  const json pod = WaitPhase("ok", "Succeeded");
  EXPECT_EQ(Terminated(pod).value("exitCode", -1), 0);
  EXPECT_EQ(Terminated(pod).value("reason", ""), "Completed");
  const std::string ip = pod["status"].value("podIP", "");
  EXPECT_EQ(ip.rfind("10.213.", 0), 0u) << ip;
  std::map<std::string, std::string> conditions;
  for (const json& c : pod["status"]["conditions"]) conditions[c["type"]] = c["status"];
  EXPECT_EQ(conditions["PodScheduled"], "True");
  EXPECT_EQ(conditions["Initialized"], "True");
  EXPECT_EQ(conditions["Ready"], "False");  // PodCompleted
  EXPECT_EQ(conditions.count("ContainersReady"), 1u);
}

// `kubectl logs` as a user runs it: the apiserver proxies pods/log to the agent's kubelet
// endpoint (its address and port in the Node's status, its certificate from the cluster's
// kubelet-serving signer, which the apiserver verifies), the agent checks the apiserver's client
// certificate and asks it with a SubjectAccessReview, and streams the container's log file.
TEST_F(AgentE2eTest, KubectlLogsFollowsTailsAndPicksContainersThroughTheKubeletEndpoint) {
  StatusOr<json> node = client_->Get(kube::resources::Nodes(), "", nodes_[0]);
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_GT((*node)["status"]["daemonEndpoints"]["kubeletEndpoint"].value("Port", 0), 0);
  // Lines before and after a pause, so `-f` must wait for the second half and end at the exit.
  json pod = ShellPod("chatty", 0,
                      "for i in 1 2 3; do echo line-$i; done; sleep 3; echo line-4; echo err >&2");
  pod["spec"]["initContainers"] =
      json::array({{{"name", "prepare"},
                    {"image", "lockstep/examples:dev"},
                    {"command", {"sh", "-c", "echo from-init"}},
                    {"env", json::array({MarkerEnv()})}}});
  Create(pod);
  ASSERT_TRUE(WaitFor(
      [&] {
        StatusOr<json> p = client_->Get(kube::resources::Pods(), ns_, "chatty");
        return p.ok() && (*p)["status"].value("phase", "") == "Running";
      },
      seconds(60)));
  auto kubectl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"kubectl", "-n", ns_, "logs", "chatty"});
    return RunHostCommand(args);
  };
  StatusOr<std::string> followed = kubectl({"-f", "-c", "main"});
  ASSERT_TRUE(followed.ok()) << followed.status() << "\n" << ReadWholeFile(agent_log_);
  EXPECT_EQ(*followed, "line-1\nline-2\nline-3\nline-4\nerr\n");
  WaitPhase("chatty", "Succeeded");
  StatusOr<std::string> tail = kubectl({"--tail=2", "-c", "main"});
  ASSERT_TRUE(tail.ok()) << tail.status();
  EXPECT_EQ(*tail, "line-4\nerr\n");
  StatusOr<std::string> init = kubectl({"-c", "prepare"});
  ASSERT_TRUE(init.ok()) << init.status();
  EXPECT_EQ(*init, "from-init\n");
  StatusOr<std::string> limited = kubectl({"--limit-bytes=7", "-c", "main"});
  ASSERT_TRUE(limited.ok()) << limited.status();
  EXPECT_EQ(*limited, "line-1\n");
  // A user the apiserver would not let read logs is refused by the apiserver itself; the
  // agent's own check refuses any caller without a certificate of the cluster CA (TLS).
  StatusOr<std::string> missing = kubectl({"-c", "sidecar"});
  EXPECT_FALSE(missing.ok());
}

TEST_F(AgentE2eTest, FailureCarriesExitCodeAndTerminationMessage) {
  Create(ShellPod("bad", 1, "echo 'rank 3: bad input' > /dev/termination-log; exit 3"));
  const json pod = WaitPhase("bad", "Failed");
  EXPECT_EQ(Terminated(pod).value("exitCode", -1), 3);
  EXPECT_EQ(Terminated(pod).value("reason", ""), "Error");
  EXPECT_EQ(Terminated(pod).value("message", ""), "rank 3: bad input\n");
}

TEST_F(AgentE2eTest, EnvFromFieldRefsAndSecretsAsEnvAndVolumes) {
  json secret = {{"apiVersion", "v1"},
                 {"kind", "Secret"},
                 {"metadata", {{"name", "creds"}}},
                 {"stringData", {{"token", "s3cr3t"}}}};
  ASSERT_TRUE(client_->Create(kube::resources::Secrets(), ns_, secret).ok());
  json pod = ShellPod("env", 0,
                      "printf '%s|%s|%s|%s|%s|%s|%s|%s' \"$POD\" \"$NS\" \"$APP\" \"$IP\" "
                      "\"$NODE\" \"$TOKEN\" \"$(cat /var/run/creds/tok)\" "
                      "\"$(stat -c %a /var/run/creds/tok)\" > /dev/termination-log && "
                      "test -s /var/run/secrets/kubernetes.io/serviceaccount/token");
  // The secret as a volume too, shaped like the operator's rendezvous-token volume.
  pod["spec"]["volumes"] =
      json::array({{{"name", "creds"},
                    {"secret",
                     {{"secretName", "creds"},
                      {"defaultMode", 0440},
                      {"items", json::array({{{"key", "token"}, {"path", "tok"}}})}}}}});
  pod["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "creds"}, {"mountPath", "/var/run/creds"}, {"readOnly", true}}});
  json& env = pod["spec"]["containers"][0]["env"];
  auto field = [](const char* name, const char* path) {
    return json{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
  };
  env.push_back(field("POD", "metadata.name"));
  env.push_back(field("NS", "metadata.namespace"));
  env.push_back(field("APP", "metadata.labels['app']"));
  env.push_back(field("IP", "status.podIP"));
  env.push_back(field("NODE", "spec.nodeName"));
  env.push_back({{"name", "TOKEN"},
                 {"valueFrom", {{"secretKeyRef", {{"name", "creds"}, {"key", "token"}}}}}});
  Create(pod);
  const json done = WaitPhase("env", "Succeeded");
  EXPECT_EQ(Terminated(done).value("message", ""), "env|" + ns_ + "|e2e|" +
                                                       done["status"].value("podIP", "?") + "|" +
                                                       nodes_[0] + "|s3cr3t|s3cr3t|440");
}

// Each pod has its own /tmp, as a container's writable layer gives it: what one pod writes
// there neither reaches the host's /tmp nor another pod's (two Ray jobs on one agent shared
// /tmp/ray, and one job's internals connected to the other's cluster). Its containers share it,
// and a volume mounted under /tmp still works, its source (the pod's state dir) being under the
// host's /tmp.
TEST_F(AgentE2eTest, EachPodHasItsOwnTmp) {
  const std::string mark = "/tmp/ls-own-tmp-" + id_;
  json first = ShellPod("tmp-a", 0,
                        "echo a > " + mark + " && echo v > /tmp/vol/f && sleep 30");
  first["spec"]["volumes"] = json::array({{{"name", "vol"}, {"emptyDir", json::object()}}});
  first["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "vol"}, {"mountPath", "/tmp/vol"}}});
  first["spec"]["containers"].push_back(
      {{"name", "side"},
       {"image", "lockstep/examples:dev"},
       {"command", {"sh", "-c",
                    "while [ ! -e /tmp/vol/f ]; do sleep 0.1; done; sleep 0.2; "
                    "cat " + mark + " /tmp/vol/f > /dev/termination-log"}},
       {"env", json::array({MarkerEnv()})},
       {"volumeMounts", json::array({{{"name", "vol"}, {"mountPath", "/tmp/vol"}}})}});
  Create(first);
  WaitPhase("tmp-a", "Running");
  ASSERT_TRUE(WaitFor(
      [&] {
        StatusOr<json> pod = client_->Get(kube::resources::Pods(), ns_, "tmp-a");
        return pod.ok() && !Terminated(*pod, 1).empty();
      },
      seconds(30)));
  const json a = client_->Get(kube::resources::Pods(), ns_, "tmp-a").value();
  EXPECT_EQ(Terminated(a, 1).value("message", ""), "a\nv\n");  // shared by its containers
  EXPECT_FALSE(fs::exists(mark)) << "a pod's /tmp reached the host";
  Create(ShellPod("tmp-b", 0, "test ! -e " + mark + " && test -d /tmp && test -w /tmp"));
  WaitPhase("tmp-b", "Succeeded");
}

TEST_F(AgentE2eTest, InitContainerSharesEmptyDirAndLauncherImageIsMapped) {
  // The operator's shape: an init container of the launcher image copies /lockstep-launcher
  // into an emptyDir that the main container mounts and runs.
  json pod = ShellPod("init", 1,
                      "/lockstep/bin/lockstep-launcher x > /dev/termination-log && "
                      "cat /data/from-init >> /dev/termination-log && hostname >> "
                      "/dev/termination-log");
  pod["spec"]["hostname"] = "init-host";
  pod["spec"]["volumes"] = json::array({{{"name", "bin"}, {"emptyDir", json::object()}},
                                        {{"name", "data"}, {"emptyDir", json::object()}}});
  pod["spec"]["initContainers"] = json::array(
      {{{"name", "install"},
        {"image", kLauncherImage},
        {"command", {"cp", "/lockstep-launcher", "/lockstep/bin/lockstep-launcher"}},
        {"volumeMounts", json::array({{{"name", "bin"}, {"mountPath", "/lockstep/bin"}}})}},
       {{"name", "write"},
        {"image", "lockstep/examples:dev"},
        {"command", {"sh", "-c", "echo from-init > /data/from-init"}},
        {"volumeMounts", json::array({{{"name", "data"}, {"mountPath", "/data"}}})}}});
  pod["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "bin"}, {"mountPath", "/lockstep/bin"}, {"readOnly", true}},
                   {{"name", "data"}, {"mountPath", "/data"}}});
  Create(pod);
  const json done = WaitPhase("init", "Succeeded");
  EXPECT_EQ(Terminated(done, 0, "initContainerStatuses").value("exitCode", -1), 0);
  EXPECT_EQ(Terminated(done, 1, "initContainerStatuses").value("exitCode", -1), 0);
  EXPECT_EQ(Terminated(done).value("message", ""), "launcher-ok x\nfrom-init\ninit-host\n");
  // The pod's mounts never reached the host.
  EXPECT_EQ(ReadWholeFile("/proc/self/mounts").find("/lockstep/bin"), std::string::npos);
}

TEST_F(AgentE2eTest, PodsOnTwoNodesTalkByDnsName) {
  const std::string server_script =
      "import socket\n"
      "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
      "s.bind(('0.0.0.0', 7777)); s.listen(1)\n"
      "c, addr = s.accept(); c.sendall(b'pong from ' + socket.gethostname().encode())\n"
      "open('/dev/termination-log', 'w').write(addr[0])\n";
  const std::string client_script =
      "import socket, sys, time\n"
      "name = sys.argv[1]\n"
      "for _ in range(300):\n"
      "    try:\n"
      "        c = socket.create_connection((name, 7777), timeout=2); break\n"
      "    except OSError:\n"
      "        time.sleep(0.1)\n"
      "open('/dev/termination-log', 'w').write(c.recv(100).decode())\n";
  auto python_pod = [&](const std::string& name, int node, const std::string& script,
                        std::vector<std::string> args) {
    json pod = ShellPod(name, node, "");
    pod["spec"]["hostname"] = name;
    pod["spec"]["subdomain"] = "job";
    json command = {"python3", "-c", script};
    for (auto& a : args) command.push_back(a);
    pod["spec"]["containers"][0]["command"] = command;
    return pod;
  };
  Create(python_pod("server", 0, server_script, {}));
  Create(python_pod("client", 1, client_script, {"server.job." + ns_ + ".svc.cluster.local"}));
  const json client = WaitPhase("client", "Succeeded");
  const json server = WaitPhase("server", "Succeeded");
  EXPECT_EQ(Terminated(client).value("message", ""), "pong from server");
  // The server saw the client's own pod address: the bytes crossed the bridge.
  EXPECT_EQ(Terminated(server).value("message", ""), client["status"].value("podIP", "?"));
  EXPECT_NE(client["status"].value("podIP", ""), server["status"].value("podIP", ""));
}

TEST_F(AgentE2eTest, DeletingARunningPodStopsItsProcesses) {
  // Ignores SIGTERM, so only the SIGKILL after the grace period (2 s) stops it.
  Create(ShellPod("stubborn", 0, "trap '' TERM; while true; do sleep 0.2; done"));
  const json running = WaitPhase("stubborn", "Running");
  ASSERT_FALSE(MarkedProcesses(marker_).empty());
  const auto start = std::chrono::steady_clock::now();
  kube::DeleteOptions options;
  ASSERT_TRUE(client_->Delete(kube::resources::Pods(), ns_, "stubborn", options).ok());
  EXPECT_TRUE(WaitFor(
      [&] { return IsNotFound(client_->Get(kube::resources::Pods(), ns_, "stubborn").status()); },
      seconds(30)))
      << ReadWholeFile(agent_log_);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took, 1.5) << "the grace period was not honoured";
  EXPECT_TRUE(MarkedProcesses(marker_).empty());
}

TEST_F(AgentE2eTest, Sigusr1StopsHeartbeatsButPodsKeepRunning) {
  Create(ShellPod("survivor", 0, "sleep 1000"));
  WaitPhase("survivor", "Running");
  ASSERT_EQ(kill(agent_pid_, SIGUSR1), 0);
  std::this_thread::sleep_for(milliseconds(1000));  // a tick in flight may still land
  StatusOr<json> lease = client_->Get(kube::resources::Leases(), "kube-node-lease", nodes_[0]);
  ASSERT_TRUE(lease.ok()) << lease.status();
  const std::string frozen = (*lease)["spec"]["renewTime"];
  std::this_thread::sleep_for(milliseconds(2500));  // five heartbeat periods
  lease = client_->Get(kube::resources::Leases(), "kube-node-lease", nodes_[0]);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["renewTime"], frozen);
  EXPECT_FALSE(MarkedProcesses(marker_).empty()) << "a partitioned node's pods keep running";
}

TEST_F(AgentE2eTest, FailNodeKillsItsPodsAndStopsItsLease) {
  const std::string victim_marker = "LS_AGENT_E2E_VICTIM=" + id_;
  json victim_pod = ShellPod("victim", 1, "sleep 1000");
  victim_pod["spec"]["containers"][0]["env"].push_back(
      {{"name", "LS_AGENT_E2E_VICTIM"}, {"value", id_}});
  Create(victim_pod);
  Create(ShellPod("bystander", 0, "sleep 1000"));
  WaitPhase("victim", "Running");
  WaitPhase("bystander", "Running");
  ASSERT_FALSE(MarkedProcesses(victim_marker).empty());
  StatusOr<std::string> r =
      RunHostCommand({LOCKSTEP_AGENT_BINARY, "--fail-node", nodes_[1], "--state-dir", state_dir_});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(WaitFor([&] { return MarkedProcesses(victim_marker).empty(); }, seconds(10)))
      << "the failed node's pod is still running";
  EXPECT_FALSE(MarkedProcesses(marker_).empty()) << "the other node's pod must keep running";
  StatusOr<json> lease = client_->Get(kube::resources::Leases(), "kube-node-lease", nodes_[1]);
  ASSERT_TRUE(lease.ok());
  const std::string frozen = (*lease)["spec"]["renewTime"];
  std::this_thread::sleep_for(milliseconds(2000));
  lease = client_->Get(kube::resources::Leases(), "kube-node-lease", nodes_[1]);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["renewTime"], frozen);
  // The dead node wrote nothing: the API still shows the pod Running.
  StatusOr<json> victim = client_->Get(kube::resources::Pods(), ns_, "victim");
  ASSERT_TRUE(victim.ok());
  EXPECT_EQ((*victim)["status"]["phase"], "Running");
}

TEST_F(AgentE2eTest, NextAgentRemovesACrashedAgentsLeftovers) {
  Create(ShellPod("orphan", 0, "sleep 1000"));
  WaitPhase("orphan", "Running");
  ASSERT_EQ(kill(agent_pid_, SIGKILL), 0);
  ASSERT_EQ(waitpid(agent_pid_, nullptr, 0), agent_pid_);
  agent_pid_ = 0;
  // The crash left the pod's processes, its network namespace and the bridge behind.
  ASSERT_FALSE(MarkedProcesses(marker_).empty());
  StatusOr<std::string> netns = RunHostCommand({"ip", "netns", "list"});
  ASSERT_TRUE(netns.ok());
  ASSERT_NE(netns->find(bridge_ + "-"), std::string::npos) << *netns;

  StartAgent();  // same --state-dir, --bridge and node names
  EXPECT_TRUE(MarkedProcesses(marker_).empty()) << "the crashed run's processes survived";
  netns = RunHostCommand({"ip", "netns", "list"});
  ASSERT_TRUE(netns.ok());
  EXPECT_EQ(netns->find(bridge_ + "-"), std::string::npos) << *netns;
  // The pod lost its processes with the old agent: it fails, as under a restarted kubelet.
  const json pod = WaitPhase("orphan", "Failed");
  EXPECT_EQ(pod["status"].value("reason", ""), "NodeAgentRestarted");
  // The new agent runs new pods on the taken-over nodes.
  Create(ShellPod("after", 0, "true"));
  WaitPhase("after", "Succeeded");
}

TEST_F(AgentE2eTest, ExitWithRunningPodsLeavesNothingBehind) {
  Create(ShellPod("left-running-0", 0, "sleep 1000"));
  json pod = ShellPod("left-running-1", 1, "sleep 1000 & wait");
  pod["spec"]["volumes"] = json::array({{{"name", "v"}, {"emptyDir", json::object()}}});
  pod["spec"]["containers"][0]["volumeMounts"] =
      json::array({{{"name", "v"}, {"mountPath", "/lockstep/scratch"}}});
  Create(pod);
  WaitPhase("left-running-0", "Running");
  WaitPhase("left-running-1", "Running");
  EXPECT_GE(MarkedProcesses(marker_).size(), 3u);  // two shells' worth of processes
  StopAgentAndCheckCleanup();                      // asserts the guarantees
}

}  // namespace
}  // namespace lockstep::e2e
