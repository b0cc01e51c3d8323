// Fuzz target for the template merge: a template's spec (ClusterTrainingTemplate or
// TrainingTemplate, written by a platform team) merged under a job's (written by any user who may
// create one), and the same through a stored job's status.resolvedTemplate snapshot. The input is
// {"template": <template spec>, "job": <job spec>}. Checked beyond "no crash":
//   - merging over an empty template gives the job's spec without templateRef;
//   - the merge never keeps templateRef, and a stored job with the template as its snapshot
//     merges to the same spec (SnapshotSpec is the merge, nothing else);
//   - a merged spec that decodes validates and encodes without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "operator/api/codec.h"
#include "operator/api/resolved_template.h"
#include "operator/api/template_merge.h"
#include "operator/api/validation.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::api;
  using nlohmann::json;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const json input = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (input.is_discarded() || !input.is_object()) return 0;
  const json tmpl = input.value("template", json::object());
  const json job = input.value("job", json::object());
  if (job.is_object()) {
    auto bare = MergeTemplateSpec(json::object(), job);
    LS_CHECK(bare.ok());
    json want = job;
    want.erase("templateRef");
    LS_CHECK(*bare == want);
  }
  auto merged = MergeTemplateSpec(tmpl, job);
  if (!merged.ok()) return 0;
  LS_CHECK(!merged->contains("templateRef"));
  auto ref = DecodeTemplateRef(job);
  if (ref.ok() && ref->has_value() && tmpl.is_object()) {
    const json object = {{"spec", job},
                         {"status", {{"resolvedTemplate", {{"kind", (*ref)->kind},
                                                           {"name", (*ref)->name},
                                                           {"spec", tmpl}}}}}};
    auto snapshot = SnapshotSpec(object);
    LS_CHECK(snapshot.ok());
    LS_CHECK(*snapshot == *merged);
  }
  auto spec = DecodeSpec(*merged);
  if (!spec.ok()) return 0;
  TrainingJob decoded;
  decoded.metadata.name = "fuzz";
  decoded.metadata.namespace_name = "ns";
  decoded.spec = *spec;
  (void)Validate(decoded);
  (void)EncodeSpec(*spec);
  return 0;
}
