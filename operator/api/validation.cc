#include "operator/api/validation.h"

#include <algorithm>
#include <cstdint>
#include <regex>
#include <set>
#include <string_view>

#include "operator/api/children.h"
#include "protocol/contract.h"

namespace lockstep::api {

using nlohmann::json;
namespace contract = protocol::contract;

namespace {

constexpr size_t kMaxJobNameLength = 40;  // <job>-<role(16)>-<index(4)> fits a 63-char hostname
constexpr size_t kMaxRoleNameLength = 16;
constexpr int32_t kMaxReplicas = 10000;
constexpr int32_t kMaxRoleReplicas = 1024;
constexpr int32_t kMaxProcsPerPod = 1024;
constexpr size_t kMaxRoles = 8;

bool IsDns1035Label(const std::string& s) {
  static const std::regex kLabel("^[a-z]([-a-z0-9]*[a-z0-9])?$");
  return std::regex_match(s, kLabel);
}

// The string member `key` of `obj`, or "" when absent or not a string (never throws).
std::string StringMember(const json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}

class Errors {
 public:
  void Add(std::string field, std::string message) {
    list_.push_back(FieldError{std::move(field), std::move(message)});
  }
  void Range(const std::string& field, int64_t value, int64_t min, int64_t max) {
    if (value < min || value > max) {
      Add(field, "must be in " + std::to_string(min) + ".." + std::to_string(max) + ", got " +
                     std::to_string(value));
    }
  }
  std::vector<FieldError> Take() { return std::move(list_); }

