#pragma once
// TrainingJob (lockstep.dev/v1alpha1) as C++ values. Field names follow the CRD
// (crds/lockstep.dev_trainingjobs.yaml) in snake_case; member initializers are the schema's
// defaults (defaults.h names them), so an object stored before a default existed decodes to the
// same value the apiserver would give it today. Pod templates stay nlohmann::json: they are
// opaque PodTemplateSpecs the operator copies, never interprets beyond the trainer container.
// Plain values: copy freely, thread-compatible.

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "operator/api/enums.h"
#include "operator/api/resolved_template.h"
#include "operator/api/schema_defaults.h"

namespace lockstep::api {

inline constexpr std::string_view kGroup = "lockstep.dev";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "lockstep.dev/v1alpha1";
inline constexpr std::string_view kKind = "TrainingJob";
inline constexpr std::string_view kPlural = "trainingjobs";
// The implicit role of the pods built from spec.replicas and spec.template.
inline constexpr std::string_view kWorkerRole = "worker";
// The role label of hot-spare pods (spec.failurePolicy.spareReplicas): "<job>-spare-<index>",
// built from the worker template; their launchers run with LOCKSTEP_SPARE=1.
inline constexpr std::string_view kSpareRole = "spare";
// On the TrainingJob: a new value asks the operator for one gang restart (docs/failures.md), in
// place when restartMode is InPlace and every pod is healthy, else Recreate. Any string; only a
// change matters (status.restartRequest.value records the last one handled).
inline constexpr std::string_view kAnnotationRestartRequest = "lockstep.dev/restart-request";

// Wall-clock instants as the API writes them (RFC 3339, second precision; see time.h).
using Time = std::chrono::system_clock::time_point;

struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::optional<Time> creation_timestamp;
  std::optional<Time> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};

struct Role {
  std::string name;
  int32_t replicas = 0;
  std::optional<int32_t> procs_per_pod;
  nlohmann::json pod_template = nlohmann::json::object();  // a PodTemplateSpec
};

struct ElasticPolicy {
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  // A job running below spec.replicas grows back only after running this long at its size.
  int32_t grow_cooldown_seconds = kDefaultElasticGrowCooldownSeconds;
};

struct Placement {
  std::vector<std::string> topology_keys;  // coarse to fine
  std::optional<std::string> required_topology_key;
};

struct SuccessPolicy {
  SuccessOperator op = kDefaultSuccessOperator;
  std::vector<std::string> target_roles;  // empty: the default rule (see defaults.h)
};

struct ExitCodeMatcher {
  std::optional<std::string> container_name;  // unset: the trainer (first container)
  ExitCodeOperator op = ExitCodeOperator::kIn;
  std::vector<int32_t> values;
};

struct FailureRule {
  std::string name;
  RuleAction action = RuleAction::kRestartJob;
  ExitCodeMatcher on_exit_codes;
};

struct Backoff {
  int32_t initial_seconds = kDefaultBackoffInitialSeconds;
  int32_t max_seconds = kDefaultBackoffMaxSeconds;
  int32_t reset_after_seconds = kDefaultBackoffResetAfterSeconds;
};

struct FailurePolicy {
  int32_t max_restarts = kDefaultMaxRestarts;
  int32_t max_disruptions = kDefaultMaxDisruptions;
  RestartMode restart_mode = kDefaultRestartMode;
  int32_t hang_timeout_seconds = 0;  // 0: hang detection off
  // A requested in-place restart that has not given a complete running round within this long
  // falls back to Recreate.
  int32_t in_place_timeout_seconds = kDefaultInPlaceTimeoutSeconds;
  Backoff backoff;
  std::vector<FailureRule> rules;  // first match wins
  // Hot spares (docs/failures.md "Hot spares"): pods placed with the gang whose launchers stand
  // by and take a lost pod's node-rank in place. 0..kMaxSpareReplicas.
  int32_t spare_replicas = 0;
};

inline constexpr int32_t kMaxSpareReplicas = 16;

