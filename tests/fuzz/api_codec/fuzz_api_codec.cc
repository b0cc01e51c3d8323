// Fuzz target for the TrainingJob codec (operator/api: spec, status and object metadata) and what
// consumes a decoded job: validation, dependent defaults and the children builders. A
// TrainingJob's spec is written by any user allowed to create one, and its status by the
// operator and the scheduler, so every byte here is untrusted. Checked beyond "no crash":
//   - encode(decode(x)) decodes again, to the same encoding (the codec round-trips);
//   - a job is always a valid update of itself;
//   - a valid job's pods number exactly its replicas over every role.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "operator/api/children.h"
#include "operator/api/codec.h"
#include "operator/api/defaults.h"
#include "operator/api/validation.h"

namespace lockstep::api {
namespace {

// Jobs larger than this are decoded and validated but not expanded into pods: the fuzzer would
// spend its time copying templates (bounding a real job's size is the CRD's job).
constexpr int64_t kMaxPodsBuilt = 64;

int64_t PodCount(const TrainingJobSpec& spec) {
  int64_t pods = spec.replicas;
  for (const Role& role : spec.roles) pods += role.replicas;
  return pods;
}

void CheckChildren(TrainingJob job) {
  if (!Validate(job).empty()) return;
  ApplyDefaults(&job.spec);
  (void)BuildService(job);
  (void)BuildRdzvSecret(job, "token");
  if (PodCount(job.spec) > kMaxPodsBuilt) return;
  ChildrenOptions options;
  options.launcher_image = "lockstep/launcher:fuzz";
  options.attempt = 1;
  auto pods = BuildPods(job, options);
  if (pods.ok()) LS_CHECK(static_cast<int64_t>(pods->size()) == PodCount(job.spec));
}

}  // namespace
}  // namespace lockstep::api

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::api;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  auto job = DecodeTrainingJob(object);
  if (!job.ok()) return 0;
  const nlohmann::json encoded = EncodeTrainingJob(*job);
  auto again = DecodeTrainingJob(encoded);
  LS_CHECK(again.ok());
  LS_CHECK(EncodeTrainingJob(*again) == encoded);
  LS_CHECK(ValidateUpdate(*job, *job).empty());
  CheckChildren(*job);
  return 0;
}