 private:
  std::vector<FieldError> list_;
};

void ValidateName(const ObjectMeta& meta, Errors* errors) {
  if (meta.name.size() > kMaxJobNameLength || !IsDns1035Label(meta.name)) {
    errors->Add("metadata.name",
                "metadata.name must be a DNS-1035 label (lower case letters, digits, '-', starting "
                "with a letter) of at most 40 characters: it names the Service and prefixes every "
                "pod hostname");
  }
}

void ValidatePodTemplate(const json& tmpl, const std::string& path, Errors* errors) {
  const std::string containers_path = path + ".spec.containers";
  const json* containers = nullptr;
  if (tmpl.is_object() && tmpl.contains("spec") && tmpl["spec"].is_object() &&
      tmpl["spec"].contains("containers")) {
    containers = &tmpl["spec"]["containers"];
  }
  if (containers == nullptr || !containers->is_array() || containers->empty()) {
    errors->Add(containers_path, "at least one container is required");
    return;
  }
  std::set<std::string> names;
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& c = (*containers)[i];
    const std::string c_path = containers_path + "[" + std::to_string(i) + "]";
    const std::string name = StringMember(c, "name");
    if (name.empty()) errors->Add(c_path + ".name", "required");
    if (StringMember(c, "image").empty()) errors->Add(c_path + ".image", "required");
    if (!name.empty() && !names.insert(name).second) {
      errors->Add(c_path + ".name", "duplicate container name \"" + name + "\"");
    }
  }
  const json& trainer = (*containers)[0];
  const bool has_command = trainer.is_object() && trainer.contains("command") &&
                           trainer["command"].is_array() && !trainer["command"].empty();
  if (!has_command) {
    errors->Add(containers_path,
                "the first container (the trainer) must have a non-empty command: the launcher "
                "wraps it");
  }
}

void ValidateWorkers(const TrainingJobSpec& spec, Errors* errors) {
  errors->Range("spec.replicas", spec.replicas, 0, kMaxReplicas);
  if (spec.replicas == 0 && spec.roles.empty()) {
    errors->Add("spec.replicas", "spec.replicas must be >= 1 unless spec.roles defines other pods");
  }
  if (spec.procs_per_pod)
    errors->Range("spec.procsPerPod", *spec.procs_per_pod, 1, kMaxProcsPerPod);
  ValidatePodTemplate(spec.pod_template, "spec.template", errors);
  if (spec.elastic) {
    const ElasticPolicy& e = *spec.elastic;
    errors->Range("spec.elastic.minReplicas", e.min_replicas, 1, kMaxReplicas);
    errors->Range("spec.elastic.maxReplicas", e.max_replicas, 1, kMaxReplicas);
    if (e.min_replicas > e.max_replicas) {
      errors->Add("spec.elastic.minReplicas", "spec.elastic.minReplicas must be <= maxReplicas");
    }
    if (spec.replicas < e.min_replicas || spec.replicas > e.max_replicas) {
      errors->Add("spec.replicas",
                  "spec.replicas must be within [spec.elastic.minReplicas, "
                  "spec.elastic.maxReplicas]");
    }
  }
}

void ValidateRoles(const TrainingJobSpec& spec, Errors* errors) {
  if (spec.roles.size() > kMaxRoles) {
    errors->Add("spec.roles", "at most " + std::to_string(kMaxRoles) + " roles");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    const Role& role = spec.roles[i];
    const std::string path = "spec.roles[" + std::to_string(i) + "]";
    if (role.name.size() > kMaxRoleNameLength || !IsDns1035Label(role.name)) {
      errors->Add(path + ".name", "must be a DNS-1035 label of at most 16 characters");
    }
    if (role.name == kWorkerRole) {
      errors->Add(path + ".name",
                  "spec.roles[].name must not be 'worker': spec.replicas and spec.template "
                  "define the workers");
    }
    if (!names.insert(role.name).second) {
      errors->Add(path + ".name", "duplicate role name \"" + role.name + "\"");
    }
    errors->Range(path + ".replicas", role.replicas, 1, kMaxRoleReplicas);
    if (role.procs_per_pod)
      errors->Range(path + ".procsPerPod", *role.procs_per_pod, 1, kMaxProcsPerPod);
    ValidatePodTemplate(role.pod_template, path + ".template", errors);
  }
}

// The gang is ranked by its pods' priority (issue 44: a job field the pods do not carry must
// not buy more), so every pod carries the job's class: a template may repeat it, never name
// another, and never set the integer the apiserver derives from the class.
void ValidateTemplatePriority(const json& tmpl, const std::string& path,
                              const std::string& job_class, Errors* errors) {
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return;
  const json& spec = tmpl["spec"];
  if (spec.contains("priorityClassName") &&
      (job_class.empty() || StringMember(spec, "priorityClassName") != job_class)) {
    errors->Add(path + ".spec.priorityClassName",
                path + ".spec.priorityClassName must equal spec.priorityClassName: the job's "
                       "class ranks the gang and every pod carries it, so name it once, in "
                       "spec.priorityClassName");
  }
  if (spec.contains("priority")) {
    errors->Add(path + ".spec.priority",
                path + ".spec.priority must not be set: the apiserver sets it from the priority "
                       "class; name the class in spec.priorityClassName");
  }
}

void ValidatePriority(const TrainingJobSpec& spec, Errors* errors) {
  ValidateTemplatePriority(spec.pod_template, "spec.template", spec.priority_class_name, errors);
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    ValidateTemplatePriority(spec.roles[i].pod_template,
                             "spec.roles[" + std::to_string(i) + "].template",
                             spec.priority_class_name, errors);
  }
}

// DRA is not implemented (issue 41): a pod that claims devices through ResourceClaims would be
// placed without them, so the claim is refused and the extended-resource way named instead.
// Mirrors the CRD's two CEL rules (an empty list asks for nothing and passes).
bool NonEmptyArray(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_array() && !obj[key].empty();
}

