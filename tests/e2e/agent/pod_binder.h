#pragma once
// The agent as the default scheduler of the namespaces named by --schedule-namespace. The local
// control plane runs no kube-scheduler, so a Deployment's pods (Lockstep's chart: schedulerName
// default-scheduler) would stay Pending. Every Tick each unbound pod of those namespaces that
// asks for the default scheduler is bound through pods/binding, as kube-scheduler binds, to the
// agent's healthy node that matches its nodeSelector and runs the fewest pods (then by name):
// that spreads a Deployment's replicas over nodes, as the chart's preferred anti-affinity asks.
// Nothing else of a scheduler is done (no resources, taints, affinity terms or preemption): a
// test harness, like the rest of the agent.
//
// Threads: one pod informer (reflector thread) per namespace; Tick runs on the agent's thread.

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "operator/kube/informer.h"
#include "operator/kube/rest_client.h"

namespace lockstep::e2e {

struct PodItem;

struct NodeChoice {
  std::string name;
  std::map<std::string, std::string> labels;
  int pods = 0;  // pods the agent runs on the node
};

// The node `pod` goes to: nodeSelector matched, fewest pods, then the first name; nullopt when
// none matches. Pure.
std::optional<std::string> ChooseNode(const nlohmann::json& pod,
                                      const std::vector<NodeChoice>& nodes);

class PodBinder {
 public:
  PodBinder(kube::RestClient& client, const std::vector<std::string>& namespaces);
  ~PodBinder();

  void Start();
  // Binds every waiting pod. `nodes` are the healthy nodes with their current pod counts; each
  // binding counts on its node for the next pod of the same Tick.
  void Tick(std::vector<NodeChoice> nodes);

 private:
  kube::RestClient& client_;
  std::vector<std::unique_ptr<kube::Informer<PodItem>>> informers_;
};

}  // namespace lockstep::e2e
