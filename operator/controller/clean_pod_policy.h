#pragma once
// runPolicy.cleanPodPolicy, applied once a job has finished: All deletes every pod, Running
// deletes the pods still running or pending (terminal ones stay for their logs), None keeps all.
// Pods already being deleted are skipped so repeated passes issue no repeated deletes.

#include <vector>

#include "operator/api/enums.h"
#include "operator/controller/plan_types.h"
#include "operator/kube/objects.h"

namespace lockstep::controller {

std::vector<PodDeletion> PodsToClean(api::CleanPodPolicy policy,
                                     const std::vector<kube::Pod>& pods);

// Every pod not yet terminal or being deleted (suspend, and the roles a success leaves running).
std::vector<PodDeletion> ActivePods(const std::vector<kube::Pod>& pods);

}  // namespace lockstep::controller
