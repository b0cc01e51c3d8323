#pragma once
// Builders for the Kueue unit tests: a Kueue-labelled job and Workloads in every state Kueue
// leaves them in.

#include <string>

#include <nlohmann/json.hpp>

#include "operator/api/types.h"
#include "operator/kueue/workload.h"
#include "operator/kueue/workload_view.h"

namespace lockstep::kueue::testing {

using nlohmann::json;

inline json Container(const std::string& gpus) {
  return {{"name", "trainer"},
          {"image", "img"},
          {"command", {"python", "train.py"}},
          {"resources", {{"requests", {{"nvidia.com/gpu", gpus}}}, {"limits", {{"nvidia.com/gpu", gpus}}}}}};
}

// 2 workers of 4 GPUs, in LocalQueue team-a.
inline api::TrainingJob Job() {
  api::TrainingJob j;
  j.metadata.name = "train";
  j.metadata.namespace_name = "ns";
  j.metadata.uid = "0a1b2c3d-0000-0000-0000-000000000000";
  j.metadata.labels[std::string(kQueueNameLabel)] = "team-a";
  j.spec.replicas = 2;
  j.spec.pod_template = {{"spec", {{"containers", json::array({Container("4")})}}}};
  return j;
}

struct Cond {
  std::string type;
  std::string status;
  std::string reason = "R";
  std::string message = "m";
};

// The Workload the operator made for `job`, as the apiserver would return it, with `conditions`
// and, when `cluster_queue` is set, an admission of flavor `flavor` for every PodSet.
inline json StoredWorkload(const api::TrainingJob& job, std::vector<Cond> conditions = {},
                           const std::string& cluster_queue = "",
                           const std::string& flavor = "gpu") {
  json w = BuildWorkload(job, 0);
  w["metadata"]["uid"] = "wl-uid";
  w["metadata"]["resourceVersion"] = "7";
  w["metadata"]["generation"] = 1;
  w["metadata"]["ownerReferences"][0]["uid"] = job.metadata.uid;
  json conds = json::array();
  for (const Cond& c : conditions) {
    conds.push_back({{"type", c.type}, {"status", c.status}, {"reason", c.reason},
                     {"message", c.message}, {"observedGeneration", 1},
                     {"lastTransitionTime", "2026-12-01T00:00:00Z"}});
  }
  w["status"]["conditions"] = conds;
  if (!cluster_queue.empty()) {
    json sets = json::array();
    for (const json& ps : w["spec"]["podSets"]) {
      sets.push_back({{"name", ps["name"]}, {"flavors", {{"nvidia.com/gpu", flavor}}},
                      {"count", ps["count"]}});
    }
    w["status"]["admission"] = {{"clusterQueue", cluster_queue}, {"podSetAssignments", sets}};
  }
  return w;
}

inline WorkloadView View(const json& w) { return DecodeWorkload(w).value(); }

}  // namespace lockstep::kueue::testing
