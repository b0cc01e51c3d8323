#include "launcher/rendezvous/spares.h"

namespace lockstep::launcher::rendezvous {

std::optional<std::string> SparePool::AdmitStandby(int32_t spare_index, uint64_t id) {
  if (spare_index < 0) return "a standby spare needs a spare index >= 0";
  if (standby_.count(spare_index) != 0) {
    return "spare " + std::to_string(spare_index) + " already stands by";
  }
  for (const auto& [node_rank, s] : serving_) {
    if (static_cast<int32_t>(s.spare_index) == spare_index) {
      return "spare " + std::to_string(spare_index) + " already serves node rank " +
             std::to_string(node_rank);
    }
  }
  standby_[spare_index] = id;
  return std::nullopt;
}

void SparePool::RemoveStandby(uint64_t id) {
  for (auto it = standby_.begin(); it != standby_.end(); ++it) {
    if (it->second == id) {
      standby_.erase(it);
      return;
    }
  }
}

std::optional<uint64_t> SparePool::TakeStandby() {
  if (standby_.empty()) return std::nullopt;
  const uint64_t id = standby_.begin()->second;
  standby_.erase(standby_.begin());
  return id;
}

void SparePool::RecordPromotion(uint32_t node_rank, int32_t spare_index, uint32_t round,
                                std::string host) {
  protocol::SpareServing s;
  s.node_rank = node_rank;
  s.spare_index = static_cast<uint32_t>(spare_index);
  s.round = round;
  s.host = std::move(host);
  serving_[node_rank] = std::move(s);
  ++promotions_;
}

std::optional<std::string> SparePool::Fence(uint32_t node_rank, int32_t spare_index) const {
  auto it = serving_.find(node_rank);
  if (it != serving_.end()) {
    if (static_cast<int32_t>(it->second.spare_index) == spare_index) return std::nullopt;
    return "node rank " + std::to_string(node_rank) + " is served by spare " +
           std::to_string(it->second.spare_index) + " since round " +
           std::to_string(it->second.round) + "; this launcher was replaced";
  }
  if (spare_index >= 0) {
    // A spare that was never promoted to this node-rank cannot claim it.
    return "spare " + std::to_string(spare_index) + " does not serve node rank " +
           std::to_string(node_rank);
  }
  return std::nullopt;
}

std::vector<protocol::SpareServing> SparePool::Serving() const {
  std::vector<protocol::SpareServing> out;
  out.reserve(serving_.size());
  for (const auto& [node_rank, s] : serving_) out.push_back(s);
  return out;
}

}  // namespace lockstep::launcher::rendezvous
