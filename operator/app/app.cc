#include "operator/app/app.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "common/log.h"
#include "operator/app/http_server.h"
#include "operator/app/metrics_auth.h"
#include "operator/app/tls_context.h"
#include "operator/controller/controller.h"
#include "operator/controller/controller_metrics.h"
#include "operator/kube/config.h"
#include "operator/kube/curl_transport.h"
#include "operator/kube/leader_elector.h"
#include "operator/kube/metrics.h"
#include "operator/kube/rest_client.h"
#include "operator/scheduler/cycle/gang_scheduler.h"

namespace lockstep::app {

struct OperatorApp::Parts {
  std::shared_ptr<kube::Transport> transport;
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<kube::KubeMetrics> kube_metrics;
  std::unique_ptr<controller::ControllerMetrics> metrics;
  // Before the clients whose writes it fences, so it is destroyed after them.
  std::unique_ptr<kube::LeaderElector> elector;
  std::unique_ptr<kube::RestClient> client;
  std::unique_ptr<controller::TrainingJobController> controller;
  std::unique_ptr<kube::RestClient> scheduler_client;   // same transport, own rate limit
  std::unique_ptr<scheduler::GangScheduler> scheduler;  // null with --gang-scheduler=false
  std::unique_ptr<controller::GangPlacer> placer;       // null with --create-placed=false
  std::thread elector_thread;
  HttpServer metrics_server;
  HttpServer health_server;
  // --metrics-secure: reviews each scrape's token; last, so it stops (and no longer calls the
  // metrics handler) before anything that handler reads is destroyed.
  std::unique_ptr<kube::RestClient> metrics_auth_client;
  std::unique_ptr<MetricsAuthorizer> metrics_auth;
};

namespace {

// The controller's view of the scheduler for gangs created placed (controller/create_placed.h).
class SchedulerPlacer final : public controller::GangPlacer {
 public:
  explicit SchedulerPlacer(scheduler::GangScheduler& scheduler) : scheduler_(scheduler) {}
  StatusOr<Grant> PlaceForCreate(const std::vector<nlohmann::json>& pods) override {
    StatusOr<scheduler::GangScheduler::CreateGrant> grant = scheduler_.PlaceForCreate(pods);
    if (!grant.ok()) return grant.status();
    return Grant{std::move(grant->gang_key), std::move(grant->node_of)};
  }
  Status FinishCreate(const std::string& gang_key, const std::vector<nlohmann::json>& created,
                      bool whole) override {
    return scheduler_.FinishCreate(gang_key, created, whole);
  }

 private:
  scheduler::GangScheduler& scheduler_;
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string Identity() {
  std::string base = Env("POD_NAME");
  if (base.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    base = host;
  }
  std::random_device rd;
  std::ostringstream out;
  out << base << "_" << std::hex << rd() << rd();
  return out.str();
}

std::string LeaseNamespace(const OperatorOptions& o) {
  if (!o.leader_election_namespace.empty()) return o.leader_election_namespace;
  if (std::string ns = Env("POD_NAMESPACE"); !ns.empty()) return ns;
  std::ifstream in("/var/run/secrets/kubernetes.io/serviceaccount/namespace");
  std::string ns;
  if (in && std::getline(in, ns) && !ns.empty()) return ns;
  return "default";
}

HttpResponse Metrics(prometheus::Registry& registry,
                     controller::TrainingJobController& controller) {
  controller.RefreshJobGauge();
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return {200, "text/plain; version=0.0.4; charset=utf-8", out.str()};
}

}  // namespace

// --metrics-secure: TLS with the given or a self-signed certificate, and /metrics only for
// tokens allowed to get it (metrics_auth.h). The reviews run on the authorizer's thread, which
// also renders the metrics once a scrape is allowed.
Status OperatorApp::ServeSecureMetrics(const OperatorOptions& o, Parts& p) {
  std::unique_ptr<TlsServerContext> tls;
  if (o.metrics_cert_path.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    LS_ASSIGN_OR_RETURN(tls,
                        TlsServerContext::SelfSigned("lockstep-operator", {"localhost", host}));
    log::Info("metrics serving certificate is self-signed, made at start (no --metrics-cert-path)",
              {{"sha256", tls->Fingerprint()}});
  } else {
    const std::string cert = o.metrics_cert_path + "/" + o.metrics_cert_name;
    LS_ASSIGN_OR_RETURN(tls, TlsServerContext::FromFiles(cert, o.metrics_cert_path + "/" +
                                                                   o.metrics_cert_key));
    log::Info("metrics serving certificate loaded",
              {{"cert", cert}, {"sha256", tls->Fingerprint()}});
  }
  p.metrics_server.EnableTls(std::move(tls));
  p.metrics_auth_client = std::make_unique<kube::RestClient>(
      p.transport, MetricsAuthorizer::ClientOptions(), p.kube_metrics.get());
  p.metrics_auth = std::make_unique<MetricsAuthorizer>(*p.metrics_auth_client);
  p.metrics_server.HandleAsync("/metrics", [&p](const HttpRequest& req, HttpResponder respond) {
    p.metrics_auth->Check(req, [&p, respond = std::move(respond)](const AuthResult& r) {
      if (r.code != 200) return respond({r.code, "text/plain; charset=utf-8", r.message});
      respond(Metrics(*p.registry, *p.controller));
    });
  });
  return Status::Ok();
}

OperatorApp::OperatorApp(OperatorOptions options)
    : options_(std::move(options)), parts_(std::make_unique<Parts>()) {}

OperatorApp::~OperatorApp() = default;

void OperatorApp::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
  }
  cv_.notify_all();
}

