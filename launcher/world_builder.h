#pragma once
// Turns a rendezvous result into the World (launcher/world.h) and the generic child environment.
// Pure.

#include <map>
#include <optional>
#include <string>

#include "launcher/config/config.h"
#include "launcher/rendezvous/messages.h"
#include "launcher/world.h"

namespace lockstep::launcher {

World BuildWorld(const LauncherConfig& config, const rendezvous::WorldMsg& msg,
                 const std::optional<rendezvous::PeerTable>& table, int restart_count);

// The LOCKSTEP_* variables one local process gets (contract.h, "Environment every child gets").
std::map<std::string, std::string> GenericChildEnv(const World& world, int local_rank,
                                                   const std::string& heartbeat_file);

// Heartbeat file of local rank `local_rank`, or "" when none was configured.
std::string HeartbeatFileFor(const std::string& base, int local_rank);

}  // namespace lockstep::launcher
