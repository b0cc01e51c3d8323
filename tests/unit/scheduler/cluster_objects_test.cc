// DecodeJobInfo (cluster_objects.h) for a job naming a template: before the controller has
// written the template's snapshot into its status the job is "not yet decodable" (the informer
// leaves it out of its cache and logs it at Debug, not Error); once the snapshot exists it
// decodes with the spec merged over it (its framework, say, from the template).
#include "operator/scheduler/cycle/cluster_objects.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "operator/api/resolved_template.h"
#include "operator/kube/informer.h"

namespace lockstep::scheduler {
namespace {

using nlohmann::json;

json Containers() {
  const json trainer = {{"name", "trainer"}, {"command", {"t"}}};
  return {{"spec", {{"containers", json::array({trainer})}}}};
}

json Snapshot(const std::string& framework) {
  const json trainer = {{"name", "trainer"}, {"image", "img"}};
  const json spec = {{"framework", framework},
                     {"template", {{"spec", {{"containers", json::array({trainer})}}}}}};
  const api::ResolvedTemplate snap{"ClusterTrainingTemplate", "pytorch", "tmpl-uid", "77", 1,
                                   std::chrono::system_clock::from_time_t(1796000000), spec};
  return api::EncodeResolvedTemplate(snap);
}

json Job(json spec, json status) {
  json job = {{"apiVersion", "lockstep.dev/v1alpha1"},
              {"kind", "TrainingJob"},
              {"metadata", {{"name", "job"}, {"namespace", "ns"}, {"uid", "uid-1"}}},
              {"spec", std::move(spec)}};
  if (!status.is_null()) job["status"] = std::move(status);
  return job;
}

TEST(DecodeJobInfoTest, ATemplatedJobIsNotYetDecodableUntilItsSnapshotTable) {
  const json templated = {{"templateRef", {{"name", "pytorch"}}},
                          {"replicas", 2},
                          {"template", Containers()}};
  const json plain = {{"framework", "JAX"}, {"replicas", 3}, {"template", Containers()}};
  struct Row {
    const char* name;
    json object;
    bool ok;
    log::Level level;       // when not ok: what the informer logs it at
    std::string framework;  // when ok
    int replicas;
  };
  constexpr log::Level kNone = log::Level::kInfo;  // decoded: nothing logged
  const std::vector<Row> rows = {
      {"no template: decoded as stored", Job(plain, nullptr), true, kNone, "JAX", 3},
      {"template, no status yet: not yet", Job(templated, nullptr), false, log::Level::kDebug,
       "", 0},
      {"template, status without a snapshot: not yet", Job(templated, {{"attempt", 0}}), false,
       log::Level::kDebug, "", 0},
      {"template with its snapshot: merged over it",
       Job(templated, {{"resolvedTemplate", Snapshot("PyTorch")}}), true, kNone, "PyTorch", 2},
      {"a bad spec is an error, logged as one",
       Job({{"replicas", "two"}, {"template", Containers()}}, nullptr), false,
       log::Level::kError, "", 0},
      {"a bad templateRef is an error, logged as one",
       Job({{"templateRef", "pytorch"}, {"replicas", 2}, {"template", Containers()}}, nullptr),
       false, log::Level::kError, "", 0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    StatusOr<JobInfo> job = DecodeJobInfo(r.object);
    ASSERT_EQ(job.ok(), r.ok) << (job.ok() ? "decoded" : job.status().ToString());
    if (!r.ok) {
      EXPECT_EQ(kube::DecodeErrorLevel(job.status()), r.level) << job.status();
      if (r.level == log::Level::kDebug) {
        EXPECT_NE(job.status().message().find("ns/job"), std::string::npos) << job.status();
      }
      continue;
    }
    EXPECT_EQ(api::ToString(job->spec.framework), r.framework);
    EXPECT_EQ(job->spec.replicas, r.replicas);
  }
}

}  // namespace
}  // namespace lockstep::scheduler
