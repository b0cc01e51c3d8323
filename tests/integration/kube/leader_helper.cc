// A leader-election candidate process for leader_test: campaigns for a Lease with the default
// 15 s / 10 s / 2 s timings and appends "LEADING <unix ms>" / "STOPPED <unix ms>" to a file.
//   kube_leader_helper <namespace> <lease name> <identity> <events file>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>

#include "common/log.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/leader_elector.h"

namespace {

void Record(const std::string& path, const char* what) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  std::ofstream(path, std::ios::app) << what << " " << ms << "\n" << std::flush;
}

lockstep::kube::LeaderElector* g_elector = nullptr;

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep::kube;
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s <namespace> <lease> <identity> <events file>\n", argv[0]);
    return 2;
  }
  const std::string events = argv[4];
  auto config = LoadDefaultConfig();
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 1;
  }
  auto transport = NewCurlTransport(*config);
  if (!transport.ok()) return 1;
  LeaderElectionConfig election;
  election.lease_namespace = argv[1];
  election.lease_name = argv[2];
  election.identity = argv[3];
  if (!ValidateLeaderElectionConfig(election).ok()) return 1;
  LeaderCallbacks callbacks;
  callbacks.on_started_leading = [&] { Record(events, "LEADING"); };
  callbacks.on_stopped_leading = [&] { Record(events, "STOPPED"); };
  LeaderElector elector(std::shared_ptr<Transport>(std::move(transport).value()), election,
                        callbacks);
  g_elector = &elector;
  std::signal(SIGTERM, [](int) { g_elector->Stop(); });  // Stop only sets a flag and notifies
  Record(events, "STARTED");
  elector.Run();
  return 0;
}
