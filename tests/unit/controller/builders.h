#pragma once
// Builders for the controller's unit tests: a valid TrainingJob and pods in any phase.

#include <chrono>
#include <string>

#include "operator/api/children.h"
#include "operator/api/types.h"
#include "operator/controller/cached_job.h"
#include "operator/controller/node_health.h"
#include "operator/kube/objects.h"

namespace lockstep::controller::testing {

inline api::Time T0() { return api::Time(std::chrono::seconds(1'800'000'000)); }

inline CachedJob Job(int replicas = 2) {
  CachedJob c;
  c.meta.name = "job";
  c.meta.namespace_ = "ns";
  c.meta.uid = "uid-1";
  c.meta.resource_version = "10";
  api::TrainingJob& j = c.job;
  j.metadata.name = "job";
  j.metadata.namespace_name = "ns";
  j.metadata.uid = "uid-1";
  j.metadata.generation = 1;
  j.metadata.creation_timestamp = T0();
  j.spec.framework = api::Framework::kPyTorch;
  j.spec.replicas = replicas;
  j.spec.pod_template = {
      {"spec",
       {{"containers",
         {{{"name", "trainer"}, {"image", "img"}, {"command", {"python", "train.py"}}}}}}}};
  return c;
}

inline kube::Pod Pod(const std::string& role, int index, const std::string& phase,
                     const std::string& node = "node-1") {
  kube::Pod p;
  p.meta.name = "job-" + role + "-" + std::to_string(index);
  p.meta.namespace_ = "ns";
  p.meta.uid = "pod-uid-" + role + std::to_string(index);
  p.meta.labels = {{std::string(api::kLabelJobName), "job"},
                   {std::string(api::kLabelRole), role},
                   {std::string(api::kLabelReplicaIndex), std::to_string(index)}};
  p.meta.owner_refs.push_back({"lockstep.dev/v1alpha1", "TrainingJob", "job", "uid-1", true});
  p.phase = phase;
  p.node_name = node;
  if (phase == "Running") p.conditions.push_back({"Ready", "True", "", "", "", ""});
  return p;
}

inline kube::Pod FailedPod(const std::string& role, int index, int exit_code) {
  kube::Pod p = Pod(role, index, "Failed");
  kube::ContainerStatus c;
  c.name = "trainer";
  c.state = "terminated";
  c.exit_code = exit_code;
  c.reason = "Error";
  p.container_statuses.push_back(c);
  return p;
}

// `p` labelled as a pod of `attempt` (lockstep.dev/attempt).
inline kube::Pod InAttempt(kube::Pod p, int attempt) {
  p.meta.labels[std::string(api::kLabelAttempt)] = std::to_string(attempt);
  return p;
}

// `p` with its deletion requested (Terminating).
inline kube::Pod Terminating(kube::Pod p) {
  p.meta.deletion_timestamp = "2027-01-15T08:00:00Z";
  return p;
}

// NodeHealthMonitor's verdict on a lost node.
inline NodeVerdict LostNode(const std::string& reason, const std::string& message) {
  NodeVerdict v;
  v.lost = true;
  v.reason = reason;
  v.message = message;
  return v;
}

}  // namespace lockstep::controller::testing
