#pragma once
// JSON builders for the cycle's unit tests: TrainingJobs and the pods the controller would make
// for them, decoded through the same decoders the informers use.

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "operator/kube/objects.h"
#include "operator/scheduler/cycle/cluster_objects.h"
#include "operator/scheduler/cycle/gangs.h"

namespace lockstep::scheduler::testing {

inline constexpr char kJobUid[] = "uid-job";

// An elastic job `ns/job` of `replicas` workers (min `min_replicas`; 0 = not elastic) of
// `gpus` GPUs each, with `status` as the job's status object.
inline nlohmann::json JobJson(int replicas, int min_replicas, int gpus,
                              nlohmann::json status = nlohmann::json::object()) {
  const nlohmann::json resources = {{"nvidia.com/gpu", std::to_string(gpus)}};
  nlohmann::json spec = {
      {"framework", "Generic"},
      {"replicas", replicas},
      {"template",
       {{"spec",
         {{"containers",
           {{{"name", "trainer"},
             {"image", "busybox"},
             {"resources", {{"requests", resources}, {"limits", resources}}}}}}}}}}};
  if (min_replicas > 0)
    spec["elastic"] = {{"minReplicas", min_replicas}, {"maxReplicas", replicas}};
  return {{"apiVersion", "lockstep.dev/v1alpha1"},
          {"kind", "TrainingJob"},
          {"metadata",
           {{"name", "job"},
            {"namespace", "ns"},
            {"uid", kJobUid},
            {"creationTimestamp", "2026-01-01T00:00:00Z"}}},
          {"spec", spec},
          {"status", status}};
}

inline JobPtr Job(const nlohmann::json& object) {
  StatusOr<JobInfo> job = DecodeJobInfo(object);
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return std::make_shared<const JobInfo>(job.ok() ? *job : JobInfo{});
}

// Pod `job-<role>-<index>` of attempt `attempt`; `node` empty = pending.
inline PodPtr PodOf(const std::string& role, int index, int attempt, int gpus,
                    const std::string& node = "") {
  const nlohmann::json resources = {{"nvidia.com/gpu", std::to_string(gpus)}};
  nlohmann::json spec = {
      {"schedulerName", "lockstep"},
      {"containers",
       {{{"name", "trainer"}, {"resources", {{"requests", resources}, {"limits", resources}}}}}}};
  if (!node.empty()) spec["nodeName"] = node;
  const nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "job-" + role + "-" + std::to_string(index) + "-a" + std::to_string(attempt)},
        {"namespace", "ns"},
        {"uid", "pod-" + role + std::to_string(index) + "-" + std::to_string(attempt)},
        {"labels",
         {{"lockstep.dev/job-name", "job"},
          {"lockstep.dev/role", role},
          {"lockstep.dev/replica-index", std::to_string(index)},
          {"lockstep.dev/attempt", std::to_string(attempt)}}},
        {"ownerReferences",
         {{{"apiVersion", "lockstep.dev/v1alpha1"},
           {"kind", "TrainingJob"},
           {"name", "job"},
           {"uid", kJobUid},
           {"controller", true}}}}}},
      {"spec", spec},
      {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  StatusOr<kube::Pod> decoded = kube::DecodePod(pod);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return std::make_shared<const kube::Pod>(decoded.ok() ? *decoded : kube::Pod{});
}

}  // namespace lockstep::scheduler::testing
