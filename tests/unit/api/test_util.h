#pragma once
// Helpers for the API unit tests: YAML manifests as JSON, and a minimal valid TrainingJob.

#include <yaml-cpp/yaml.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/api/types.h"
#include "tests/testing/yaml_json.h"

namespace lockstep::api::testing {

using ::lockstep::testing::LoadYamlFile;  // tests/testing/yaml_json.h
using ::lockstep::testing::YamlToJson;
std::string SourcePath(const std::string& relative);

// A small valid PyTorch job: name "demo", namespace "ns", uid "uid-1", 2 workers.
nlohmann::json MinimalJobJson();
TrainingJob MinimalJob();

}  // namespace lockstep::api::testing
