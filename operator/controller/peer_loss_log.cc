#include "operator/controller/peer_loss_log.h"

namespace lockstep::controller {

std::optional<uint64_t> PeerLossLogLimit::Allow(const std::string& job, const std::string& verdict,
                                                Clock::Steady now) {
  Key& k = keys_[job + "|" + verdict];
  while (!k.logged.empty() && now - k.logged.front() >= kPeerLossLogWindow) k.logged.pop_front();
  if (k.logged.size() >= kPeerLossLogBurst) {
    ++k.held_back;
    return std::nullopt;
  }
  k.logged.push_back(now);
  const uint64_t held_back = k.held_back;
  k.held_back = 0;
  if (keys_.size() > kMaxPeerLossLogKeys) Prune(now);
  return held_back;
}

void PeerLossLogLimit::Prune(Clock::Steady now) {
  for (auto it = keys_.begin(); it != keys_.end();) {
    const std::deque<Clock::Steady>& logged = it->second.logged;
    const bool quiet = logged.empty() || now - logged.back() >= kPeerLossLogWindow;
    it = quiet ? keys_.erase(it) : std::next(it);
  }
  while (keys_.size() > kMaxPeerLossLogKeys) keys_.erase(keys_.begin());
}

}  // namespace lockstep::controller
