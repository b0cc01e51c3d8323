#pragma once
// Helpers the framework adapters share. Internal to launcher/frameworks.

#include <string>
#include <vector>

#include "common/status.h"
#include "launcher/frameworks/frameworks.h"
#include "launcher/world.h"

namespace lockstep::launcher::frameworks::internal {

// Checks what every adapter relies on: peers indexed by node rank, this node among them,
// consistent first ranks and world size (of every peer when world.peers_complete, else of this
// pod), a non-empty command.
Status ValidateWorld(const World& world, const std::vector<std::string>& command);

// Frameworks whose environment names every pod (TF_CONFIG, Horovod scopes, Ray) need the peer
// table; without it only this pod's PeerInfo is filled in.
Status RequirePeerTable(const World& world);

// One kWorker child per local rank running `command`, with ranks filled in and no env yet.
ChildPlan WorkerPerLocalRank(const World& world, const std::vector<std::string>& command);

// "host:port"; IPv6 literals are bracketed.
std::string HostPort(const std::string& host, int port);

// world.extra[key], or `fallback` when absent.
std::string Extra(const World& world, const std::string& key, const std::string& fallback);

}  // namespace lockstep::launcher::frameworks::internal
