#pragma once
// ComputePlan: the decision half of a reconcile, as a pure function of the job, what the caches
// show of its children, the time and whether the caches can be trusted (expectations settled).
// It never talks to the API; the reconciler carries the plan out (reconciler.h). Table-tested in
// tests/unit/controller/plan_test.cc.
//
// Order of precedence in one pass: being deleted (nothing to do) > invalid spec (Stalled, never
// act) > already finished (cleanPodPolicy, TTL) > suspended > deadline > pod failure > success >
// create what is missing and report progress. Every pass of a valid job also brings the
// Service's EndpointSlices up to its pods' addresses (endpoint_plan.h).

#include "operator/api/types.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/plan_types.h"

namespace lockstep::controller {

Plan ComputePlan(const CachedJob& cached, const Observed& observed, api::Time now, bool settled,
                 const PlanOptions& options);

}  // namespace lockstep::controller
