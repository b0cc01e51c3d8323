#include "tests/unit/api/test_util.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "operator/api/codec.h"

namespace lockstep::api::testing {

using nlohmann::json;

std::string SourcePath(const std::string& relative) {
  return std::string(LOCKSTEP_SOURCE_DIR) + "/" + relative;
}

json MinimalJobJson() {
  return json::parse(R"({
    "apiVersion": "lockstep.dev/v1alpha1",
    "kind": "TrainingJob",
    "metadata": {"name": "demo", "namespace": "ns", "uid": "uid-1", "generation": 1},
    "spec": {
      "framework": "PyTorch",
      "replicas": 2,
      "template": {"spec": {"containers": [{
        "name": "trainer", "image": "pytorch:2", "command": ["python", "train.py"],
        "args": ["--epochs", "3"]}]}}
    }
  })");
}

TrainingJob MinimalJob() {
  StatusOr<TrainingJob> job = DecodeTrainingJob(MinimalJobJson());
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : TrainingJob{};
}

}  // namespace lockstep::api::testing
