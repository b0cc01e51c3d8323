#pragma once
// YAML manifests as the JSON the apiserver would read from them, for tests that load the
// repository's CRDs and examples. Plain scalars only: a quoted scalar stays a string, an integer
// literal becomes a number, true/false/null their JSON values.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace lockstep::testing {

nlohmann::json YamlToJson(const YAML::Node& node);

// Every non-empty document of a YAML file.
std::vector<nlohmann::json> LoadYamlFile(const std::string& path);

}  // namespace lockstep::testing
