#pragma once
// Command-line options of lockstep-test-node-agent (see docs/e2e.md for the full story).

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

// `--image-map PREFIX=DIR`: images whose name starts with PREFIX run from DIR (see image_map.h).
struct ImageRule {
  std::string prefix;
  std::string dir;
};

struct AgentOptions {
  std::string kubeconfig;               // empty: $KUBECONFIG, then the usual fallbacks
  std::vector<std::string> node_names;  // --node-name (repeatable) or --nodes N --name-prefix P
  int64_t gpus = 8;                     // nvidia.com/gpu capacity each node pretends to have
  std::string block = "block-0";        // topology.lockstep.dev/block
  std::string rack = "rack-0";          // topology.lockstep.dev/rack
  std::string launcher_binary;          // the built lockstep-launcher
  std::string launcher_image = "ghcr.io/lockstep/launcher";  // prefix mapped to it
  std::string python;  // the venv's python: its bin/ goes first on PATH
  std::vector<ImageRule> image_rules;
  std::string state_dir = "/run/lockstep-test-node-agent";
  std::string bridge = "lsbr0";
  std::string subnet = "10.213.0.0/16";
  // Images the agent runs from its image store (docs/e2e.md, "Images"): OCI layouts imported at
  // start (--image-layout DIR, repeatable; hack/build-images.sh writes build/images/<image>).
  std::vector<std::string> image_layouts;
  // --apiserver-proxy=true: pods reach the API server as in a cluster (kubernetes_service.h).
  bool apiserver_proxy = false;
  // --schedule-namespace NS (repeatable): the agent binds that namespace's pods that ask for the
  // default scheduler to its nodes (pod_binder.h).
  std::vector<std::string> schedule_namespaces;
  int heartbeat_ms = 2000;
  // The kubelet log endpoint (kubectl logs) on the bridge address; 0 = none.
  int kubelet_port = 10250;
  int lease_duration_s = 10;
  // Control mode: ask the agent that owns --state-dir to play node loss for one node and exit.
  std::string partition_node;  // --partition-node NODE: heartbeats stop, pods keep running
  std::string fail_node;       // --fail-node NODE: pods killed, heartbeats stop
  std::string import_image;    // --import-image DIR: an OCI layout into --state-dir's store
};

// Parses argv (without argv[0]). INVALID_ARGUMENT names the bad flag.
StatusOr<AgentOptions> ParseOptions(const std::vector<std::string>& args);
std::string Usage();

}  // namespace lockstep::e2e
