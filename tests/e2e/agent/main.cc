// lockstep-test-node-agent: flags, signals and the main loop (see agent.h, docs/e2e.md).
//
// Signals: SIGTERM/SIGINT = clean exit (everything removed, Nodes deleted); SIGUSR1 = partition
// every node (heartbeats stop, pods keep running); SIGUSR2 = fail every node (pods killed,
// heartbeats stop). `--partition-node N` / `--fail-node N` with --state-dir do it for one node
// of a running agent.

#include <signal.h>

#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "common/log.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/agent.h"
#include "tests/e2e/agent/oci_image_store.h"
#include "tests/e2e/agent/options.h"
#include "tests/e2e/agent/state_dir.h"

namespace {

using lockstep::Status;
using lockstep::StatusOr;

// `--import-image DIR --state-dir S`: the store is a directory with its own lock, so this works
// whether the agent owning S runs or not (a running one finds the image at its next container).
int ImportImage(const lockstep::e2e::AgentOptions& options) {
  lockstep::e2e::ImageStore store(lockstep::e2e::StateDir(options.state_dir).ImagesDir());
  StatusOr<std::vector<std::string>> imported = store.Import(options.import_image);
  if (!imported.ok()) {
    std::fprintf(stderr, "lockstep-test-node-agent: %s\n", imported.status().ToString().c_str());
    return 1;
  }
  for (const std::string& image : *imported) std::printf("imported %s\n", image.c_str());
  return 0;
}

int Control(const lockstep::e2e::AgentOptions& options) {
  if (!options.import_image.empty()) return ImportImage(options);
  const bool fail = !options.fail_node.empty();
  Status s = lockstep::e2e::RequestNodeControl(options.state_dir,
                                               fail ? options.fail_node : options.partition_node,
                                               fail ? "fail" : "partition");
  if (!s.ok()) {
    std::fprintf(stderr, "lockstep-test-node-agent: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

struct Connection {
  std::unique_ptr<lockstep::kube::RestClient> client;
  std::string ca_pem;  // the cluster CA, which also signs the apiserver's kubelet client cert
};

StatusOr<Connection> Connect(const std::string& kubeconfig) {
  LS_ASSIGN_OR_RETURN(lockstep::kube::ClusterConfig config,
                      lockstep::kube::LoadDefaultConfig(kubeconfig));
  LS_ASSIGN_OR_RETURN(std::unique_ptr<lockstep::kube::Transport> transport,
                      lockstep::kube::NewCurlTransport(config));
  lockstep::kube::RestOptions rest;
  rest.qps = 0;  // a handful of nodes and pods; the apiserver's own limits suffice
  rest.field_manager = "lockstep-test-node-agent";
  return Connection{std::make_unique<lockstep::kube::RestClient>(
                        std::shared_ptr<lockstep::kube::Transport>(std::move(transport)), rest),
                    config.ca_pem};
}

}  // namespace

int main(int argc, char** argv) {
  lockstep::log::SetComponent("test-node-agent");
  StatusOr<lockstep::e2e::AgentOptions> options =
      lockstep::e2e::ParseOptions(std::vector<std::string>(argv + 1, argv + argc));
  if (!options.ok()) {
    std::fprintf(stderr, "%s\n%s", options.status().ToString().c_str(),
                 lockstep::e2e::Usage().c_str());
    return 2;
  }
  if (!options->partition_node.empty() || !options->fail_node.empty() ||
      !options->import_image.empty()) {
    return Control(*options);
  }

  // Blocked before any thread starts, so they are delivered only to sigtimedwait below
  // (children unblock them before exec).
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGTERM, SIGINT, SIGUSR1, SIGUSR2}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  StatusOr<Connection> connection = Connect(options->kubeconfig);
  if (!connection.ok()) {
    lockstep::log::Error("cannot connect", {{"error", connection.status().ToString()}});
    return 1;
  }
  const int heartbeat_ms = options->heartbeat_ms;
  lockstep::e2e::Agent agent(*options, std::move(connection->client),
                             std::move(connection->ca_pem));
  if (Status s = agent.Start(); !s.ok()) {
    lockstep::log::Error("start failed", {{"error", s.ToString()}});
    agent.Shutdown();
    return 1;
  }
  // Ready line for scripts and tests that start the agent.
  std::printf("ready\n");
  std::fflush(stdout);
  const timespec tick{heartbeat_ms / 1000, static_cast<long>(heartbeat_ms % 1000) * 1000000};
  while (true) {
    siginfo_t info{};
    const int sig = sigtimedwait(&signals, &info, &tick);
    if (sig == SIGTERM || sig == SIGINT) break;
    if (sig == SIGUSR1) agent.Partition("");
    if (sig == SIGUSR2) agent.Fail("");
    agent.Tick();
  }
  agent.Shutdown();
  return 0;
}
