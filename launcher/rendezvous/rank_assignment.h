#pragma once
// Rank assignment for a completed round. Pure and unit-tested.
//
// Group ranks follow node rank (the operator orders node ranks by topology, so neighbouring ranks
// share a rack); an elastic round may have gaps in node ranks, which compact away. A node's global
// ranks are [first_rank, first_rank + nproc).

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/messages.h"

namespace lockstep::launcher::rendezvous {

struct Member {
  uint32_t node_rank = 0;
  std::string role;
  uint32_t role_index = 0;
  std::string host;
  uint32_t port = 0;
  uint32_t nproc = 1;
};

struct Assignment {
  std::vector<protocol::PeerEntry> peers;  // indexed by group rank
  uint32_t world_size = 0;
};

// Fails on duplicate node ranks, zero nproc or a world size that overflows int32.
StatusOr<Assignment> AssignRanks(std::vector<Member> members);

}  // namespace lockstep::launcher::rendezvous