struct RunPolicy {
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int32_t> ttl_seconds_after_finished;
  bool suspend = kDefaultSuspend;
  CleanPodPolicy clean_pod_policy = kDefaultCleanPodPolicy;
  // How long a container of the attempt may fail to start (StartupFailing=True) before the
  // attempt ends per the failure policy (operator/controller/startup_policy.h).
  int32_t startup_timeout_seconds = kDefaultStartupTimeoutSeconds;
};

struct TrainingJobSpec {
  Framework framework = Framework::kGeneric;
  int32_t replicas = kDefaultReplicas;
  std::optional<int32_t> procs_per_pod;  // unset: GPUs of the trainer, else 1 (defaults.h)
  nlohmann::json pod_template = nlohmann::json::object();  // the workers' PodTemplateSpec
  std::vector<Role> roles;
  std::optional<ElasticPolicy> elastic;
  std::optional<Placement> placement;
  std::string priority_class_name;
  std::optional<SuccessPolicy> success_policy;
  FailurePolicy failure_policy;
  RunPolicy run_policy;
};

struct Condition {
  std::string type;
  ConditionStatus status = ConditionStatus::kUnknown;
  int64_t observed_generation = 0;
  Time last_transition_time{};
  std::string reason;
  std::string message;

  friend bool operator==(const Condition&, const Condition&) = default;
};

struct RestartCounts {
  int32_t failures = 0;
  int32_t disruptions = 0;
  // Restarts since the job last ran healthy for failurePolicy.backoff.resetAfterSeconds: the
  // exponent of the backoff before the next attempt.
  int32_t consecutive = 0;
  // In-place restarts (pods kept, launchers rejoin a new round) of any cause: failures (also in
  // `failures`) and requested ones.
  int32_t in_place = 0;
};

// The launchers' rendezvous as the operator last recorded it (node 0's server, control.h): its
// counters restart with every attempt (a new node-0 pod), so they belong to `attempt`.
struct RendezvousStatus {
  int32_t attempt = 0;
  int32_t round = 0;               // the launchers' round (their LOCKSTEP_ATTEMPT) last seen
  int32_t failure_restarts = 0;    // in-place restarts after failures, recorded
  int32_t requested_restarts = 0;  // in-place restarts on request, recorded
};

// The last lockstep.dev/restart-request the operator handled.
struct RestartRequestStatus {
  std::string value;  // the annotation's value
  Time time{};        // when the operator acted on it
  RestartMode mode = RestartMode::kInPlace;
  // InPlace: Pending (Restart sent, waiting for a complete running round), Completed,
  // FellBack (Recreate after failurePolicy.inPlaceTimeoutSeconds or a refused Restart),
  // Superseded (another gang restart came first); Recreate: Recreated.
  RestartRequestState state = RestartRequestState::kPending;
  int32_t attempt = 0;  // the attempt whose launchers were asked
  int32_t round = -1;   // the round the Restart aborted; -1 until the launchers answered
};

struct LastRestart {
  Time time{};  // when the failure was detected and the restart decided
  std::string reason;
  std::string message;
  int32_t attempt = 0;          // the attempt this restart started
  int32_t backoff_seconds = 0;  // the wait before that attempt's pods were created
  std::optional<RestartMode> mode;  // absent in statuses written before restart modes
  std::vector<std::string> nodes;  // the nodes found lost, if any
};

// A node the next placements of this job avoid until `until` (a failure cool-down).
struct ExcludedNode {
  std::string name;
  std::string reason;
  Time until{};
};

// Written by the gang scheduler (field manager lockstep-scheduler) for elastic jobs: the most
// worker pods, at most spec.replicas, whose gang fits now, counting the job's own pods as free.
struct Capacity {
  int32_t feasible_replicas = 0;
  Time observed_time{};
};

