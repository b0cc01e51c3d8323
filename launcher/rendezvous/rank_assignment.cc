#include "launcher/rendezvous/rank_assignment.h"

#include <algorithm>
#include <limits>

namespace lockstep::launcher::rendezvous {

StatusOr<Assignment> AssignRanks(std::vector<Member> members) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.node_rank < b.node_rank; });
  Assignment out;
  out.peers.reserve(members.size());
  uint64_t next_rank = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    if (i > 0 && members[i - 1].node_rank == m.node_rank) {
      return InvalidArgumentError("node rank " + std::to_string(m.node_rank) + " joined twice");
    }
    if (m.nproc == 0) {
      return InvalidArgumentError("node rank " + std::to_string(m.node_rank) + " has nproc 0");
    }
    protocol::PeerEntry p;
    p.group_rank = static_cast<uint32_t>(i);
    p.node_rank = m.node_rank;
    p.role = m.role;
    p.role_index = m.role_index;
    p.host = m.host;
    p.port = m.port;
    p.nproc = m.nproc;
    p.first_rank = static_cast<uint32_t>(next_rank);
    next_rank += m.nproc;
    if (next_rank > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return InvalidArgumentError("world size overflows");
    }
    out.peers.push_back(std::move(p));
  }
  out.world_size = static_cast<uint32_t>(next_rank);
  return out;
}

}  // namespace lockstep::launcher::rendezvous
