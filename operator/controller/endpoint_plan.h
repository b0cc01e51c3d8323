#pragma once
// Which EndpointSlices of a job's Service a reconcile pass applies (api/endpoint_slice.h): the
// slice of each address family whose endpoints changed since it was written. Pure: the pods as
// the informer cache holds them and the digests the stored slices carry in; the slices out.

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/api/endpoint_slice.h"
#include "operator/api/types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

// The endpoints the job's Service publishes: every pod of the job (of any attempt: a pod's DNS
// name must resolve as long as it runs) that has an address, is not terminal and is not being
// deleted (a restart's replacement takes the same name, and the name must lead to it, not to the
// pod going away).
std::vector<api::PodEndpoint> ServiceEndpoints(const std::vector<kube::Pod>& pods);

// The slices to apply, IPv4 first. `stored`: the job's slices in the cache, name -> digest
// annotation ("" when it has none). A family is applied when its digest differs from its stored
// slice's, or when it has endpoints and no stored slice; a family without endpoints and without a
// slice is never written (a job whose pods have no address yet writes nothing), and one whose
// endpoints all left is applied empty rather than deleted (the next pod's address updates it).
std::vector<nlohmann::json> PlanEndpointSlices(const api::TrainingJob& job,
                                               const std::vector<kube::Pod>& pods,
                                               const std::map<std::string, std::string>& stored);

}  // namespace lockstep::controller
