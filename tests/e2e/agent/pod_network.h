#pragma once
// The test network: one Linux bridge (--bridge) holding the first address of --subnet, and per
// pod a network namespace `<bridge>-<6 hex>` (in /run/netns) with a veth pair: the host end
// (same name) on the bridge, the pod end renamed eth0 with the next free address. There is no
// default route and no NAT, so pod traffic stays on the bridge, the namespaces and loopback.

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "common/status.h"

namespace lockstep::e2e {

// IPv4 addresses of one subnet, handed out lowest-first; the network address, the bridge's
// (the first host) and the broadcast address are never handed out.
class IpAllocator {
 public:
  static StatusOr<IpAllocator> Parse(const std::string& cidr);
  std::string BridgeAddress() const { return Format(network_ + 1); }
  int prefix_len() const { return prefix_len_; }
  StatusOr<std::string> Allocate();
  void Release(const std::string& ip);

  static std::string Format(uint32_t addr);

 private:
  uint32_t network_ = 0;
  int prefix_len_ = 0;
  uint32_t size_ = 0;
  std::set<uint32_t> used_;  // offsets from network_
};

struct PodNet {
  std::string name;        // netns and host-side veth name
  std::string netns_path;  // /run/netns/<name>
  std::string ip;
};

class PodNetwork {
 public:
  PodNetwork(std::string bridge, IpAllocator ips);

  // Creates the bridge (replacing a stale one of the same name) and brings it up.
  Status SetUpBridge();
  Status DeleteBridge();
  StatusOr<PodNet> Create();
  // Kills nothing: the caller has emptied the namespace. Deleting the netns removes the veth.
  void Destroy(const PodNet& net);
  const std::string& bridge() const { return bridge_; }
  std::string host_ip() const { return ips_.BridgeAddress(); }

  // Removes every namespace and link named `<bridge>-*` and the bridge itself, killing the
  // processes left in those namespaces: the leftovers of a crashed run.
  static void RemoveStale(const std::string& bridge);

 private:
  const std::string bridge_;
  std::mutex mu_;
  IpAllocator ips_;       // guarded by mu_
  uint32_t next_id_ = 0;  // guarded by mu_
};

}  // namespace lockstep::e2e
