#pragma once
// A container's environment as the kubelet computes it: `env` in order (value with $(VAR)
// expansion, or valueFrom fieldRef / secretKeyRef / configMapKeyRef), after `envFrom`.
// Also expands $(VAR) in command and args. Pure functions over the pod JSON; Secrets and
// ConfigMaps come through a fetch callback so this is testable without a cluster.

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace lockstep::e2e {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// kind is "Secret" or "ConfigMap"; returns the object's key -> value map, values decoded (a
// Secret's base64 `data` decoded, `stringData` never reaches the API object).
using ConfigFetcher = std::function<StatusOr<std::map<std::string, std::string>>(
    const std::string& kind, const std::string& name)>;

struct PodRuntimeFields {
  std::string pod_ip;
  std::string host_ip;
};

// Resolves the value of a fieldRef path (metadata.name, metadata.labels['k'], status.podIP...).
StatusOr<std::string> ResolveFieldPath(const nlohmann::json& pod, const PodRuntimeFields& rt,
                                       const std::string& path);

StatusOr<EnvList> ResolveEnv(const nlohmann::json& pod, const nlohmann::json& container,
                             const PodRuntimeFields& rt, const ConfigFetcher& fetch);

// Kubernetes' $(VAR) expansion: $(NAME) is replaced when NAME is in `env`, kept otherwise;
// $$ is a literal $.
std::string ExpandVars(const std::string& text, const EnvList& env);

}  // namespace lockstep::e2e
