// End-to-end scheduling throughput on a kwok cluster (bench/scheduling/README.md):
//   raw      create + bind pods directly, `inflight` at a time: the apiserver's ceiling;
//   lockstep create the pods of `gangs` gangs at once (their TrainingJobs exist already) and let
//            GangScheduler place and bind them; the clock stops when every gang is bound.
// Phases alternate raw, lockstep, raw; the table reports pods/s and lockstep / median(raw).
//
//   sched_e2e_bench [--gangs 500] [--pods-per-gang 8] [--inflight 64] [--bind-workers 32]

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/registry.h>

#include "common/log.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/gang_scheduler.h"

namespace lockstep::bench {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Flags {
  int gangs = 500;
  int pods_per_gang = 8;
  int inflight = 64;
  int bind_workers = 32;
};

struct Connection {
  std::shared_ptr<kube::Transport> transport;
  std::unique_ptr<kube::RestClient> client;
};

Connection Connect() {
  StatusOr<kube::ClusterConfig> config = kube::LoadDefaultConfig();
  if (!config.ok()) {
    std::cerr << "kubeconfig: " << config.status().ToString() << "\n";
    std::exit(1);
  }
  StatusOr<std::unique_ptr<kube::Transport>> transport = kube::NewCurlTransport(*config);
  if (!transport.ok()) std::exit(1);
  Connection c;
  c.transport = std::move(transport).value();
  kube::RestOptions options;
  options.qps = 0;  // measure the server, not a client-side limit
  c.client = std::make_unique<kube::RestClient>(c.transport, options);
  return c;
}

std::string Suffix() {
  std::mt19937_64 rng{std::random_device{}()};
  std::string s;
  for (int i = 0; i < 5; ++i) s.push_back(static_cast<char>('a' + rng() % 26));
  return s;
}

void Check(const Status& s, const std::string& what) {
  if (s.ok()) return;
  std::cerr << what << ": " << s.ToString() << "\n";
  std::exit(1);
}

// Runs body(i) for i in [0, n) on `threads` threads; returns the wall time.
double ParallelFor(int n, int threads, const std::function<void(int)>& body) {
  std::atomic<int> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) body(i);
    });
  }
  for (auto& t : pool) t.join();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

json Container(int gpus) {
  json r = {{"cpu", "100m"}, {"memory", "128Mi"}};
  if (gpus > 0) r["nvidia.com/gpu"] = std::to_string(gpus);
  return {{"name", "trainer"},
          {"image", "busybox"},
          {"command", {"sleep", "infinity"}},
          {"resources", {{"requests", r}, {"limits", r}}}};
}

std::vector<std::string> g_namespaces;

