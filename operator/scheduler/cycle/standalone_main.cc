// lockstep-scheduler-standalone: the gang scheduler alone, outside the operator. A harness for
// tests and benchmarks (the operator binary runs GangScheduler itself, under leader election,
// which this harness does not do: run one at a time).
//
//   lockstep-scheduler-standalone [--kubeconfig PATH] [--namespace NS] [--qps N] [--burst N]
//       [--bind-workers N] [--metrics-bind-address HOST:PORT] [--debug]

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <thread>

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include "common/log.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/metrics.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/gang_scheduler.h"

namespace {

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

struct Flags {
  std::string kubeconfig;
  std::string metrics_address;
  bool debug = false;
  lockstep::kube::RestOptions rest;
  lockstep::scheduler::SchedulerOptions scheduler;
};

bool ParseFlags(int argc, char** argv, Flags* flags) {
  flags->rest.qps = 500;
  flags->rest.burst = 1000;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (arg == "--kubeconfig") {
      flags->kubeconfig = value();
    } else if (arg == "--namespace") {
      flags->scheduler.namespace_filter = value();
    } else if (arg == "--qps") {
      flags->rest.qps = std::atof(value().c_str());
    } else if (arg == "--burst") {
      flags->rest.burst = std::atoi(value().c_str());
    } else if (arg == "--bind-workers") {
      flags->scheduler.bind_workers = std::atoi(value().c_str());
    } else if (arg == "--metrics-bind-address") {
      flags->metrics_address = value();
    } else if (arg == "--debug") {
      flags->debug = true;
    } else {
      std::cerr << "unknown flag " << arg << "\n";
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace lockstep;
  Flags flags;
  if (!ParseFlags(argc, argv, &flags)) return 2;
  log::SetComponent("lockstep-scheduler");
  if (flags.debug) log::SetMinLevel(log::Level::kDebug);

  StatusOr<kube::ClusterConfig> config = kube::LoadDefaultConfig(flags.kubeconfig);
  if (!config.ok()) {
    log::Error("cannot load kubeconfig", {{"error", config.status().ToString()}});
    return 1;
  }
  StatusOr<std::unique_ptr<kube::Transport>> transport = kube::NewCurlTransport(*config);
  if (!transport.ok()) {
    log::Error("cannot create transport", {{"error", transport.status().ToString()}});
    return 1;
  }
  auto registry = std::make_shared<prometheus::Registry>();
  kube::KubeMetrics kube_metrics(*registry);
  kube::RestClient client(std::shared_ptr<kube::Transport>(std::move(transport).value()),
                          flags.rest, &kube_metrics);
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!flags.metrics_address.empty()) {
    exposer = std::make_unique<prometheus::Exposer>(flags.metrics_address);
    exposer->RegisterCollectable(registry);
  }

  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  scheduler::GangScheduler gang_scheduler(client, *registry, flags.scheduler);
  gang_scheduler.Start();
  if (!gang_scheduler.WaitForSync(std::chrono::minutes(2))) {
    log::Error("informers did not sync");
    return 1;
  }
  log::Info("scheduler running", {{"namespace", flags.scheduler.namespace_filter}});
  while (g_stop == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  gang_scheduler.Stop();
  log::Info("scheduler stopped", {{"gangs_bound", std::to_string(gang_scheduler.gangs_bound())}});
  return 0;
}
