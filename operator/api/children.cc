#include "operator/api/children.h"

#include <algorithm>
#include <limits>
#include <set>

#include <openssl/evp.h>

#include "operator/api/defaults.h"
#include "operator/api/failure_rules.h"
#include "operator/api/network_policy.h"
#include "operator/api/ranks.h"
#include "protocol/contract.h"

namespace lockstep::api {

using nlohmann::json;
namespace contract = protocol::contract;

namespace {

// Facts every pod of the attempt shares.
struct AttemptContext {
  std::string rdzv_endpoint;  // node rank 0's DNS name and port
  std::string nnodes;         // "N", or "MIN:MAX" when elastic
};

std::string Base64(std::string_view in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(in.data()),
                                static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

json JobLabels(const TrainingJob& job) { return {{kLabelJobName, job.metadata.name}}; }

}  // namespace

json ChildMetadata(const TrainingJob& job, std::string name) {
  return {{"name", std::move(name)},
          {"namespace", job.metadata.namespace_name},
          {"labels", JobLabels(job)},
          {"ownerReferences", json::array({ControllerOwnerReference(job)})}};
}

namespace {

// "<pod>.<job>.<ns>.svc": resolvable through the headless Service from any pod of the cluster.
std::string PodDnsName(const TrainingJob& job, const std::string& pod_name) {
  return pod_name + "." + job.metadata.name + "." + job.metadata.namespace_name + ".svc";
}

AttemptContext MakeAttemptContext(const TrainingJob& job, const std::vector<PodSlot>& slots,
                                  int32_t workers) {
  AttemptContext ctx;
  const PodSlot& rank0 = slots.front();
  ctx.rdzv_endpoint = PodDnsName(job, PodName(job.metadata.name, rank0.role, rank0.index)) + ":" +
                      std::to_string(kRdzvPort);
  const int32_t fixed = static_cast<int32_t>(slots.size()) - workers;
  if (job.spec.elastic) {
    ctx.nnodes = std::to_string(fixed + job.spec.elastic->min_replicas) + ":" +
                 std::to_string(fixed + job.spec.elastic->max_replicas);
  } else {
    ctx.nnodes = std::to_string(slots.size());
  }
  return ctx;
}

json EnvVar(std::string_view name, std::string value) {
  return {{"name", name}, {"value", std::move(value)}};
}

// An env var from the pod's own fields (the downward API).
json FieldRefEnvVar(std::string_view name, std::string_view field_path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", field_path}}}}}};
}

json LauncherEnv(const TrainingJob& job, const PodSlot& slot, const AttemptContext& ctx,
                 const ChildrenOptions& options, int64_t pod_grace_seconds) {
  const std::string pod_name = PodName(job.metadata.name, slot.role, slot.index);
  // A spare has no node-rank of its own: the rendezvous server gives it a lost pod's
  // (docs/failures.md "Hot spares"); its role index is its spare index.
  const bool spare = slot.role == kSpareRole;
  json env = json::array({
      EnvVar(contract::kEnvFramework, std::string(LauncherFrameworkName(job.spec.framework))),
      EnvVar(contract::kEnvJobName, job.metadata.name),
      EnvVar(contract::kEnvRole, slot.role),
      EnvVar(contract::kEnvRoleIndex, std::to_string(slot.index)),
      spare ? EnvVar(contract::kEnvSpare, "1")
            : EnvVar(contract::kEnvNodeRank, std::to_string(slot.node_rank)),
      EnvVar(contract::kEnvNnodes, ctx.nnodes),
      EnvVar(contract::kEnvNprocPerNode, std::to_string(slot.procs_per_pod)),
      EnvVar(contract::kEnvRdzvEndpoint, ctx.rdzv_endpoint),
      // The run id is the job's uid: pods kept across InPlace restarts keep their env, so the
      // attempt travels separately (LOCKSTEP_ATTEMPT). It also keys the joins (protocol/auth.h
      // AttemptKey): a launcher of an earlier attempt still running, its pod force-deleted on a
      // lost node, is refused by this attempt's node 0 whatever round it reached.
      EnvVar(contract::kEnvRdzvId, job.metadata.uid),
      EnvVar(contract::kEnvAttempt, std::to_string(options.attempt)),
      EnvVar(contract::kEnvTokenFile, std::string(kTokenDir) + "/" + std::string(kTokenKey)),
      EnvVar(contract::kEnvMaxRestarts, std::to_string(options.launcher_max_restarts)),
      EnvVar(contract::kEnvHangTimeout,
             std::to_string(job.spec.failure_policy.hang_timeout_seconds)),
      EnvVar(contract::kEnvAdvertiseAddr, PodDnsName(job, pod_name)),
      // The ports the job's NetworkPolicy keeps to its own pods (network_policy.h).
      EnvVar(contract::kEnvMasterPort, std::to_string(kMasterPort)),
      EnvVar(contract::kEnvKvPort, std::to_string(kKvPort)),
      // The trainers' time to checkpoint when the pod is deleted (suspend, preemption).
      EnvVar(contract::kEnvGracePeriod,
             std::to_string(LauncherGracePeriodSeconds(pod_grace_seconds))),
      // Reported in the launcher's Join, so node 0's server names a member it lost (pod and
      // node) to the operator: the peer evidence of a lost node (docs/failures.md).
      FieldRefEnvVar(contract::kEnvPodName, "metadata.name"),
      FieldRefEnvVar(contract::kEnvNodeName, "spec.nodeName"),
      FieldRefEnvVar(contract::kEnvPodUid, "metadata.uid"),
  });
  // Exit codes the FailJob rules name: the launchers end the job on them at once instead of
  // spending in-place restarts on an error that no restart can fix.
  static const json::json_pointer kTrainerName("/spec/containers/0/name");
  const json& tpl = *slot.pod_template;
  const std::string trainer = tpl.contains(kTrainerName) && tpl.at(kTrainerName).is_string()
                                  ? tpl.at(kTrainerName).get<std::string>()
                                  : std::string();  // a malformed template: any object is safe
  if (std::string codes = FailJobExitCodes(job.spec.failure_policy.rules, trainer);
      !codes.empty()) {
    env.push_back(EnvVar(contract::kEnvFailExitCodes, std::move(codes)));
  }
  // TensorFlow tasks serve gRPC at the host:port TF_CONFIG names; the launcher reserves it.
  if (job.spec.framework == Framework::kTensorFlow) {
    env.push_back(EnvVar(contract::kEnvFrameworkPort, std::to_string(kTensorFlowPort)));
  }
  return env;
}

// User env first, minus names the operator sets (the launcher contract wins), then ours.
json MergeEnv(const json& user_env, const json& ours) {
  std::set<std::string> reserved;
  for (const json& e : ours) reserved.insert(e["name"].get<std::string>());
  json merged = json::array();
  if (user_env.is_array()) {
    for (const json& e : user_env) {
      if (e.is_object() && e.contains("name") && e["name"].is_string() &&
          reserved.count(e["name"].get<std::string>()) > 0) {
        continue;
      }
      merged.push_back(e);
    }
  }
  for (const json& e : ours) merged.push_back(e);
  return merged;
}

json InstallContainer(const ChildrenOptions& options) {
  json c = {
      {"name", kInitContainerName},
      {"image", options.launcher_image},
      {"command", {"cp", kLauncherInImage, kLauncherPath}},
      {"resources",
       {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}},
        {"limits", {{"cpu", "500m"}, {"memory", "64Mi"}}}}},
      {"volumeMounts", json::array({{{"name", kLauncherVolume}, {"mountPath", kLauncherDir}}})},
      // Pod Security "restricted", so the operator's own container never makes a job's pods
      // fail a namespace's policy. 65532 is the launcher image's user; `cp` writes only to the
      // emptyDir (mode 0777).
      {"securityContext",
       {{"allowPrivilegeEscalation", false},
        {"capabilities", {{"drop", json::array({"ALL"})}}},
        {"runAsNonRoot", true},
        {"runAsUser", kLauncherImageUser},
        {"runAsGroup", kLauncherImageUser},
        {"readOnlyRootFilesystem", true},
        {"seccompProfile", {{"type", "RuntimeDefault"}}}}}};
  if (!options.launcher_image_pull_policy.empty()) {
    c["imagePullPolicy"] = options.launcher_image_pull_policy;
  }
  return c;
}

Status WrapTrainer(json* trainer, json env) {
  if (!trainer->is_object() || !trainer->contains("command") || !(*trainer)["command"].is_array() ||
      (*trainer)["command"].empty()) {
    return InvalidArgumentError("the first container (the trainer) has no command to wrap");
  }
  json command = json::array({kLauncherPath, "--"});
  for (const json& part : (*trainer)["command"]) command.push_back(part);
  if (trainer->contains("args") && (*trainer)["args"].is_array()) {
    for (const json& part : (*trainer)["args"]) command.push_back(part);
  }
  (*trainer)["command"] = std::move(command);
  trainer->erase("args");
  (*trainer)["env"] = MergeEnv(trainer->value("env", json::array()), env);
  json& mounts = (*trainer)["volumeMounts"];
  if (!mounts.is_array()) mounts = json::array();
  mounts.push_back({{"name", kLauncherVolume}, {"mountPath", kLauncherDir}, {"readOnly", true}});
  mounts.push_back({{"name", kTokenVolume}, {"mountPath", kTokenDir}, {"readOnly", true}});
  return Status::Ok();
}

void AddVolumes(const TrainingJob& job, json* pod_spec) {
  json& volumes = (*pod_spec)["volumes"];
  if (!volumes.is_array()) volumes = json::array();
  volumes.push_back({{"name", kLauncherVolume}, {"emptyDir", json::object()}});
  volumes.push_back({{"name", kTokenVolume},
                     {"secret",
                      {{"secretName", RdzvSecretName(job.metadata.name)},
                       {"defaultMode", 0444},
                       {"items", json::array({{{"key", kTokenKey}, {"path", kTokenKey}}})}}}});
}

json PodMetadata(const TrainingJob& job, const PodSlot& slot, const ChildrenOptions& options) {
  const json& tmpl_meta = slot.pod_template->value("metadata", json::object());
  json labels = tmpl_meta.is_object() ? tmpl_meta.value("labels", json::object()) : json::object();
  if (!labels.is_object()) labels = json::object();
  labels[kLabelJobName] = job.metadata.name;
  labels[kLabelRole] = slot.role;
  labels[kLabelReplicaIndex] = std::to_string(slot.index);
  labels[kLabelAttempt] = std::to_string(options.attempt);
  json meta = ChildMetadata(job, PodName(job.metadata.name, slot.role, slot.index));
  meta["labels"] = std::move(labels);
  if (tmpl_meta.is_object() && tmpl_meta.contains("annotations") &&
      tmpl_meta["annotations"].is_object() && !tmpl_meta["annotations"].empty()) {
    meta["annotations"] = tmpl_meta["annotations"];
  }
  return meta;
}

// Required node affinity that also demands one of `terms`: each of the spec's own terms (ORed)
// gets every term's expressions added, one copy per term (A or B) and (X or Y) = AX or AY or BX
// or BY.
void AndNodeTerms(const json& terms, json* spec) {
  json& required = (*spec)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
  json own = required.is_object() && required.contains("nodeSelectorTerms") &&
                     required["nodeSelectorTerms"].is_array() && !required["nodeSelectorTerms"].empty()
                 ? required["nodeSelectorTerms"]
                 : json::array({json::object()});
  json combined = json::array();
  for (const json& mine : own) {
    for (const json& term : terms) {
      json both = mine;
      json& expressions = both["matchExpressions"];
      if (!expressions.is_array()) expressions = json::array();
      for (const json& e : term.value("matchExpressions", json::array())) expressions.push_back(e);
      combined.push_back(std::move(both));
    }
  }
  required = {{"nodeSelectorTerms", std::move(combined)}};
}

// The admission's additions for the slot's role (RolePlacement), into `pod`.
Status ApplyPlacement(const PodSlot& slot, const ChildrenOptions& options, json* pod) {
  // A spare gets its own entry when the controller made one (spare_plan.h: the gang's topology
  // domain), else the workers'.
  auto it = options.role_placement.find(slot.role);
  if (it == options.role_placement.end() && slot.role == kSpareRole) {
    it = options.role_placement.find(std::string(kWorkerRole));
  }
  if (it == options.role_placement.end()) return Status::Ok();
  const RolePlacement& placement = it->second;
  json& spec = (*pod)["spec"];
  if (!placement.node_selector.empty()) {
    json& selector = spec["nodeSelector"];
    if (!selector.is_object()) selector = json::object();
    for (const auto& [key, value] : placement.node_selector) {
      if (selector.contains(key) && selector[key] != value) {
        return InvalidArgumentError("role " + slot.role + ": the admission requires node label " +
                                    key + "=" + value + " but the template's nodeSelector has " +
                                    key + "=" + selector[key].dump());
      }
      selector[key] = value;
    }
  }
  if (!placement.tolerations.empty()) {
    json& tolerations = spec["tolerations"];
    if (!tolerations.is_array()) tolerations = json::array();
    for (const json& t : placement.tolerations) {
      if (std::find(tolerations.begin(), tolerations.end(), t) == tolerations.end()) {
        tolerations.push_back(t);
      }
    }
  }
  if (!placement.node_terms.empty()) AndNodeTerms(placement.node_terms, &spec);
  for (const auto& [key, value] : placement.labels) (*pod)["metadata"]["labels"][key] = value;
  return Status::Ok();
}

StatusOr<json> BuildPod(const TrainingJob& job, const PodSlot& slot, const AttemptContext& ctx,
                        const ChildrenOptions& options) {
  const std::string pod_name = PodName(job.metadata.name, slot.role, slot.index);
  if (!slot.pod_template->is_object()) {
    return InvalidArgumentError("role " + slot.role + ": the pod template is not an object");
  }
  json spec = slot.pod_template->value("spec", json::object());
  if (!spec.is_object() || !spec.contains("containers") || !spec["containers"].is_array() ||
      spec["containers"].empty()) {
    return InvalidArgumentError("role " + slot.role + ": the pod template has no containers");
  }
  const int64_t grace = PodGracePeriodSeconds(spec);
  LS_RETURN_IF_ERROR(
      WrapTrainer(&spec["containers"][0], LauncherEnv(job, slot, ctx, options, grace))
          .WithContext("role " + slot.role));
  // Written out, so the pod says the grace its launcher was told about.
  if (!spec.contains("terminationGracePeriodSeconds")) {
    spec["terminationGracePeriodSeconds"] = grace;
  }
  json init = json::array({InstallContainer(options)});
  if (spec.contains("initContainers") && spec["initContainers"].is_array()) {
    for (const json& c : spec["initContainers"]) init.push_back(c);
  }
  spec["initContainers"] = std::move(init);
  AddVolumes(job, &spec);
  spec["schedulerName"] = kSchedulerName;
  spec["hostname"] = pod_name;
  spec["subdomain"] = job.metadata.name;
  spec["restartPolicy"] = "Never";
  if (!job.spec.priority_class_name.empty() && !spec.contains("priorityClassName")) {
    spec["priorityClassName"] = job.spec.priority_class_name;
  }
  json pod{{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata", PodMetadata(job, slot, options)},
           {"spec", std::move(spec)}};
  LS_RETURN_IF_ERROR(ApplyPlacement(slot, options, &pod));
  return pod;
}

}  // namespace

int64_t PodGracePeriodSeconds(const json& pod_spec) {
  if (!pod_spec.is_object()) return kDefaultTerminationGracePeriodSeconds;
  const auto it = pod_spec.find("terminationGracePeriodSeconds");
  if (it == pod_spec.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return kDefaultTerminationGracePeriodSeconds;
  }
  return it->get<int64_t>();
}

int64_t LauncherGracePeriodSeconds(int64_t pod_grace_seconds) {
  return std::max<int64_t>(pod_grace_seconds - 1, 0);
}

std::string JobSelector(std::string_view job_name) {
  return std::string(kLabelJobName) + "=" + std::string(job_name);
}

std::string RdzvSecretName(std::string_view job_name) { return std::string(job_name) + "-rdzv"; }

json ControllerOwnerReference(const TrainingJob& job) {
  return {{"apiVersion", kApiVersion}, {"kind", kKind},      {"name", job.metadata.name},
          {"uid", job.metadata.uid},   {"controller", true}, {"blockOwnerDeletion", true}};
}

json BuildService(const TrainingJob& job) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", ChildMetadata(job, job.metadata.name)},
          {"spec",
           {{"clusterIP", "None"},
            // Peers must resolve each other before they are Ready: readiness comes after the
            // rendezvous these names are needed for. No selector: the operator writes the
            // Service's EndpointSlice itself (endpoint_slice.h), with the same addresses.
            {"publishNotReadyAddresses", true},
            {"ports", json::array({{{"name", "rdzv"},
                                    {"port", kRdzvPort},
                                    {"targetPort", kRdzvPort},
                                    {"protocol", "TCP"}}})}}}};
}