void CreateNamespace(kube::RestClient& client, const std::string& name) {
  g_namespaces.push_back(name);
  Check(client.Create(kube::resources::Namespaces(), "",
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", name}}}})
            .status(),
        "create namespace");
}

std::vector<std::string> ReadyNodes(kube::RestClient& client) {
  std::vector<std::string> names;
  kube::ListOptions options;
  options.label_selector = "type=kwok";
  Check(client.ListEach(kube::resources::Nodes(), "", options,
                        [&](json&& node) {
                          names.push_back(node["metadata"]["name"].get<std::string>());
                          return Status::Ok();
                        },
                        nullptr),
        "list nodes");
  return names;
}

// The ceiling: create a pod and bind it at once, `inflight` pods at a time.
// Namespaces stay until the end (DeleteNamespaces): deleting thousands of pods loads the
// apiserver and would slow whichever phase ran next.
void DeleteNamespaces(kube::RestClient& client) {
  for (const std::string& ns : g_namespaces) {
    client.Delete(kube::resources::Namespaces(), "", ns).status().IgnoreError();
  }
}

double RawPhase(kube::RestClient& client, const std::vector<std::string>& nodes, int pods,
                int inflight) {
  const std::string ns = "bench-raw-" + Suffix();
  CreateNamespace(client, ns);
  const double seconds = ParallelFor(pods, inflight, [&](int i) {
    const std::string name = "raw-" + std::to_string(i);
    const json pod = {{"apiVersion", "v1"},
                      {"kind", "Pod"},
                      {"metadata", {{"name", name}}},
                      {"spec", {{"schedulerName", "bench-raw"}, {"containers", {Container(0)}}}}};
    Check(client.Create(kube::resources::Pods(), ns, pod).status(), "raw create");
    const json binding = {{"apiVersion", "v1"},
                          {"kind", "Binding"},
                          {"metadata", {{"name", name}}},
                          {"target", {{"kind", "Node"}, {"name", nodes[i % nodes.size()]}}}};
    Check(client.CreateSubresource(kube::resources::Pods(), ns, name, "binding", binding).status(),
          "raw bind");
  });
  return pods / seconds;
}

double LockstepPhase(Connection& conn, const Flags& flags) {
  kube::RestClient& client = *conn.client;
  const std::string ns = "bench-sched-" + Suffix();
  CreateNamespace(client, ns);
  std::vector<std::string> uids(flags.gangs);
  ParallelFor(flags.gangs, flags.inflight, [&](int j) {
    const json job = {
        {"apiVersion", "lockstep.dev/v1alpha1"},
        {"kind", "TrainingJob"},
        {"metadata", {{"name", "job-" + std::to_string(j)}}},
        {"spec",
         {{"framework", "Generic"},
          {"replicas", flags.pods_per_gang},
          {"template", {{"spec", {{"containers", {Container(1)}}}}}}}}};
    StatusOr<json> created = client.Create(kube::resources::TrainingJobs(), ns, job);
    Check(created.status(), "create job");
    uids[j] = (*created)["metadata"]["uid"].get<std::string>();
  });

  // The scheduler has a connection of its own, as it would in the operator.
  Connection sched_conn = Connect();
  prometheus::Registry registry;
  scheduler::SchedulerOptions options;
  options.namespace_filter = ns;
  options.bind_workers = flags.bind_workers;
  scheduler::GangScheduler gang_scheduler(*sched_conn.client, registry, options);
  gang_scheduler.Start();
  if (!gang_scheduler.WaitForSync(std::chrono::minutes(2))) Check(InternalError("sync"), "sync");

  const int pods = flags.gangs * flags.pods_per_gang;
  const auto start = Clock::now();
  ParallelFor(pods, flags.inflight, [&](int i) {
    const int j = i / flags.pods_per_gang, r = i % flags.pods_per_gang;
    const std::string job = "job-" + std::to_string(j);
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata",
         {{"name", job + "-worker-" + std::to_string(r)},
          {"labels",
           {{"lockstep.dev/job-name", job},
            {"lockstep.dev/role", "worker"},
            {"lockstep.dev/replica-index", std::to_string(r)},
            {"lockstep.dev/attempt", "0"}}},
          {"ownerReferences",
           {{{"apiVersion", "lockstep.dev/v1alpha1"},
             {"kind", "TrainingJob"},
             {"name", job},
             {"uid", uids[j]},
             {"controller", true}}}}}},
        {"spec", {{"schedulerName", "lockstep"}, {"containers", {Container(1)}}}}};
    Check(client.Create(kube::resources::Pods(), ns, pod).status(), "create pod");
  });
  const double created_s = std::chrono::duration<double>(Clock::now() - start).count();
  while (gang_scheduler.gangs_bound() < flags.gangs) {
    if (Clock::now() - start > std::chrono::minutes(10)) Check(InternalError("timeout"), "bind");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf("lockstep phase: pods created in %.2f s, all %d gangs bound after %.2f s, "
              "%lld cycles\n",
              created_s, flags.gangs, seconds, static_cast<long long>(gang_scheduler.cycles()));
  gang_scheduler.Stop();
  return pods / seconds;
}

int Main(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (arg == "--gangs") flags.gangs = v;
    else if (arg == "--pods-per-gang") flags.pods_per_gang = v;
    else if (arg == "--inflight") flags.inflight = v;
    else if (arg == "--bind-workers") flags.bind_workers = v;
  }
  log::SetMinLevel(log::Level::kWarning);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Connection conn = Connect();
  const std::vector<std::string> nodes = ReadyNodes(*conn.client);
  const int pods = flags.gangs * flags.pods_per_gang;
  std::printf("%zu kwok nodes, %d gangs x %d pods = %d pods, %d in flight\n", nodes.size(),
              flags.gangs, flags.pods_per_gang, pods, flags.inflight);
  if (nodes.empty()) return 1;
  const double raw1 = RawPhase(*conn.client, nodes, pods, flags.inflight);
  std::printf("raw create+bind #1: %.0f pods/s\n", raw1);
  const double sched = LockstepPhase(conn, flags);
  std::printf("lockstep gangs: %.0f pods/s\n", sched);
  const double raw2 = RawPhase(*conn.client, nodes, pods, flags.inflight);
  std::printf("raw create+bind #2: %.0f pods/s\n", raw2);
  const double ceiling = (raw1 + raw2) / 2;
  std::printf("\n| measure | pods/s |\n|---|---|\n");
  std::printf("| raw create+bind (ceiling), run 1 | %.0f |\n", raw1);
  std::printf("| raw create+bind (ceiling), run 2 | %.0f |\n", raw2);
  std::printf("| lockstep: %d gangs x %d pods created at once, all bound | %.0f |\n", flags.gangs,
              flags.pods_per_gang, sched);
  std::printf("| ratio lockstep / mean(raw) | %.0f%% |\n", 100 * sched / ceiling);
  DeleteNamespaces(*conn.client);
  return 0;
}

}  // namespace
}  // namespace lockstep::bench

int main(int argc, char** argv) { return lockstep::bench::Main(argc, argv); }