void ValidateTemplateClaims(const json& tmpl, const std::string& path, Errors* errors) {
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return;
  const json& spec = tmpl["spec"];
  if (NonEmptyArray(spec, "resourceClaims")) {
    errors->Add(path + ".spec.resourceClaims",
                path + ".spec.resourceClaims is not supported: Lockstep's gang scheduler does "
                       "not allocate DRA ResourceClaims; request devices as extended resources "
                       "in the containers' resources.limits (e.g. nvidia.com/gpu)");
  }
  if (!spec.contains("containers") || !spec["containers"].is_array()) return;
  const json& containers = spec["containers"];
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    if (!c.is_object() || !c.contains("resources") || !NonEmptyArray(c["resources"], "claims")) {
      continue;
    }
    errors->Add(path + ".spec.containers[" + std::to_string(i) + "].resources.claims",
                path + ".spec.containers[].resources.claims is not supported: DRA "
                       "resourceClaims are not allocated by the gang scheduler; request devices "
                       "as extended resources in resources.limits (e.g. nvidia.com/gpu)");
  }
}

void ValidateClaims(const TrainingJobSpec& spec, Errors* errors) {
  ValidateTemplateClaims(spec.pod_template, "spec.template", errors);
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    ValidateTemplateClaims(spec.roles[i].pod_template,
                           "spec.roles[" + std::to_string(i) + "].template", errors);
  }
}

// The launcher's reserved names (issue 44 item 1): the operator adds its volumes, mounts, init
// container and environment to every pod, so a template naming them would take the launcher's
// place (an init container mounting lockstep-bin can replace the launcher) or be silently
// overridden. Mirrors the CRD's CEL rules on the typed skeleton of template.spec. The env names
// are those LauncherEnv (children.cc) sets, plus the token and the switch that turns auth off;
// the launcher's tuning knobs (LOCKSTEP_PEER_TIMEOUT, LOCKSTEP_RAY_START_ARGS, ...) stay open.
bool IsReservedEnvName(std::string_view name) {
  static const std::set<std::string_view, std::less<>> kReserved = {
      contract::kEnvFramework,     contract::kEnvJobName,        contract::kEnvRole,
      contract::kEnvRoleIndex,     contract::kEnvSpare,          contract::kEnvNodeRank,
      contract::kEnvNnodes,        contract::kEnvNprocPerNode,   contract::kEnvRdzvEndpoint,
      contract::kEnvRdzvId,        contract::kEnvAttempt,        contract::kEnvTokenFile,
      contract::kEnvToken,         contract::kEnvInsecureNoAuth, contract::kEnvMaxRestarts,
      contract::kEnvHangTimeout,   contract::kEnvAdvertiseAddr,  contract::kEnvMasterPort,
      contract::kEnvKvPort,        contract::kEnvGracePeriod,    contract::kEnvPodName,
      contract::kEnvNodeName,      contract::kEnvPodUid,         contract::kEnvFailExitCodes,
      contract::kEnvFrameworkPort};
  return kReserved.count(name) > 0;
}

bool IsReservedVolume(std::string_view name) {
  return name == kLauncherVolume || name == kTokenVolume;
}

// /lockstep, /var/run/lockstep (the token's directory), /run/lockstep (/var/run is a link to it
// in most images) or below, absolute or relative. Other spellings ("//lockstep", "/./lockstep",
// "/x/../lockstep") are not clean paths, refused on their own (IsCleanPath), as the CRD does:
// CEL has no path normalization within the cost budget.
bool IsReservedMountPath(std::string_view path) {
  for (std::string_view dir : {"lockstep", "var/run/lockstep", "run/lockstep"}) {
    for (std::string_view lead : {"/", ""}) {
      const std::string reserved = std::string(lead) + std::string(dir);
      if (path == reserved || path.starts_with(reserved + "/")) return true;
    }
  }
  return false;
}

// No "//", "." or ".." segment (a trailing "/" is fine).
bool IsCleanPath(std::string_view path) {
  return path != "." && path != ".." && path.find("//") == std::string_view::npos &&
         path.find("/./") == std::string_view::npos &&
         path.find("/../") == std::string_view::npos && !path.starts_with("./") &&
         !path.starts_with("../") && !path.ends_with("/.") && !path.ends_with("/..");
}

