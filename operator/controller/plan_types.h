#pragma once
// What one ComputePlan pass (plan.h) sees and decides: the job's observed children (Observed),
// the plan of writes and status (Plan) and the operator options it reads (PlanOptions). Data
// only: the plan's steps (restart_plan, inplace_plan, ...) share it with ComputePlan through
// plan_pass.h, and the reconciler carries a Plan out (plan_executor.h, reconciler.h).

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/network_policy.h"
#include "operator/api/types.h"
#include "operator/controller/goodput.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/node_health.h"
#include "operator/kube/objects.h"
#include "operator/kueue/gate.h"

namespace lockstep::controller {

// What the operator last heard from a job's launchers (launcher_monitor.h), for the current
// attempt's worker-0 pod.
struct LauncherObservation {
  std::string pod_uid;
  // The last Status request was answered (else `error` says why, and `status` holds only the
  // lost members the last answers reported).
  bool answered = false;
  std::string error;
  protocol::ControlStatus status;
  // The last Restart sent to this pod (status.restartRequest.value), and its answer once known.
  struct RestartAnswer {
    std::string request;
    bool answered = false;
    protocol::ControlAck ack;
    std::string error;  // no answer: why
  };
  std::optional<RestartAnswer> restart;
  // The operator's probes of pods the launchers reported lost (status.lost), by pod name: the
  // report each answers (LostMember::lost_unix_ms) and the answer (peer_loss.h).
  struct Probe {
    uint64_t report_lost_unix_ms = 0;
    ProbeAnswer answer;
  };
  std::map<std::string, Probe> probes = {};
};

// What the informer caches hold of the job's children (only objects it controls), and the
// health of the nodes its pods are bound to. Not the rendezvous Secret: no informer holds Secrets
// (job_caches.h); Plan::create_secret says when the executor makes sure of it.
struct Observed {
  std::vector<kube::Pod> pods;
  bool service_exists = false;
  // The lost nodes among those the pods are bound to (NodeHealthMonitor::Assess), by name; also
  // those of gone_pods.
  std::map<std::string, NodeVerdict> lost_nodes;
  // Node 0's launcher of the current attempt, when the operator has heard from it.
  std::optional<LauncherObservation> launchers = std::nullopt;
  bool network_policy_exists = false;
  // The job's EndpointSlices (endpoint_plan.h): name -> their endpoints digest annotation.
  std::map<std::string, std::string> endpoint_slices = {};
  // Set only for a job Kueue manages (the label kueue.x-k8s.io/queue-name, operator run with
  // --kueue): its Workload and what the plan needs of Kueue's objects (kueue_plan.h).
  std::optional<kueue::KueueObservation> kueue = std::nullopt;
  // The nodes of the pods the launchers reported lost (LauncherObservation::status.lost), as the
  // node caches hold them, by node name; absent before the caches synced (peer_loss.h).
  std::map<std::string, NodeSnapshot> peer_loss_nodes = {};
  // For a job with hot spares and spec.placement.requiredTopologyKey: that label's value on the
  // node the gang's rendezvous pod is bound to (the domain the gang scheduler chose for the whole
  // gang), so a replacement spare is placed in it (spare_plan.h). Unset before that pod is bound,
  // or when the node caches do not hold the node or its label.
  std::optional<std::string> spare_domain = std::nullopt;
  // The job's pods deleted lately by someone other than the controller, as the informer last
  // held them, that no pod in `pods` replaces (same uid): bound and unfinished when they went
  // (gone_pods.h). Any attempt; the plan reads those of the current one.
  std::vector<kube::Pod> gone_pods = {};
};

struct PodDeletion {
  std::string name;
  std::string uid;  // a precondition: never delete a newer pod of the same name
  // 0: force (a pod on a lost node: no kubelet will ever confirm it, so it would stay
  // Terminating); unset: the pod's own grace period.
  std::optional<int64_t> grace_period_seconds;
};

struct EventSpec {
  std::string type;  // "Normal" or "Warning"
  std::string reason;
  std::string message;
  friend bool operator==(const EventSpec&, const EventSpec&) = default;
};

enum class Outcome { kNone, kSucceeded, kFailed };

// What one pass may write (PlanExecutor), and so what a plan holds: pods beyond these wait for
// the next pass.
inline constexpr int kMaxCreatesPerPass = 500;
inline constexpr int kMaxDeletesPerPass = 500;

struct Plan {
  bool create_service = false;
  // Make sure of the rendezvous Secret: create it, and on AlreadyExists read it back and go on
  // only if the job controls it (plan_executor.h). The executor does so also in every pass that
  // creates pods, whatever this says, so no pod is created without it; set here for the job's
  // first pass, which has the Secret made with the Service even when no pod is created yet. A
  // steady-state pass sends no Secret request.
  bool create_secret = false;
  bool create_network_policy = false;
  // EndpointSlices of the job's Service to apply whole (endpoint_plan.h), after every other write.
  std::vector<nlohmann::json> endpoint_slices;
  // Full Pod objects, in node-rank order: at most kMaxCreatesPerPass (only those built).
  std::vector<nlohmann::json> pod_creates;
  std::vector<PodDeletion> pod_deletes;
  bool delete_job = false;  // TTL after finished expired

