#pragma once
// The rendezvous server's record of the members it lost (a member of a running or forming round
// that fell silent for the peer timeout or whose connection closed), reported to the operator in
// ControlStatus::lost: the peer evidence of a lost node (docs/failures.md "Peer evidence").
//
// Only the newest round that lost a member is kept: a loss in a later round replaces the list,
// one entry per node rank (a later loss of the same rank replaces it). So the list holds at most
// max_nodes entries. It survives the abort it causes: a dead node never rejoins the next round,
// and the operator must still learn of it while the others wait in that round.
//
// Pure data; the server calls it on its loop thread only (not thread-safe).

#include <cstdint>
#include <vector>

#include "protocol/messages.h"

namespace lockstep::launcher::rendezvous {

class LostMembers {
 public:
  explicit LostMembers(uint32_t max_entries) : max_entries_(max_entries) {}

  // Records `lost`. Ignored when it belongs to a round older than the newest recorded one, or
  // when max_entries other node ranks of the newest round are already recorded.
  void Record(protocol::LostMember lost);
  // The newest round's losses, by node rank.
  const std::vector<protocol::LostMember>& List() const { return lost_; }

 private:
  uint32_t max_entries_;
  std::vector<protocol::LostMember> lost_;  // sorted by node rank
};

}  // namespace lockstep::launcher::rendezvous
