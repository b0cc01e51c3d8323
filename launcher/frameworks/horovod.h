#pragma once
// Horovod helpers shared by the adapter and the launcher core (which sizes the Gloo KV server).

#include <map>
#include <string>

#include "launcher/world.h"

namespace lockstep::launcher::frameworks {

// HOROVOD_HOSTNAME of pod `node_rank`: its host, made unique with "-<node rank>" when pods
// share an address (several pods on one machine), because Horovod's local scope is keyed on it.
std::string HorovodHostName(const World& world, int node_rank);

// Member count of every Horovod Gloo scope: "global" = world size, "local_<hostname>" = that
// pod's nproc, "cross_<local rank>" = pods with a process at that local rank.
std::map<std::string, int> HorovodScopeSizes(const World& world);

}  // namespace lockstep::launcher::frameworks
