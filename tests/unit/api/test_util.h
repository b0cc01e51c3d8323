#pragma once
// Helpers for the API unit tests: YAML manifests as JSON, and a minimal valid TrainingJob.

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/api/types.h"

namespace lockstep::api::testing {

// Converts a YAML node the way the apiserver's YAML decoder does: plain scalars become integers,
// booleans or null when they look like one; quoted scalars stay strings.
nlohmann::json YamlToJson(const YAML::Node& node);
// Every document of a YAML file, as JSON.
std::vector<nlohmann::json> LoadYamlFile(const std::string& path);
std::string SourcePath(const std::string& relative);

// A small valid PyTorch job: name "demo", namespace "ns", uid "uid-1", 2 workers.
nlohmann::json MinimalJobJson();
TrainingJob MinimalJob();

}  // namespace lockstep::api::testing
