#pragma once
// Turns a rendezvous result into the World (launcher/world.h) and the generic child environment.
// Pure.

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/config/config.h"
#include "launcher/world.h"
#include "protocol/messages.h"

namespace lockstep::launcher {

World BuildWorld(const LauncherConfig& config, const protocol::WorldMsg& msg,
                 const std::optional<protocol::PeerTable>& table, int restart_count);

// Whether `framework`'s adapter needs every pod's entry (the peer table, O(W) bytes per launcher,
// O(W^2) in total) rather than the compact world. Keep in step with launcher/frameworks/*: an
// adapter that calls internal::RequirePeerTable must be listed here.
bool NeedsPeerTable(std::string_view framework);

// The LOCKSTEP_* variables one local process gets (contract.h, "Environment every child gets").
std::map<std::string, std::string> GenericChildEnv(const World& world, int local_rank,
                                                   const std::string& heartbeat_file);

// Heartbeat file of local rank `local_rank`, or "" when none was configured.
std::string HeartbeatFileFor(const std::string& base, int local_rank);

}  // namespace lockstep::launcher
