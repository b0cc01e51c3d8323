#pragma once
// Test driver that plays the launcher for the framework tests until they can go through the real
// lockstep-launcher binary: it builds each pod's World, calls PlanChildren, hosts node 0's
// services (TcpStoreServer, GlooKvServer) exactly as the plan asks, and runs every pod's children
// as real processes on this machine (pods distinguished by loopback address 127.0.0.<n+1>).

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "launcher/frameworks/frameworks.h"
#include "launcher/stores/gloo_kv_server.h"
#include "launcher/stores/tcp_store_server.h"
#include "launcher/world.h"

#include "tests/testing/free_port.h"

namespace lockstep::launcher::testing {

// Repository root and the venv's interpreter (LOCKSTEP_VENV overrides <root>/.venv).
std::string RepoRoot();
std::string VenvPython();
bool VenvHasModule(const std::string& module);
// A port that was free a moment ago on 127.0.0.1.
using ::lockstep::testing::FreePort;  // tests/testing/free_port.h

struct PodSpec {
  std::string role = "worker";
  int role_index = 0;
  int nproc = 1;
};

struct ChildResult {
  int node_rank = 0;
  int local_rank = 0;
  int exit_code = -1;  // 128+n when killed by signal n
  std::string output;  // stdout and stderr
};

struct JobResult {
  std::vector<ChildResult> children;
  bool timed_out = false;
  // Every line of every child's output that starts with `prefix`.
  std::vector<std::string> Lines(const std::string& prefix) const;
  std::string AllOutput() const;
};

struct JobSpec {
  std::string framework;
  std::vector<PodSpec> pods;
  std::vector<std::string> command;
  std::map<std::string, std::string> extra;  // World::extra
  std::map<std::string, std::string> env;    // added to every child, e.g. test knobs
  int restart_count = 0;
  int max_restarts = 0;
  int timeout_s = 200;
  // When set, the job ends as soon as this pod's first child exits (TF PS: the chief decides);
  // the rest are stopped and reported as killed.
  int decisive_node = -1;
  bool distinct_hosts = true;  // 127.0.0.<n+1> per pod; false puts every pod on 127.0.0.1
  // Stop every child as soon as one fails, as the launcher does before an in-place restart.
  bool fail_fast = false;
};

// Builds the worlds, hosts the services, runs everything and waits.
JobResult RunJob(const JobSpec& spec);

// The World the driver builds for pod `node_rank` (exposed so tests can assert on it).
World MakeWorld(const JobSpec& spec, int node_rank, int master_port, int kv_port,
                const std::vector<int>& pod_ports);

}  // namespace lockstep::launcher::testing
