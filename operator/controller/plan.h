#pragma once
// ComputePlan: the decision half of a reconcile, as a pure function of the job, what the caches
// show of its children, the time and whether the caches can be trusted (expectations settled).
// It never talks to the API; the reconciler carries the plan out (reconciler.h). Table-tested in
// tests/unit/controller/plan_test.cc.
//
// A pass runs the steps of one ordered table (PlanSteps; kSteps in plan.cc is the only place the
// order is written) until one claims it: the first step whose rule holds decides the pass, and no
// later step runs. Steps without a rule only record (a condition, a counter, a finding later
// rules read) and never end the pass; the last step claims every pass that reaches it.
// Plan::decided_by names the step that claimed the pass. The table runs in three stages: gates
// (being deleted, a status or spec the operator cannot act on), a held job (finished, suspended,
// queued by Kueue), an active one. Every pass a gate did not claim also brings the Service's
// EndpointSlices up to its pods' addresses (endpoint_plan.h).
// tests/unit/controller/plan_steps_test.cc pins the order; docs/life-of-a-trainingjob.md lists
// the claiming steps and its name check (unit.docs.life_of_names) compares them with the table.

#include <string_view>
#include <vector>

#include "operator/api/types.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/plan_types.h"

namespace lockstep::controller {

Plan ComputePlan(const CachedJob& cached, const Observed& observed, api::Time now, bool settled,
                 const PlanOptions& options);

// Where a step stands: a gate's claim leaves the job alone (only conditions, and no
// EndpointSlices); a held job's pods are deleted or kept but none created; an active job's are
// created.
enum class PlanStage { kGate, kHeld, kActive };

// One row of the pass's table.
struct PlanStep {
  std::string_view name;  // CamelCase; Plan::decided_by
  PlanStage stage;
  std::string_view owner;   // the file that holds the step's rule, from the repository root
  std::string_view claims;  // when it claims the pass; empty for a step that only records
};

// The table, in the order a pass runs it.
const std::vector<PlanStep>& PlanSteps();

}  // namespace lockstep::controller
