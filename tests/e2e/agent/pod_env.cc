#include "tests/e2e/agent/pod_env.h"

#include <map>

namespace lockstep::e2e {

using nlohmann::json;

namespace {

std::string StringAt(const json& obj, const json::json_pointer& ptr) {
  if (!obj.contains(ptr)) return "";
  const json& v = obj.at(ptr);
  return v.is_string() ? v.get<std::string>() : "";
}

// metadata.labels['key'] -> ("labels", "key").
bool ParseMapRef(const std::string& path, const std::string& prefix, std::string* key) {
  if (path.rfind(prefix + "['", 0) != 0 || path.size() < prefix.size() + 4) return false;
  if (path.compare(path.size() - 2, 2, "']") != 0) return false;
  *key = path.substr(prefix.size() + 2, path.size() - prefix.size() - 4);
  return true;
}

StatusOr<std::string> KeyFrom(const json& ref, const std::string& kind,
                              const ConfigFetcher& fetch) {
  const std::string name = ref.value("name", "");
  const std::string key = ref.value("key", "");
  const bool optional = ref.value("optional", false);
  StatusOr<std::map<std::string, std::string>> data = fetch(kind, name);
  if (!data.ok()) {
    if (optional && IsNotFound(data.status())) return std::string();
    return data.status().WithContext(kind + " " + name);
  }
  auto it = data->find(key);
  if (it == data->end()) {
    if (optional) return std::string();
    return NotFoundError(kind + " " + name + " has no key " + key);
  }
  return it->second;
}

void Set(EnvList* env, const std::string& name, std::string value) {
  for (auto& [k, v] : *env) {
    if (k == name) {
      v = std::move(value);
      return;
    }
  }
  env->emplace_back(name, std::move(value));
}

}  // namespace

StatusOr<std::string> ResolveFieldPath(const json& pod, const PodRuntimeFields& rt,
                                       const std::string& path) {
  static const std::map<std::string, std::string> kPointers = {
      {"metadata.name", "/metadata/name"},
      {"metadata.namespace", "/metadata/namespace"},
      {"metadata.uid", "/metadata/uid"},
      {"spec.nodeName", "/spec/nodeName"},
      {"spec.serviceAccountName", "/spec/serviceAccountName"},
  };
  if (auto it = kPointers.find(path); it != kPointers.end()) {
    return StringAt(pod, json::json_pointer(it->second));
  }
  if (path == "status.podIP" || path == "status.podIPs") return rt.pod_ip;
  if (path == "status.hostIP" || path == "status.hostIPs") return rt.host_ip;
  std::string key;
  for (const char* map : {"labels", "annotations"}) {
    if (ParseMapRef(path, std::string("metadata.") + map, &key)) {
      const json m = pod.value("metadata", json::object()).value(map, json::object());
      return m.is_object() && m.contains(key) && m[key].is_string() ? m[key].get<std::string>()
                                                                    : std::string();
    }
  }
  return InvalidArgumentError("unsupported fieldRef " + path);
}

std::string ExpandVars(const std::string& text, const EnvList& env) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || i + 1 >= text.size()) {
      out.push_back(text[i]);
      continue;
    }
    if (text[i + 1] == '$') {
      out.push_back('$');
      ++i;
      continue;
    }
    const size_t close = text.find(')', i + 2);
    if (text[i + 1] != '(' || close == std::string::npos) {
      out.push_back('$');
      continue;
    }
    const std::string name = text.substr(i + 2, close - i - 2);
    const std::string* value = nullptr;
    for (const auto& [k, v] : env) {
      if (k == name) value = &v;
    }
    out += value != nullptr ? *value : text.substr(i, close - i + 1);
    i = close;
  }
  return out;
}

StatusOr<EnvList> ResolveEnv(const json& pod, const json& container, const PodRuntimeFields& rt,
                             const ConfigFetcher& fetch) {
  EnvList env;
  try {
    for (const json& from : container.value("envFrom", json::array())) {
      const std::string prefix = from.value("prefix", "");
      for (const char* kind : {"configMapRef", "secretRef"}) {
        if (!from.contains(kind)) continue;
        const json& ref = from[kind];
        const std::string k = std::string(kind) == "secretRef" ? "Secret" : "ConfigMap";
        StatusOr<std::map<std::string, std::string>> data = fetch(k, ref.value("name", ""));
        if (!data.ok()) {
          if (ref.value("optional", false) && IsNotFound(data.status())) continue;
          return data.status();
        }
        for (const auto& [key, value] : *data) Set(&env, prefix + key, value);
      }
    }
    for (const json& e : container.value("env", json::array())) {
      const std::string name = e.at("name").get<std::string>();
      if (!e.contains("valueFrom")) {
        Set(&env, name, ExpandVars(e.value("value", ""), env));
        continue;
      }
      const json& from = e["valueFrom"];
      StatusOr<std::string> value = InvalidArgumentError("env " + name + ": unsupported valueFrom");
      if (from.contains("fieldRef")) {
        value = ResolveFieldPath(pod, rt, from["fieldRef"].value("fieldPath", ""));
      } else if (from.contains("secretKeyRef")) {
        value = KeyFrom(from["secretKeyRef"], "Secret", fetch);
      } else if (from.contains("configMapKeyRef")) {
        value = KeyFrom(from["configMapKeyRef"], "ConfigMap", fetch);
      }
      if (!value.ok()) return value.status().WithContext("env " + name);
      Set(&env, name, std::move(value).value());
    }
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("malformed env: ") + e.what());
  }
  return env;
}

}  // namespace lockstep::e2e