  // The status to persist (written only if it differs from the stored one).
  api::TrainingJobStatus status;
  // Only status.conditions may be written (a status the operator could not fully read: any
  // other field it writes could overwrite one it failed to read).
  bool conditions_only = false;
  // Emitted only after the status write succeeded.
  std::vector<EventSpec> events;
  // Reconcile again after this long even without an event (deadline, TTL).
  std::optional<std::chrono::seconds> requeue_after;

  // Transitions of this pass, for metrics (recorded after the status write).
  bool became_running = false;  // the first attempt's gang is running
  Outcome outcome = Outcome::kNone;
  struct Restart {
    std::string reason;
    api::RestartMode mode = api::RestartMode::kRecreate;
    std::optional<double> detection_delay_seconds;  // failure -> this decision, when known
  };
  std::optional<Restart> restart;         // a gang restart was decided
  std::optional<double> recovery_seconds;  // a restarted gang runs again: detection -> now
  int spare_promotions = 0;  // hot spares newly recorded as promoted (spare_plan.h)
  // A recovery this pass records that the status never showed (goodput.h LateRecovery): a
  // Recreate restart's detection lag, an in-place restart's or a spare promotion's recovery.
  std::optional<LateRecovery> late_recovery;

  // Launcher control (inplace_plan.h), carried out after the status write: ask node 0's launcher
  // for its Status (the name of the pod to ask), and send it Restart for a request.
  std::optional<std::string> launcher_poll;
  struct LauncherRestart {
    std::string pod;      // worker-0 pod's name
    std::string request;  // the annotation value
    std::string reason;
  };
  std::optional<LauncherRestart> launcher_restart;
  // Probe a pod a launcher reported lost (peer_loss_plan.h): its IP at the rendezvous port.
  struct LauncherProbe {
    std::string pod;
    std::string ip;
    uint64_t report_lost_unix_ms = 0;
    friend bool operator==(const LauncherProbe&, const LauncherProbe&) = default;
  };
  std::vector<LauncherProbe> launcher_probes = {};
  // What this pass concluded about each lost report, for the log and
  // lockstep_peer_loss_reports_total (the reconciler records each verdict once per report).
  struct PeerLossNote {
    std::string pod;
    uint64_t report_lost_unix_ms = 0;
    std::string outcome;  // LossVerdict::Outcome's name
    std::string evidence;
  };
  std::vector<PeerLossNote> peer_loss = {};

  // Writes to the job's Kueue Workload (create, delete, spec.active, status conditions), after
  // the pod writes (kueue/gate.h).
  std::vector<kueue::WorkloadWrite> workload_writes;

  // The step of the pass's table that claimed this pass (plan.h PlanSteps), for tests and logs.
  std::string_view decided_by;
};

struct PlanOptions {
  std::string launcher_image;
  // How long the nodes a job lost stay out of its placements (status.excludedNodes).
  std::chrono::seconds node_exclusion{300};
  // The operator, as the job's NetworkPolicy lets it reach the rendezvous port.
  api::OperatorPeer operator_peer = {};
};

}  // namespace lockstep::controller
