#include "operator/api/template_merge.h"

#include <algorithm>
#include <array>
#include <set>
#include <utility>

#include "operator/api/codec.h"
#include "operator/api/json_fields.h"

namespace lockstep::api {

using internal::FieldPath;
using internal::IndexPath;
using internal::Member;
using internal::MissingError;
using internal::TypeError;
using nlohmann::json;

namespace {

// The template spec's fields. Anything else is a template CRD newer than this merge.
constexpr std::array<std::string_view, 7> kTemplateFields = {
    "framework", "procsPerPod",   "template",  "placement",
    "priorityClassName", "failurePolicy", "runPolicy"};

// The merge key of a keyed list, by the list's field name (Kubernetes' patchMergeKey); empty:
// the list is atomic (the job's replaces the template's).
std::string_view ListKey(std::string_view field) {
  if (field == "containers" || field == "initContainers" || field == "ephemeralContainers" ||
      field == "volumes" || field == "env" || field == "imagePullSecrets" ||
      field == "resourceClaims") {
    return "name";
  }
  if (field == "ports") return "containerPort";
  if (field == "volumeMounts") return "mountPath";
  if (field == "volumeDevices") return "devicePath";
  return "";
}

Status MergeValue(const json& base, const json& over, const std::string& path,
                  std::string_view field, json* out);

Status MergeObjects(const json& base, const json& over, const std::string& path, json* out) {
  *out = base;
  for (const auto& [key, value] : over.items()) {
    if (value.is_null()) continue;
    const json* mine = Member(base, key);
    if (mine == nullptr) {
      (*out)[key] = value;
      continue;
    }
    json merged;
    LS_RETURN_IF_ERROR(MergeValue(*mine, value, FieldPath(path, key), key, &merged));
    (*out)[key] = std::move(merged);
  }
  return Status::Ok();
}

// The element's key, or an error naming it: an element without its key cannot be merged.
StatusOr<json> ElementKey(const json& element, std::string_view key, const std::string& path,
                          std::string_view side) {
  if (!element.is_object()) return TypeError(path, "an object", element);
  const json* k = Member(element, key);
  if (k == nullptr) {
    return InvalidArgumentError(FieldPath(path, key) + ": required in the " + std::string(side) +
                                " to merge the job with its template");
  }
  return *k;
}

// Containers merge field by field; an element of any other keyed list is one value (an env
// var's value or valueFrom, a volume's one source) that the job's element replaces whole.
bool MergesElements(std::string_view field) {
  return field == "containers" || field == "initContainers" || field == "ephemeralContainers";
}

Status MergeKeyedList(const json& base, const json& over, const std::string& path,
                      std::string_view field, std::string_view key, json* out) {
  *out = json::array();
  for (size_t i = 0; i < base.size(); ++i) {
    LS_RETURN_IF_ERROR(ElementKey(base[i], key, IndexPath(path, i), "template").status());
    out->push_back(base[i]);
  }
  for (size_t i = 0; i < over.size(); ++i) {
    const std::string element_path = IndexPath(path, i);
    LS_ASSIGN_OR_RETURN(json k, ElementKey(over[i], key, element_path, "job"));
    bool merged = false;
    for (json& mine : *out) {
      if (mine[key] != k) continue;
      if (MergesElements(field)) {
        json combined;
        LS_RETURN_IF_ERROR(MergeObjects(mine, over[i], element_path, &combined));
        mine = std::move(combined);
      } else {
        mine = over[i];
      }
      merged = true;
      break;
    }
    if (!merged) out->push_back(over[i]);
  }
  return Status::Ok();
}

Status MergeValue(const json& base, const json& over, const std::string& path,
                  std::string_view field, json* out) {
  if (base.is_object() != over.is_object() || base.is_array() != over.is_array()) {
    return InvalidArgumentError(path + ": the job has " + std::string(over.type_name()) +
                                ", its template " + std::string(base.type_name()));
  }
  if (over.is_object()) return MergeObjects(base, over, path, out);
  if (!over.is_array()) {
    *out = over;
    return Status::Ok();
  }
  if (field == "tolerations") {
    *out = base;
    for (const json& t : over) {
      bool present = false;
      for (const json& mine : base) present = present || mine == t;
      if (!present) out->push_back(t);
    }
    return Status::Ok();
  }
  const std::string_view key = ListKey(field);
  if (key.empty()) {
    *out = over;
    return Status::Ok();
  }
  return MergeKeyedList(base, over, path, field, key, out);
}

// failurePolicy.rules: the job's first (first match wins), then the template's whose name the
// job's rules do not use (unnamed template rules always stay).
json MergeRules(const json& base, const json& over) {
  json out = over;
  std::set<std::string> names;
  for (const json& r : over) {
    if (r.is_object() && r.contains("name") && r["name"].is_string()) names.insert(r["name"]);
  }
  for (const json& r : base) {
    const bool named = r.is_object() && r.contains("name") && r["name"].is_string();
    if (!named || names.count(r["name"].get<std::string>()) == 0) out.push_back(r);
  }
  return out;
}

// failurePolicy / runPolicy: the job's value wins unless it equals the schema default at that
// field (see the header) and the template states one.
Status MergePolicy(const json& base, const json& over, const json& defaults,
                   const std::string& path, json* out) {
  if (!base.is_object()) return TypeError(path + " (template)", "an object", base);
  if (!over.is_object()) return TypeError(path, "an object", over);
  *out = base;
  for (const auto& [key, value] : over.items()) {
    if (value.is_null()) continue;
    const json* mine = Member(base, key);
    const json* fallback = Member(defaults, key);
    const std::string field = FieldPath(path, key);
    if (mine == nullptr) {
      (*out)[key] = value;
    } else if (key == "rules") {
      if (!mine->is_array()) return TypeError(field + " (template)", "an array", *mine);
      if (!value.is_array()) return TypeError(field, "an array", value);
      (*out)[key] = MergeRules(*mine, value);
    } else if (value.is_object()) {
      json merged;
      LS_RETURN_IF_ERROR(MergePolicy(*mine, value, fallback ? *fallback : json::object(), field,
                                     &merged));
      (*out)[key] = std::move(merged);
    } else if (fallback == nullptr || *fallback != value) {
      (*out)[key] = value;
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::optional<TemplateRef>> DecodeTemplateRef(const json& job_spec) {
  const json* ref = job_spec.is_object() ? Member(job_spec, "templateRef") : nullptr;
  if (ref == nullptr) return std::optional<TemplateRef>();
  const std::string path = "spec.templateRef";
  if (!ref->is_object()) return TypeError(path, "an object", *ref);
  TemplateRef out;
  LS_RETURN_IF_ERROR(internal::ReadString(*ref, "kind", path, &out.kind));
  LS_RETURN_IF_ERROR(internal::ReadString(*ref, "name", path, &out.name));
  if (out.name.empty()) return MissingError(path + ".name");
  if (out.kind != kClusterTrainingTemplateKind && out.kind != kTrainingTemplateKind) {
    return InvalidArgumentError(path + ".kind: unsupported value \"" + out.kind +
                                "\" (ClusterTrainingTemplate or TrainingTemplate)");
  }
  return std::optional<TemplateRef>(std::move(out));
}

std::string Describe(const TemplateRef& ref) { return ref.kind + "/" + ref.name; }

StatusOr<json> MergeTemplateSpec(const json& template_spec, const json& job_spec) {
  if (!template_spec.is_object()) return TypeError("template spec", "an object", template_spec);
  if (!job_spec.is_object()) return TypeError("spec", "an object", job_spec);
  json out = job_spec;
  out.erase("templateRef");
  // Encoded from the types' member initializers, which defaults_test.cc holds to the CRD.
  const json defaults = EncodeSpec(TrainingJobSpec{});
  for (const auto& [key, value] : template_spec.items()) {
    if (std::find(kTemplateFields.begin(), kTemplateFields.end(), key) == kTemplateFields.end()) {
      return InvalidArgumentError("template spec." + key + ": not a field this operator merges");
    }
    if (value.is_null()) continue;
    const std::string path = "spec." + key;
    const json* mine = Member(job_spec, key);
    json merged;
    if (key == "failurePolicy" || key == "runPolicy") {
      json base = value;
      if (key == "runPolicy" && base.is_object()) base.erase("suspend");  // the job's alone
      LS_RETURN_IF_ERROR(MergePolicy(base, mine ? *mine : json::object(), defaults[key], path,
                                     &merged));
    } else if (mine == nullptr) {
      merged = value;
    } else {
      LS_RETURN_IF_ERROR(MergeValue(value, *mine, path, key, &merged));
    }
    out[key] = std::move(merged);
  }
  return out;
}

}  // namespace lockstep::api
