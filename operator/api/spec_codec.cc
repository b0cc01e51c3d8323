// TrainingJobSpec <-> JSON (see codec.h).

#include "operator/api/codec.h"
#include "operator/api/json_fields.h"

namespace lockstep::api {

using internal::FieldPath;
using internal::ForEachElement;
using internal::Member;
using internal::MissingError;
using internal::ReadBool;
using internal::ReadEnum;
using internal::ReadInt32;
using internal::ReadOptInt32;
using internal::ReadOptInt64;
using internal::ReadOptString;
using internal::ReadString;
using internal::ReadStringList;
using internal::TypeError;
using nlohmann::json;

namespace {

// A PodTemplateSpec stays JSON, but the parts the operator reads (containers, their command and
// args) must have the right shape so the children builder never meets a surprise.
Status CheckPodTemplate(const json& tmpl, const std::string& path) {
  if (!tmpl.is_object()) return TypeError(path, "an object", tmpl);
  const json* spec = Member(tmpl, "spec");
  if (spec == nullptr) return MissingError(path + ".spec");
  if (!spec->is_object()) return TypeError(path + ".spec", "an object", *spec);
  const std::string containers_path = path + ".spec.containers";
  const json* containers = Member(*spec, "containers");
  if (containers == nullptr) return MissingError(containers_path);
  return ForEachElement(*spec, "containers", path + ".spec",
                        [](const json& c, const std::string& c_path) {
                          if (!c.is_object()) return TypeError(c_path, "an object", c);
                          std::string name;
                          LS_RETURN_IF_ERROR(ReadString(c, "name", c_path, &name));
                          std::vector<std::string> ignored;
                          LS_RETURN_IF_ERROR(ReadStringList(c, "command", c_path, &ignored));
                          LS_RETURN_IF_ERROR(ReadStringList(c, "args", c_path, &ignored));
                          if (const json* env = Member(c, "env"); env && !env->is_array()) {
                            return TypeError(c_path + ".env", "an array", *env);
                          }
                          return Status::Ok();
                        });
}

Status ReadPodTemplate(const json& obj, const std::string& path, json* out) {
  const json* tmpl = Member(obj, "template");
  if (tmpl == nullptr) return MissingError(FieldPath(path, "template"));
  LS_RETURN_IF_ERROR(CheckPodTemplate(*tmpl, FieldPath(path, "template")));
  *out = *tmpl;
  return Status::Ok();
}

Status DecodeRoles(const json& spec, TrainingJobSpec* out) {
  return ForEachElement(spec, "roles", "spec", [out](const json& r, const std::string& path) {
    if (!r.is_object()) return TypeError(path, "an object", r);
    Role role;
    LS_RETURN_IF_ERROR(ReadString(r, "name", path, &role.name));
    LS_RETURN_IF_ERROR(ReadInt32(r, "replicas", path, &role.replicas));
    LS_RETURN_IF_ERROR(ReadOptInt32(r, "procsPerPod", path, &role.procs_per_pod));
    LS_RETURN_IF_ERROR(ReadPodTemplate(r, path, &role.pod_template));
    out->roles.push_back(std::move(role));
    return Status::Ok();
  });
}

Status DecodeElasticAndPlacement(const json& spec, TrainingJobSpec* out) {
  if (const json* e = Member(spec, "elastic")) {
    if (!e->is_object()) return TypeError("spec.elastic", "an object", *e);
    ElasticPolicy elastic;
    LS_RETURN_IF_ERROR(ReadInt32(*e, "minReplicas", "spec.elastic", &elastic.min_replicas));
    LS_RETURN_IF_ERROR(ReadInt32(*e, "maxReplicas", "spec.elastic", &elastic.max_replicas));
    LS_RETURN_IF_ERROR(ReadInt32(*e, "growCooldownSeconds", "spec.elastic",
                                 &elastic.grow_cooldown_seconds));
    out->elastic = elastic;
  }
  if (const json* p = Member(spec, "placement")) {
    if (!p->is_object()) return TypeError("spec.placement", "an object", *p);
    Placement placement;
    LS_RETURN_IF_ERROR(
        ReadStringList(*p, "topologyKeys", "spec.placement", &placement.topology_keys));
    LS_RETURN_IF_ERROR(ReadOptString(*p, "requiredTopologyKey", "spec.placement",
                                     &placement.required_topology_key));
    out->placement = std::move(placement);
  }
  if (const json* s = Member(spec, "successPolicy")) {
    if (!s->is_object()) return TypeError("spec.successPolicy", "an object", *s);
    SuccessPolicy policy;
    LS_RETURN_IF_ERROR(
        ReadEnum(*s, "operator", "spec.successPolicy", &ParseSuccessOperator, &policy.op));
    LS_RETURN_IF_ERROR(
        ReadStringList(*s, "targetRoles", "spec.successPolicy", &policy.target_roles));
    out->success_policy = std::move(policy);
  }
  return Status::Ok();
}

Status DecodeRule(const json& r, const std::string& path, FailureRule* rule) {
  if (!r.is_object()) return TypeError(path, "an object", r);
  LS_RETURN_IF_ERROR(ReadString(r, "name", path, &rule->name));
  if (Member(r, "action") == nullptr) return MissingError(path + ".action");
  LS_RETURN_IF_ERROR(ReadEnum(r, "action", path, &ParseRuleAction, &rule->action));
  const json* m = Member(r, "onExitCodes");
  const std::string m_path = path + ".onExitCodes";
  if (m == nullptr) return MissingError(m_path);
  if (!m->is_object()) return TypeError(m_path, "an object", *m);
  ExitCodeMatcher& matcher = rule->on_exit_codes;
  LS_RETURN_IF_ERROR(ReadOptString(*m, "containerName", m_path, &matcher.container_name));
  if (Member(*m, "operator") == nullptr) return MissingError(m_path + ".operator");
  LS_RETURN_IF_ERROR(ReadEnum(*m, "operator", m_path, &ParseExitCodeOperator, &matcher.op));
  return ForEachElement(*m, "values", m_path, [&matcher](const json& v, const std::string& p) {
    if (!v.is_number_integer()) return TypeError(p, "an integer", v);
    const int64_t code = v.get<int64_t>();
    if (code < 0 || code > 255) return InvalidArgumentError(p + ": exit code must be in 0..255");
    matcher.values.push_back(static_cast<int32_t>(code));
    return Status::Ok();
  });
}

Status DecodeFailurePolicy(const json& spec, FailurePolicy* out) {
  const json* f = Member(spec, "failurePolicy");
  if (f == nullptr) return Status::Ok();
  const std::string path = "spec.failurePolicy";
  if (!f->is_object()) return TypeError(path, "an object", *f);
  LS_RETURN_IF_ERROR(ReadInt32(*f, "maxRestarts", path, &out->max_restarts));
  LS_RETURN_IF_ERROR(ReadInt32(*f, "maxDisruptions", path, &out->max_disruptions));
  LS_RETURN_IF_ERROR(ReadEnum(*f, "restartMode", path, &ParseRestartMode, &out->restart_mode));
  LS_RETURN_IF_ERROR(ReadInt32(*f, "hangTimeoutSeconds", path, &out->hang_timeout_seconds));
  LS_RETURN_IF_ERROR(
      ReadInt32(*f, "inPlaceTimeoutSeconds", path, &out->in_place_timeout_seconds));
  LS_RETURN_IF_ERROR(ReadInt32(*f, "spareReplicas", path, &out->spare_replicas));
  if (const json* b = Member(*f, "backoff")) {
    const std::string b_path = path + ".backoff";
    if (!b->is_object()) return TypeError(b_path, "an object", *b);
    LS_RETURN_IF_ERROR(ReadInt32(*b, "initialSeconds", b_path, &out->backoff.initial_seconds));
    LS_RETURN_IF_ERROR(ReadInt32(*b, "maxSeconds", b_path, &out->backoff.max_seconds));
    LS_RETURN_IF_ERROR(
        ReadInt32(*b, "resetAfterSeconds", b_path, &out->backoff.reset_after_seconds));
  }
  return ForEachElement(*f, "rules", path, [out](const json& r, const std::string& r_path) {
    FailureRule rule;
    LS_RETURN_IF_ERROR(DecodeRule(r, r_path, &rule));
    out->rules.push_back(std::move(rule));
    return Status::Ok();
  });
}

Status DecodeRunPolicy(const json& spec, RunPolicy* out) {
  const json* r = Member(spec, "runPolicy");
  if (r == nullptr) return Status::Ok();
  const std::string path = "spec.runPolicy";
  if (!r->is_object()) return TypeError(path, "an object", *r);
  LS_RETURN_IF_ERROR(
      ReadOptInt64(*r, "activeDeadlineSeconds", path, &out->active_deadline_seconds));
  LS_RETURN_IF_ERROR(
      ReadOptInt32(*r, "ttlSecondsAfterFinished", path, &out->ttl_seconds_after_finished));
  LS_RETURN_IF_ERROR(ReadBool(*r, "suspend", path, &out->suspend));
  LS_RETURN_IF_ERROR(
      ReadInt32(*r, "startupTimeoutSeconds", path, &out->startup_timeout_seconds));
  return ReadEnum(*r, "cleanPodPolicy", path, &ParseCleanPodPolicy, &out->clean_pod_policy);
}

json EncodeRule(const FailureRule& rule) {
  json m = {{"operator", ToString(rule.on_exit_codes.op)}, {"values", rule.on_exit_codes.values}};
  if (rule.on_exit_codes.container_name) m["containerName"] = *rule.on_exit_codes.container_name;
  json r = {{"action", ToString(rule.action)}, {"onExitCodes", std::move(m)}};
  if (!rule.name.empty()) r["name"] = rule.name;
  return r;
}

json EncodeFailurePolicy(const FailurePolicy& f) {
  json out = {{"maxRestarts", f.max_restarts},
              {"maxDisruptions", f.max_disruptions},
              {"restartMode", ToString(f.restart_mode)},
              {"inPlaceTimeoutSeconds", f.in_place_timeout_seconds},
              {"backoff",
               {{"initialSeconds", f.backoff.initial_seconds},
                {"maxSeconds", f.backoff.max_seconds},
                {"resetAfterSeconds", f.backoff.reset_after_seconds}}}};
  if (f.hang_timeout_seconds != 0) out["hangTimeoutSeconds"] = f.hang_timeout_seconds;
  out["spareReplicas"] = f.spare_replicas;
  if (!f.rules.empty()) {
    out["rules"] = json::array();
    for (const FailureRule& rule : f.rules) out["rules"].push_back(EncodeRule(rule));
  }
  return out;
}

json EncodeRunPolicy(const RunPolicy& r) {
  json out = {{"suspend", r.suspend},
              {"cleanPodPolicy", ToString(r.clean_pod_policy)},
              {"startupTimeoutSeconds", r.startup_timeout_seconds}};
  if (r.active_deadline_seconds) out["activeDeadlineSeconds"] = *r.active_deadline_seconds;
  if (r.ttl_seconds_after_finished) out["ttlSecondsAfterFinished"] = *r.ttl_seconds_after_finished;
  return out;
}

}  // namespace

StatusOr<TrainingJobSpec> DecodeSpec(const json& spec) {
  if (!spec.is_object()) return TypeError("spec", "an object", spec);
  TrainingJobSpec out;
  if (Member(spec, "framework") == nullptr) return MissingError("spec.framework");
  LS_RETURN_IF_ERROR(ReadEnum(spec, "framework", "spec", &ParseFramework, &out.framework));
  LS_RETURN_IF_ERROR(ReadInt32(spec, "replicas", "spec", &out.replicas));
  LS_RETURN_IF_ERROR(ReadOptInt32(spec, "procsPerPod", "spec", &out.procs_per_pod));
  LS_RETURN_IF_ERROR(ReadPodTemplate(spec, "spec", &out.pod_template));
  LS_RETURN_IF_ERROR(DecodeRoles(spec, &out));
  LS_RETURN_IF_ERROR(DecodeElasticAndPlacement(spec, &out));
  LS_RETURN_IF_ERROR(ReadString(spec, "priorityClassName", "spec", &out.priority_class_name));
  LS_RETURN_IF_ERROR(DecodeFailurePolicy(spec, &out.failure_policy));
  LS_RETURN_IF_ERROR(DecodeRunPolicy(spec, &out.run_policy));
  return out;
}

json EncodeSpec(const TrainingJobSpec& spec) {
  json out = {{"framework", ToString(spec.framework)},
              {"replicas", spec.replicas},
              {"template", spec.pod_template}};
  if (spec.procs_per_pod) out["procsPerPod"] = *spec.procs_per_pod;
  if (!spec.roles.empty()) {
    out["roles"] = json::array();
    for (const Role& role : spec.roles) {
      json r = {{"name", role.name}, {"replicas", role.replicas}, {"template", role.pod_template}};
      if (role.procs_per_pod) r["procsPerPod"] = *role.procs_per_pod;
      out["roles"].push_back(std::move(r));
    }
  }
  if (spec.elastic) {
    out["elastic"] = {{"minReplicas", spec.elastic->min_replicas},
                      {"maxReplicas", spec.elastic->max_replicas},
                      {"growCooldownSeconds", spec.elastic->grow_cooldown_seconds}};
  }
  if (spec.placement) {
    json p = json::object();
    if (!spec.placement->topology_keys.empty()) p["topologyKeys"] = spec.placement->topology_keys;
    if (spec.placement->required_topology_key) {
      p["requiredTopologyKey"] = *spec.placement->required_topology_key;
    }
    out["placement"] = std::move(p);
  }
  if (!spec.priority_class_name.empty()) out["priorityClassName"] = spec.priority_class_name;
  if (spec.success_policy) {
    json s = {{"operator", ToString(spec.success_policy->op)}};
    if (!spec.success_policy->target_roles.empty()) {
      s["targetRoles"] = spec.success_policy->target_roles;
    }
    out["successPolicy"] = std::move(s);
  }
  out["failurePolicy"] = EncodeFailurePolicy(spec.failure_policy);
  out["runPolicy"] = EncodeRunPolicy(spec.run_policy);
  return out;
}

}  // namespace lockstep::api