json BuildRdzvSecret(const TrainingJob& job, std::string_view token) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", ChildMetadata(job, RdzvSecretName(job.metadata.name))},
          {"type", "Opaque"},
          {"immutable", true},
          {"data", {{kTokenKey, Base64(token)}}}};
}

StatusOr<std::vector<json>> BuildMissingPods(const TrainingJob& job,
                                             const ChildrenOptions& options,
                                             const std::set<std::string>& present, size_t limit) {
  if (options.launcher_image.empty()) {
    return InvalidArgumentError("no launcher image: set the operator's --launcher-image");
  }
  const int32_t workers = options.worker_replicas.value_or(job.spec.replicas);
  if (workers < 0) return InvalidArgumentError("negative worker count");
  const std::vector<PodSlot> slots = PodSlots(job.spec, workers);
  std::vector<json> pods;
  if (slots.empty()) return pods;
  const AttemptContext ctx = MakeAttemptContext(job, slots, workers);
  for (const PodSlot& slot : slots) {
    if (pods.size() >= limit) break;
    if (options.served_node_ranks.count(slot.node_rank) > 0) continue;  // a spare serves it
    if (present.count(PodName(job.metadata.name, slot.role, slot.index)) > 0) continue;
    LS_ASSIGN_OR_RETURN(json pod, BuildPod(job, slot, ctx, options));
    pods.push_back(std::move(pod));
  }
  // Spares: the workers' template and procs, their own name and role.
  for (int32_t index : options.spare_indexes) {
    if (pods.size() >= limit) break;
    if (present.count(PodName(job.metadata.name, kSpareRole, index)) > 0) continue;
    const PodSlot spare{std::string(kSpareRole), index, -1,
                        EffectiveProcsPerPod(job.spec.procs_per_pod, job.spec.pod_template),
                        &job.spec.pod_template};
    LS_ASSIGN_OR_RETURN(json pod, BuildPod(job, spare, ctx, options));
    pods.push_back(std::move(pod));
  }
  return pods;
}

StatusOr<std::vector<json>> BuildPods(const TrainingJob& job, const ChildrenOptions& options) {
  return BuildMissingPods(job, options, {}, std::numeric_limits<size_t>::max());
}

}  // namespace lockstep::api