void OperatorApp::WaitForShutdown() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return shutdown_; });
}

Status OperatorApp::Start() {
  Parts& p = *parts_;
  LS_ASSIGN_OR_RETURN(kube::ClusterConfig config, kube::LoadDefaultConfig(options_.kubeconfig));
  LS_ASSIGN_OR_RETURN(std::unique_ptr<kube::Transport> transport,
                      kube::NewCurlTransport(config));
  p.transport = std::move(transport);
  p.kube_metrics = std::make_unique<kube::KubeMetrics>(*p.registry);
  p.metrics = std::make_unique<controller::ControllerMetrics>(*p.registry);
  const std::string identity = Identity();
  // The elector exists before the clients so that their writes can be fenced by its lease from
  // the first one on; it starts campaigning at the end of Start().
  if (options_.leader_elect) LS_RETURN_IF_ERROR(MakeElector(identity));
  kube::RestOptions rest;
  rest.qps = options_.qps;
  rest.burst = options_.burst;
  if (p.elector) rest.write_fence = [elector = p.elector.get()] { return elector->MayWrite(); };
  p.client = std::make_unique<kube::RestClient>(p.transport, rest, p.kube_metrics.get());

  controller::ControllerOptions copts;
  copts.namespaces = options_.namespaces;
  copts.workers = options_.workers;
  copts.launcher_image = options_.launcher_image;
  // In a pod, the jobs' NetworkPolicies let this operator's pods reach their rendezvous port.
  copts.operator_peer = {Env("POD_NAMESPACE"), options_.operator_pod_labels};
  copts.events.instance = identity;
  copts.node_health.lease_grace = options_.node_lease_grace;
  copts.node_health.restart_on_cordon = options_.restart_on_node_cordon;
  copts.node_health.silence_hold_fraction = options_.node_silence_hold_fraction;
  copts.kueue = options_.kueue;
  // The controller and the scheduler cache the same pods and nodes: one decoded copy of each.
  const kube::ObjectPools pools = kube::NewObjectPools();
  if (options_.gang_scheduler) copts.pools = pools;
  p.controller = std::make_unique<controller::TrainingJobController>(
      *p.client, copts, p.kube_metrics.get(), p.metrics.get());
  if (options_.gang_scheduler) {
    scheduler::SchedulerOptions sopts;
    sopts.pools = pools;
    // One watched namespace confines the scheduler's jobs and gangs to it (namespace-scoped
    // RBAC); with several, it watches TrainingJobs cluster-wide and needs cluster-wide reads.
    if (options_.namespaces.size() == 1) sopts.namespace_filter = options_.namespaces.front();
    // The detector knows a node is dead (its Lease) long before its Node reads NotReady.
    const controller::NodeHealthMonitor* health = &p.controller->node_health();
    sopts.node_lost = [health](const std::string& node) {
      return health->Assess(node, RealClock::Get().WallNow()).lost;
    };
    kube::RestOptions srest;
    srest.qps = options_.scheduler_qps;
    srest.burst = options_.scheduler_burst;
    srest.write_fence = rest.write_fence;
    p.scheduler_client =
        std::make_unique<kube::RestClient>(p.transport, srest, p.kube_metrics.get());
    p.scheduler =
        std::make_unique<scheduler::GangScheduler>(*p.scheduler_client, *p.registry, sopts);
    if (options_.create_placed) {
      p.placer = std::make_unique<SchedulerPlacer>(*p.scheduler);
      p.controller->SetGangPlacer(p.placer.get());
    }
  }

  if (options_.metrics_bind_address != "0") {
    if (options_.metrics_secure) {
      LS_RETURN_IF_ERROR(ServeSecureMetrics(options_, p));
    } else {
      p.metrics_server.Handle("/metrics", [&p] { return Metrics(*p.registry, *p.controller); });
    }
    LS_RETURN_IF_ERROR(p.metrics_server.Start(options_.metrics_bind_address));
    log::Info("serving metrics", {{"address", options_.metrics_bind_address},
                                  {"secure", options_.metrics_secure ? "true" : "false"}});
  }
  if (options_.health_probe_bind_address != "0") {
    p.health_server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
    p.health_server.Handle("/readyz", [&p] {
      // Not ready: name the caches still waiting for their first list (a start-up that hangs
      // on one says which, to a probe's failure message as to a person with curl).
      const bool scheduler_synced = p.scheduler == nullptr || p.scheduler->HasSynced();
      if (p.controller->CachesSynced() && scheduler_synced) {
        return HttpResponse{200, "text/plain", "ok\n"};
      }
      std::string unsynced = p.controller->UnsyncedCaches();
      if (!scheduler_synced) {
        unsynced += (unsynced.empty() ? "" : ", ") + std::string("scheduler: ") +
                    p.scheduler->UnsyncedCaches();
      }
      return HttpResponse{503, "text/plain", "informer caches not synced: " + unsynced + "\n"};
    });
    LS_RETURN_IF_ERROR(p.health_server.Start(options_.health_probe_bind_address));
  }

  p.controller->StartCaches();
  // A standby's scheduler caches fill before it leads: its first creates are placed at once
  // (gang_scheduler.h, StartCaches). Only cycles and binds wait for leadership.
  if (p.scheduler) p.scheduler->StartCaches();
  if (!options_.leader_elect) {
    p.controller->StartWorkers();
    if (p.scheduler) p.scheduler->Start();
    return Status::Ok();
  }
  p.elector_thread = std::thread([&p] { p.elector->Run(); });
  log::Info("leader election started",
            {{"lease", LeaseNamespace(options_) + "/" + options_.leader_election_id}});
  return Status::Ok();
}