void ValidateReservedInContainers(const json& spec, const char* key, const std::string& path,
                                  Errors* errors) {
  if (!spec.contains(key) || !spec[key].is_array()) return;
  const json& containers = spec[key];
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    const std::string at = path + ".spec." + key + "[" + std::to_string(i) + "]";
    if (std::string_view(key) == "initContainers" && StringMember(c, "name") == kInitContainerName) {
      errors->Add(at + ".name", "lockstep-launcher-install is the operator's init container (it "
                                "installs the launcher): name this one otherwise");
    }
    if (c.is_object() && c.contains("env") && c["env"].is_array()) {
      for (size_t j = 0; j < c["env"].size(); ++j) {
        const std::string name = StringMember(c["env"][j], "name");
        if (!IsReservedEnvName(name)) continue;
        errors->Add(at + ".env[" + std::to_string(j) + "].name",
                    name + " is reserved: the operator sets it for the launcher (node rank, "
                           "rendezvous, token, attempt); remove it from the template");
      }
    }
    if (!c.is_object() || !c.contains("volumeMounts") || !c["volumeMounts"].is_array()) continue;
    for (size_t j = 0; j < c["volumeMounts"].size(); ++j) {
      const json& m = c["volumeMounts"][j];
      const std::string field = at + ".volumeMounts[" + std::to_string(j) + "]";
      if (IsReservedVolume(StringMember(m, "name"))) {
        errors->Add(field + ".name", "volumes lockstep-bin and lockstep-rdzv are the launcher's "
                                     "(its binary and the job's rendezvous token): a template "
                                     "must not mount them");
      }
      const std::string mount_path = StringMember(m, "mountPath");
      if (IsReservedMountPath(mount_path)) {
        errors->Add(field + ".mountPath",
                    "/lockstep, /var/run/lockstep and /run/lockstep are the launcher's paths (its "
                    "binary and the job's rendezvous token): a template must not mount there");
      }
      if (!IsCleanPath(mount_path)) {
        errors->Add(field + ".mountPath",
                    "a mountPath must be a clean path (no '//', '.' or '..' segments), so that "
                    "the launcher's reserved paths cannot be spelled another way; got " +
                        mount_path);
      }
    }
  }
}

void ValidateTemplateReserved(const json& tmpl, const std::string& path, Errors* errors) {
  if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) return;
  const json& spec = tmpl["spec"];
  if (spec.contains("volumes") && spec["volumes"].is_array()) {
    for (size_t i = 0; i < spec["volumes"].size(); ++i) {
      if (!IsReservedVolume(StringMember(spec["volumes"][i], "name"))) continue;
      errors->Add(path + ".spec.volumes[" + std::to_string(i) + "].name",
                  "volume names lockstep-bin and lockstep-rdzv are reserved: the operator adds "
                  "the launcher's volumes (its binary and the job's rendezvous token) under them");
    }
  }
  ValidateReservedInContainers(spec, "containers", path, errors);
  ValidateReservedInContainers(spec, "initContainers", path, errors);
}

void ValidateReserved(const TrainingJobSpec& spec, Errors* errors) {
  ValidateTemplateReserved(spec.pod_template, "spec.template", errors);
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    ValidateTemplateReserved(spec.roles[i].pod_template,
                             "spec.roles[" + std::to_string(i) + "].template", errors);
  }
}

