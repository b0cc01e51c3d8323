#pragma once
// lockstep-operator's command-line flags. Accepts `--flag=value` and `--flag value`; booleans
// also as bare `--flag`. A bad flag is an error value whose one-line message main prints before
// exiting with status 2.

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "common/log.h"
#include "common/status.h"

namespace lockstep::app {

struct OperatorOptions {
  std::string kubeconfig;               // empty: $KUBECONFIG, in-cluster, ~/.kube/config
  std::vector<std::string> namespaces;  // empty: all namespaces
  bool leader_elect = false;
  std::string leader_election_namespace;  // empty: $POD_NAMESPACE, else in-cluster, else default
  std::string leader_election_id = "lockstep-operator";
  std::string metrics_bind_address = ":8080";       // "0" disables
  std::string health_probe_bind_address = ":8081";  // "0" disables
  // --metrics-secure: /metrics over HTTPS, each scrape's bearer token checked with a TokenReview
  // and a SubjectAccessReview (get on /metrics), as kubebuilder's --metrics-secure does
  // (metrics_auth.h). The certificate: <metrics_cert_path>/<metrics_cert_name> and
  // <metrics_cert_key>, reread when they change; metrics_cert_path empty: self-signed in memory.
  bool metrics_secure = false;
  std::string metrics_cert_path;
  std::string metrics_cert_name = "tls.crt";
  std::string metrics_cert_key = "tls.key";
  // 200/400: a 500-gang burst (about 6,000 requests of the controller) ran at the limiter's pace
  // at 50/100 and, once pods were created placed and placements decided in batches, at 100/200
  // too (104 requests a second); 200/400 ran it 17% faster and 400/800 no faster than that
  // (bench/RESULTS.md, 2026-12-04).
  double qps = 200;
  int burst = 400;
  int workers = 16;
  log::Format log_format = log::Format::kText;
  std::string launcher_image = "lockstep/launcher:0.1.0";
  // The built-in gang scheduler binds pods with schedulerName lockstep (on the leader only).
  // Off: something else binds them (tests that drive binding themselves).
  bool gang_scheduler = true;
  // With the gang scheduler: a job's whole gang is placed before its pods are created and
  // created with spec.nodeName set (one write per pod, no bind; docs/scheduler-cycle.md
  // "Created placed"). Off: created unplaced, then bound.
  bool create_placed = true;
  // The scheduler's own client-side limit: binding whole gangs needs hundreds of requests per
  // second, far above what reconciles need.
  double scheduler_qps = 500;
  int scheduler_burst = 1000;
  // The failure detector: a node whose kube-node-lease Lease is not renewed for this long is
  // lost (a kubelet renews every 10 s, kwok too with its default 40 s lease).
  std::chrono::seconds node_lease_grace{20};
  // Most nodes silent at once is the control plane's problem, not theirs (silence_guard.h).
  double node_silence_hold_fraction = 0.55;
  // --on-node-cordon=restart: a cordoned node counts as lost (default ignore).
  bool restart_on_node_cordon = false;
  // --kueue: jobs labelled kueue.x-k8s.io/queue-name are admitted by Kueue through a Workload
  // the operator owns (docs/queues.md); needs Kueue's CRDs and the RBAC the chart adds with
  // kueue.enabled.
  bool kueue = false;
  // The operator's own pod labels, for the jobs' NetworkPolicies (api/network_policy.h).
  std::map<std::string, std::string> operator_pod_labels;
  bool help = false;
};

StatusOr<OperatorOptions> ParseFlags(const std::vector<std::string>& args);
std::string Usage();

}  // namespace lockstep::app
