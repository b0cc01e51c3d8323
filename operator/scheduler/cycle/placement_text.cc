#include "operator/scheduler/cycle/placement_text.h"

#include <set>
#include <vector>

#include "operator/scheduler/explain.h"

namespace lockstep::scheduler {
namespace {

std::string Join(const std::set<std::string>& values) {
  std::string out;
  for (const std::string& v : values) {
    if (!out.empty()) out += ", ";
    out += v;
  }
  return out;
}

}  // namespace

std::string PlacedMessage(const Snapshot& snapshot, const GangRequest& gang,
                          const Placement& placement) {
  std::set<std::string> nodes;
  for (const PodAssignment& a : placement.assignments) nodes.insert(a.node_name);
  std::string message = "placed " + std::to_string(placement.assignments.size()) + " pods on " +
                        std::to_string(nodes.size()) + " nodes";
  std::vector<std::string> keys(gang.topology_keys.rbegin(), gang.topology_keys.rend());
  if (!gang.required_topology_key.empty()) keys.push_back(gang.required_topology_key);
  keys.emplace_back(kRackKey);
  keys.emplace_back(kBlockKey);
  for (const std::string& key : keys) {
    std::set<std::string> domains;
    for (const PodAssignment& a : placement.assignments) {
      const auto& labels = snapshot.node(a.node).labels;
      if (auto it = labels.find(key); it != labels.end()) domains.insert(it->second);
    }
    if (domains.empty()) continue;
    return message + " in " + DomainNoun(key) + " " + Join(domains);
  }
  return message;
}

ScheduledCondition WaitingCondition(const GangDecision& decision) {
  ScheduledCondition c;
  c.reason = std::string(PlacementFailureReason(decision.placement.failure));
  c.message = decision.placement.message;
  switch (decision.outcome) {
    case Outcome::kReserved: {
      // queue.h appends "; waited <n>s, capacity reserved on <m> nodes": drop the seconds.
      const size_t waited = c.message.find("; waited ");
      if (waited != std::string::npos) c.message.resize(waited);
      c.message += "; capacity reserved on " + std::to_string(decision.reserved_nodes.size()) +
                   " nodes";
      break;
    }
    case Outcome::kBlockedByReservation:
      c.reason = std::string(kReasonHeldForOlderGang);
      break;
    case Outcome::kPlaced:
    case Outcome::kWaiting:
      break;
  }
  return c;
}

}  // namespace lockstep::scheduler
