#include "launcher/rendezvous/lost_members.h"

#include <algorithm>

namespace lockstep::launcher::rendezvous {

void LostMembers::Record(protocol::LostMember lost) {
  if (!lost_.empty()) {
    const uint32_t newest = lost_.front().round;
    if (lost.round < newest) return;
    if (lost.round > newest) lost_.clear();
  }
  auto it = std::lower_bound(
      lost_.begin(), lost_.end(), lost.node_rank,
      [](const protocol::LostMember& m, uint32_t rank) { return m.node_rank < rank; });
  if (it != lost_.end() && it->node_rank == lost.node_rank) {
    *it = std::move(lost);
    return;
  }
  if (lost_.size() >= max_entries_) return;
  lost_.insert(it, std::move(lost));
}

}  // namespace lockstep::launcher::rendezvous
