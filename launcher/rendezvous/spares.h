#pragma once
// The rendezvous server's hot-spare bookkeeping (docs/launcher.md "Hot spares"): which standby
// spares wait (spare index -> connection), which node-ranks promoted spares serve now, and the
// promotions so far. Pure: no sockets, no clock; the server (server.h) owns the connections and
// asks this class what to do with them. Thread-compatible (the server's loop thread only).
//
// A spare is identified by its spare index (the spare pod's --role-index), which the operator
// keeps unique per job. Once promoted, spare k serves node-rank r until the server ends: a gang
// pod claiming r again (its launcher partitioned, not dead) is fenced out, so no two launchers
// ever train as node-rank r.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "protocol/messages.h"

namespace lockstep::launcher::rendezvous {

class SparePool {
 public:
  // A standby spare connected (connection `id`). Error (the refusal's reason) when another
  // connection already stands by, or serves a node-rank, as spare `spare_index`.
  std::optional<std::string> AdmitStandby(int32_t spare_index, uint64_t id);
  // The standby connection `id` closed; no-op when it is not one.
  void RemoveStandby(uint64_t id);
  // The lowest-index standby spare's connection, taken out of the pool; nullopt when none waits.
  std::optional<uint64_t> TakeStandby();
  // Spare `spare_index` (just taken) serves `node_rank` from round `round` on.
  void RecordPromotion(uint32_t node_rank, int32_t spare_index, uint32_t round, std::string host);
  // Why a non-standby join of `node_rank` by a launcher of spare `spare_index` (-1: a gang pod)
  // must be refused: the node-rank is served by another spare. nullopt: it may join.
  std::optional<std::string> Fence(uint32_t node_rank, int32_t spare_index) const;

  uint32_t promotions() const { return promotions_; }
  uint32_t standby() const { return static_cast<uint32_t>(standby_.size()); }
  // Every node-rank a promoted spare serves, by node-rank (ControlStatus::serving).
  std::vector<protocol::SpareServing> Serving() const;

 private:
  std::map<int32_t, uint64_t> standby_;  // spare index -> connection id, lowest index first
  std::map<uint32_t, protocol::SpareServing> serving_;  // node-rank -> who serves it
  uint32_t promotions_ = 0;
};

}  // namespace lockstep::launcher::rendezvous
