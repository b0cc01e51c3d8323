// Fuzz target for what the operator reads of Kueue's objects (operator/kueue/): a Workload's
// status is written by Kueue, but anyone allowed to patch workloads/status can write any JSON
// there, and a ResourceFlavor's spec is a cluster admin's. Every input is decoded as both; a
// decoded Workload is then taken as the job's own and decided on (admitted flavors, topology
// assignment, conditions) for a job in each of its states. Acceptable outcomes: values or error
// statuses, never a crash; a decision that runs the pods has placements for what was admitted,
// and every status write is guarded by the resourceVersion read.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/check.h"
#include "operator/kueue/admission.h"
#include "operator/kueue/gate.h"
#include "operator/kueue/workload.h"
#include "operator/kueue/workload_view.h"
#include "tests/unit/kueue/kueue_test_util.h"

namespace lockstep::kueue {
namespace {

void CheckDecision(const Decision& d) {
  for (const WorkloadWrite& w : d.writes) {
    if (w.kind == WorkloadWrite::Kind::kPatchStatus || w.kind == WorkloadWrite::Kind::kPatchSpec) {
      LS_CHECK(w.body.is_object() && w.body["metadata"].contains("resourceVersion"));
    }
  }
  if (d.admitted) LS_CHECK(d.run);
}

}  // namespace
}  // namespace lockstep::kueue

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::kueue;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const nlohmann::json object = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  std::map<std::string, Flavor> flavors;
  if (auto flavor = DecodeFlavor(object); flavor.ok()) flavors["gpu"] = *flavor;
  lockstep::StatusOr<WorkloadView> workload = DecodeWorkload(object);
  if (!workload.ok()) return 0;
  (void)PlacementsOf(*workload, flavors);
  if (workload->admission) {
    for (const PodSetAssignment& a : workload->admission->pod_sets) {
      if (a.topology) (void)DomainTerms(*a.topology);
    }
  }
  const lockstep::api::TrainingJob job = testing::Job();  // the unit tests' job
  (void)MatchesJob(*workload, job);
  KueueObservation observed;
  observed.synced = true;
  observed.flavors = flavors;
  WorkloadView owned = *workload;
  owned.owner_uid = job.metadata.uid;
  observed.workloads.push_back(owned);
  for (int pods : {0, 2}) {
    for (bool ready : {false, true}) {
      JobFacts facts;
      facts.pods_existing = pods;
      facts.pods_ready = ready;
      CheckDecision(Decide(job, observed, facts, "2026-12-02T00:00:00Z"));
    }
  }
  JobFacts finished;
  finished.finished = JobFacts::Finished{true, "done"};
  CheckDecision(Decide(job, observed, finished, "2026-12-02T00:00:00Z"));
  return 0;
}
