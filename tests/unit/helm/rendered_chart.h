#pragma once
// `helm template` of helm/lockstep, parsed into one YAML node per manifest, with look-ups by kind
// and name. Parse errors are reported in `error`, never thrown.

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace lockstep::helmtest {

inline constexpr char kRelease[] = "rel";
inline constexpr char kNamespace[] = "lockstep-system";

struct RenderedChart {
  std::string error;  // non-empty when helm failed or its output did not parse
  std::vector<YAML::Node> docs;

  std::vector<YAML::Node> OfKind(const std::string& kind) const;
  // The only manifest of `kind` named `name`; nullopt when absent.
  std::optional<YAML::Node> Find(const std::string& kind, const std::string& name) const;
};

// K8S_VERSION of hack/lib/versions.sh, the Kubernetes the tests run on (e.g. "v1.34.4").
const std::string& TestedKubeVersion();

// Renders with release kRelease in kNamespace for TestedKubeVersion(); `args` are extra flags
// such as {"--set", "rbac.scope=namespace"}.
RenderedChart RenderChart(const std::vector<std::string>& args = {});

// (apiGroup, resource, verb) for every rule of a Role or ClusterRole, expanded.
using Grant = std::tuple<std::string, std::string, std::string>;
std::set<Grant> Grants(const YAML::Node& role);

std::vector<std::string> StringList(const YAML::Node& sequence);

}  // namespace lockstep::helmtest