// kMaxPodBytesPerJob (validation.h). The field named is the template that weighs most.
void ValidatePodBytes(const TrainingJobSpec& spec, Errors* errors) {
  const int64_t workers =
      std::max<int64_t>(spec.elastic ? std::max(spec.replicas, spec.elastic->max_replicas)
                                     : spec.replicas,
                        0);  // a negative count is ValidateWorkers' error, not negative bytes
  std::string heaviest = "spec.template";
  int64_t heaviest_bytes = static_cast<int64_t>(spec.pod_template.dump().size()) * workers;
  int64_t total = heaviest_bytes;
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    const int64_t bytes = static_cast<int64_t>(spec.roles[i].pod_template.dump().size()) *
                          std::max<int64_t>(spec.roles[i].replicas, 0);
    total += bytes;
    if (bytes > heaviest_bytes) {
      heaviest = "spec.roles[" + std::to_string(i) + "].template";
      heaviest_bytes = bytes;
    }
  }
  if (total <= kMaxPodBytesPerJob) return;
  errors->Add(heaviest, "the job's pods would hold " + std::to_string(total >> 20) +
                            " MiB of templates (template bytes x replicas), over the " +
                            std::to_string(kMaxPodBytesPerJob >> 20) +
                            " MiB one job may create; make the template smaller (large env or "
                            "args into a ConfigMap) or the job fewer pods");
}

void ValidatePlacementAndSuccess(const TrainingJobSpec& spec, Errors* errors) {
  if (spec.placement && spec.placement->required_topology_key) {
    const auto& keys = spec.placement->topology_keys;
    if (std::find(keys.begin(), keys.end(), *spec.placement->required_topology_key) == keys.end()) {
      errors->Add("spec.placement.requiredTopologyKey",
                  "spec.placement.requiredTopologyKey must be one of spec.placement.topologyKeys");
    }
  }
  if (!spec.success_policy) return;
  for (const std::string& target : spec.success_policy->target_roles) {
    const bool known =
        target == kWorkerRole || std::any_of(spec.roles.begin(), spec.roles.end(),
                                             [&target](const Role& r) { return r.name == target; });
    if (!known) {
      errors->Add("spec.successPolicy.targetRoles",
                  "spec.successPolicy.targetRoles must name 'worker' or a role in spec.roles");
    }
  }
}

void ValidateFailurePolicy(const FailurePolicy& f, Errors* errors) {
  const std::string path = "spec.failurePolicy";
  errors->Range(path + ".maxRestarts", f.max_restarts, 0, INT32_MAX);
  errors->Range(path + ".maxDisruptions", f.max_disruptions, 0, INT32_MAX);
  errors->Range(path + ".hangTimeoutSeconds", f.hang_timeout_seconds, 0, INT32_MAX);
  errors->Range(path + ".inPlaceTimeoutSeconds", f.in_place_timeout_seconds, 1, INT32_MAX);
  errors->Range(path + ".backoff.initialSeconds", f.backoff.initial_seconds, 0, INT32_MAX);
  errors->Range(path + ".backoff.maxSeconds", f.backoff.max_seconds, 0, INT32_MAX);
  errors->Range(path + ".backoff.resetAfterSeconds", f.backoff.reset_after_seconds, 0, INT32_MAX);
  if (f.backoff.initial_seconds > f.backoff.max_seconds) {
    errors->Add(path + ".backoff.initialSeconds",
                "spec.failurePolicy.backoff.initialSeconds must be <= maxSeconds");
  }
  for (size_t i = 0; i < f.rules.size(); ++i) {
    const ExitCodeMatcher& m = f.rules[i].on_exit_codes;
    const std::string values_path = path + ".rules[" + std::to_string(i) + "].onExitCodes.values";
    if (m.values.empty()) errors->Add(values_path, "at least one exit code is required");
    std::set<int32_t> seen;
    for (int32_t v : m.values) {
      if (v < 0 || v > 255) errors->Add(values_path, "exit codes must be in 0..255");
      if (!seen.insert(v).second) {
        errors->Add(values_path, "duplicate exit code " + std::to_string(v));
      }
    }
  }
}