// The trainers' progress as node 0's launcher last reported it (LOCKSTEP_PROGRESS_FILE,
// docs/api.md "status.progress"), written at most every 10 s (controller/training_progress.h).
struct JobProgress {
  int64_t step = 0;
  std::optional<int64_t> total_steps;          // absent: the trainer did not say
  std::optional<int32_t> percent;              // 0..100, floor; with total_steps
  std::optional<double> samples_per_second;    // as reported (thousandths)
  // Seconds left at the step rate between the last two writes; absent until there is a rate,
  // without total_steps, or after the step went back (a resume from a checkpoint).
  std::optional<int64_t> eta_seconds;
  Time last_update{};  // when the operator saw this report first (the progress last moved)
  // The step the trainers' newest checkpoint holds (a restart resumes there); absent: not said.
  std::optional<int64_t> checkpoint_step;

  friend bool operator==(const JobProgress&, const JobProgress&) = default;
};

// A node-rank a promoted spare pod serves in the current attempt.
struct SpareServing {
  int32_t node_rank = 0;
  int32_t spare_index = 0;  // the spare pod's index: "<job>-spare-<index>"
  std::string pod;    // the spare pod that serves it now
  int32_t round = 0;  // the launchers' round it was promoted for

  friend bool operator==(const SpareServing&, const SpareServing&) = default;
};

// Hot spares as the operator last recorded them (controller/spare_plan.h).
struct SpareStatus {
  int32_t desired = 0;     // spec.failurePolicy.spareReplicas
  int32_t ready = 0;       // standby spares node 0's launcher has connected now
  int32_t promotions = 0;  // spares promoted over the job's life
  int32_t attempt = 0;     // the attempt `serving` and `attempt_promotions` belong to
  // The attempt's rendezvous server's promotion counter, as recorded (new ones = its answer's
  // count minus this).
  int32_t attempt_promotions = 0;
  std::vector<SpareServing> serving;  // by node-rank

  friend bool operator==(const SpareStatus&, const SpareStatus&) = default;
};

// The job's wall time by what it was spent on (docs/goodput.md; controller/goodput.h), in whole
// seconds up to `updated_at`: the state the status shows since then is charged at the next write.
struct GoodputCause {
  std::string cause;  // the restart's reason (status.lastRestart.reason)
  int64_t seconds = 0;

  friend bool operator==(const GoodputCause&, const GoodputCause&) = default;
};

struct JobGoodput {
  double ratio = 0;     // productive / accounted, 0..1
  int32_t percent = 0;  // floor(100 * ratio), for kubectl's GOODPUT column
  int64_t productive_seconds = 0;  // Running, less the recomputed steps' time
  int64_t placement_seconds = 0;   // created, queued, waiting for the gang to be bound
  int64_t startup_seconds = 0;     // bound, containers not all running (first start)
  int64_t recovery_seconds = 0;    // a restart until the gang ran again: sum of by-cause
  std::vector<GoodputCause> recovery_by_cause;  // sorted by cause
  int64_t recompute_seconds = 0;   // steps redone after restarts (since their checkpoint)
  std::optional<double> step_seconds;  // the step time last measured from status.progress
  Time updated_at{};

  friend bool operator==(const JobGoodput&, const JobGoodput&) = default;
};

struct TrainingJobStatus {
  int64_t observed_generation = 0;
  std::optional<JobState> state;
  std::string reason;
  std::string message;
  std::vector<Condition> conditions;
  int32_t replicas = 0;
  int32_t ready_replicas = 0;
  std::string workers_ready;
  std::string selector;
  int32_t attempt = 0;
  RestartCounts restarts;
  std::optional<Time> start_time;
  std::optional<Time> completion_time;
  std::optional<LastRestart> last_restart;
  std::optional<RendezvousStatus> rendezvous;
  std::optional<RestartRequestStatus> restart_request;
  std::vector<ExcludedNode> excluded_nodes;
  std::optional<Capacity> capacity;  // the scheduler's; the controller only reads it
  // The template of spec.templateRef as the job first ran with it (resolved_template.h).
  std::optional<ResolvedTemplate> resolved_template;
  std::optional<JobProgress> progress;
  std::optional<SpareStatus> spares;  // only for jobs with spec.failurePolicy.spareReplicas > 0
  std::optional<JobGoodput> goodput;
};

struct TrainingJob {
  ObjectMeta metadata;
  TrainingJobSpec spec;
  TrainingJobStatus status;
};

}  // namespace lockstep::api
