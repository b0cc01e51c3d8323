#pragma once
// The invariants the chaos tests hold the operator to, checked on a History (chaos_env.h): every
// version of the namespace's TrainingJobs and Pods in resourceVersion (etcd revision) order.
// Pure (tests/chaos/invariants_test.cc, unit tier).
// Each function returns the violations it found, one readable line each; empty means kept.
// Each chaos test also states the end state it expects of every job.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "operator/kube/rest_client.h"

namespace lockstep::chaos {

using nlohmann::json;

// One version of an object as the recorder received it. resourceVersion is etcd's revision,
// global across resources, so versions of pods and jobs can be put in one order.
struct Version {
  int64_t rv = 0;
  kube::WatchEventType type = kube::WatchEventType::kAdded;  // kAdded for listed objects too
  bool listed = false;  // came from a (re-)list, not a watch: its creation was not seen
  json object;
};

// status.attempt, status.observedGeneration and the restart counters (failures, disruptions,
// inPlace) of a job never decrease from one version to the next ("consecutive" is reset by
// design after a healthy run, and is not checked).
std::vector<std::string> CountersThatWentBack(const std::vector<Version>& jobs);

// What the history says of pod creations. A pod whose creation was seen (not only listed) was
// created for its owner job's state at that revision: the job existed, had not finished, and its
// status.attempt was the pod's lockstep.dev/attempt. A pod of an older attempt or of a finished
// job is an extra pod, whatever happens to it later (out_of_turn). A pod created after its job
// was deleted (or marked for deletion) is an orphan: a pass that read the job from the cache
// before the deletion reached it can still create it, as with every informer-based controller;
// the garbage collector removes it, and the tests check it is gone at the end. Pods created
// within a gap of the jobs' history (revisions (after, up to], History::JobGaps) are not judged.
struct PodCreations {
  std::vector<std::string> out_of_turn;
  int orphans = 0;
  int seen = 0;  // creations seen
};
PodCreations JudgePodCreations(const std::vector<Version>& jobs, const std::vector<Version>& pods,
                               const std::vector<std::pair<int64_t, int64_t>>& job_gaps = {});

// No GPU is held by two pods at once: replayed in revision order, the nvidia.com/gpu requests of
// the pods bound to a node and still holding it (not yet Succeeded, Failed or deleted; a pod
// that is terminating still holds its GPUs, as kube-scheduler and the kubelet count it) never
// exceed `gpus_per_node`. Two gangs placed on the same GPUs, by a scheduler that lost track of
// a victim still terminating or of a gang a dead leader was binding, break it. (It replaces "no
// pod bound twice", which could not fail: the apiserver never lets spec.nodeName change.)
// A pod that stops holding its GPUs while the recorder's watch is down is seen only when the
// watch resumes, so the replay stops at the first gap of the pods' history (`pod_gaps`).
std::vector<std::string> GpusHeldTwice(
    const std::vector<Version>& pods, int64_t gpus_per_node,
    const std::vector<std::pair<int64_t, int64_t>>& pod_gaps = {});

}  // namespace lockstep::chaos