// A spare takes a lost pod's node-rank with the worker template and no role of its own: it cannot
// stand in for a chief, ps or Ray head (another template, and the framework's own addresses name
// that task), and an elastic round changes its size instead (a lost pod shrinks the job).
void ValidateSpares(const TrainingJobSpec& spec, Errors* errors) {
  const std::string path = "spec.failurePolicy.spareReplicas";
  const int32_t n = spec.failure_policy.spare_replicas;
  errors->Range(path, n, 0, kMaxSpareReplicas);
  if (n <= 0) return;
  if (!spec.roles.empty()) {
    errors->Add(path, "spare pods stand in for workers only; a job with spec.roles (chief, ps, "
                      "head, ...) cannot have spareReplicas");
  }
  if (spec.elastic) {
    errors->Add(path, "an elastic job replaces a lost pod by shrinking; spareReplicas is not "
                      "supported with spec.elastic");
  }
  if (spec.replicas < 2) {
    errors->Add(path, "a spare takes a lost pod's node-rank other than 0 (node 0 hosts the "
                      "rendezvous); a job of one pod has none to take");
  }
}

void ValidateRunPolicy(const RunPolicy& r, Errors* errors) {
  if (r.active_deadline_seconds) {
    errors->Range("spec.runPolicy.activeDeadlineSeconds", *r.active_deadline_seconds, 1, INT64_MAX);
  }
  if (r.ttl_seconds_after_finished) {
    errors->Range("spec.runPolicy.ttlSecondsAfterFinished", *r.ttl_seconds_after_finished, 0,
                  INT32_MAX);
  }
  errors->Range("spec.runPolicy.startupTimeoutSeconds", r.startup_timeout_seconds, 1, INT32_MAX);
}

bool SamePlacement(const std::optional<Placement>& a, const std::optional<Placement>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  return a->topology_keys == b->topology_keys &&
         a->required_topology_key == b->required_topology_key;
}

std::vector<std::string> RoleNames(const TrainingJobSpec& spec) {
  std::vector<std::string> names;
  for (const Role& r : spec.roles) names.push_back(r.name);
  return names;
}

}  // namespace

std::vector<FieldError> Validate(const TrainingJob& job) {
  Errors errors;
  ValidateName(job.metadata, &errors);
  ValidateWorkers(job.spec, &errors);
  ValidateRoles(job.spec, &errors);
  ValidatePriority(job.spec, &errors);
  ValidateClaims(job.spec, &errors);
  ValidateReserved(job.spec, &errors);
  ValidatePodBytes(job.spec, &errors);
  ValidatePlacementAndSuccess(job.spec, &errors);
  ValidateFailurePolicy(job.spec.failure_policy, &errors);
  ValidateSpares(job.spec, &errors);
  ValidateRunPolicy(job.spec.run_policy, &errors);
  return errors.Take();
}

std::vector<FieldError> ValidateUpdate(const TrainingJob& old_job, const TrainingJob& new_job) {
  Errors errors;
  const TrainingJobSpec& o = old_job.spec;
  const TrainingJobSpec& n = new_job.spec;
  if (o.framework != n.framework) errors.Add("spec.framework", "spec.framework is immutable");
  if (o.procs_per_pod != n.procs_per_pod) {
    errors.Add("spec.procsPerPod", "spec.procsPerPod is immutable");
  }
  if (!SamePlacement(o.placement, n.placement)) {
    errors.Add("spec.placement", "spec.placement is immutable");
  }
  if (o.elastic.has_value() != n.elastic.has_value()) {
    errors.Add("spec.elastic", "spec.elastic cannot be added or removed after creation");
  }
  if (RoleNames(o) != RoleNames(n)) {
    errors.Add("spec.roles",
               "spec.roles names are immutable (roles cannot be added, removed or renamed)");
  }
  return errors.Take();
}

Status ToStatus(const std::vector<FieldError>& errors) {
  if (errors.empty()) return Status::Ok();
  std::string message;
  for (const FieldError& e : errors) {
    if (!message.empty()) message += "; ";
    message += e.field + ": " + e.message;
  }
  return InvalidArgumentError(std::move(message));
}

}  // namespace lockstep::api