Status OperatorApp::MakeElector(const std::string& identity) {
  Parts& p = *parts_;
  kube::LeaderElectionConfig le;
  le.lease_namespace = LeaseNamespace(options_);
  le.lease_name = options_.leader_election_id;
  le.identity = identity;
  LS_RETURN_IF_ERROR(kube::ValidateLeaderElectionConfig(le));
  kube::LeaderCallbacks cb;
  cb.on_started_leading = [&p, identity] {
    log::Info("became leader; starting workers", {{"identity", identity}});
    p.controller->StartWorkers();
    // Binding is a leader's act: two schedulers would race for the same capacity.
    if (p.scheduler) p.scheduler->Start();
  };
  cb.on_stopped_leading = [this] {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (shutdown_) return;  // a requested stop released the Lease
    }
    log::Error("lost leadership; exiting so a fresh process rejoins the election");
    std::fflush(stderr);
    std::_Exit(1);
  };
  p.elector = std::make_unique<kube::LeaderElector>(p.transport, le, cb, p.kube_metrics.get());
  return Status::Ok();
}

int OperatorApp::Run() {
  if (Status s = Start(); !s.ok()) {
    log::Error("cannot start the operator", {{"error", s.ToString()}});
    Shutdown();
    parts_->controller.reset();
    return 1;
  }
  log::Info("operator started",
            {{"workers", std::to_string(options_.workers)},
             {"namespaces", options_.namespaces.empty() ? "all" : std::to_string(
                                                                      options_.namespaces.size())}});
  WaitForShutdown();
  log::Info("shutting down");
  Parts& p = *parts_;
  StopGuard guard(p);
  // Every watch is asked to end first: each notices within about a second, so stopping them one
  // after another cost seconds per shutdown (and per leader hand-over).
  p.controller->RequestStop();
  if (p.scheduler) p.scheduler->Stop();
  p.controller->Stop();
  if (p.elector) {
    p.elector->Stop();
    p.elector_thread.join();
  }
  p.metrics_server.Stop();
  p.health_server.Stop();
  guard.Done();
  log::Info("stopped");
  return 0;
}

OperatorApp::StopGuard::StopGuard(Parts& parts)
    : thread_([this, &parts] {
        std::unique_lock<std::mutex> lock(mu_);
        if (cv_.wait_for(lock, kStopGrace, [this] { return done_; })) return;
        // Work still in flight after the grace: a dead or hung apiserver. Cancelled requests
        // return at once; the next leader redoes whatever a pass left half done, as after a
        // crash.
        log::Warning("stop is slow; cancelling the API requests still in flight");
        parts.client->Cancel();
        if (parts.scheduler) parts.scheduler->CancelRequests();
        if (cv_.wait_until(lock, start_ + kStopBound, [this] { return done_; })) return;
        log::Error("stop did not finish in time; exiting",
                   {{"bound_seconds", std::to_string(kStopBound.count())}});
        std::fflush(stderr);
        std::_Exit(1);
      }) {}

OperatorApp::StopGuard::~StopGuard() {
  Done();
  thread_.join();
}

void OperatorApp::StopGuard::Done() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
}

}  // namespace lockstep::app
