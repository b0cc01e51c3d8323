#include "tests/e2e/agent/pod_network.h"

#include <arpa/inet.h>
#include <signal.h>

#include <cstdio>
#include <sstream>

#include "common/log.h"
#include "tests/e2e/agent/host_command.h"

namespace lockstep::e2e {

StatusOr<IpAllocator> IpAllocator::Parse(const std::string& cidr) {
  const size_t slash = cidr.find('/');
  if (slash == std::string::npos) return InvalidArgumentError("subnet " + cidr + ": no /len");
  in_addr addr{};
  if (inet_pton(AF_INET, cidr.substr(0, slash).c_str(), &addr) != 1) {
    return InvalidArgumentError("subnet " + cidr + ": bad address");
  }
  int len = -1;
  try {
    len = std::stoi(cidr.substr(slash + 1));
  } catch (const std::exception&) {
    len = -1;
  }
  if (len < 8 || len > 30) return InvalidArgumentError("subnet " + cidr + ": length not 8-30");
  IpAllocator a;
  a.prefix_len_ = len;
  a.size_ = 1u << (32 - len);
  a.network_ = ntohl(addr.s_addr) & ~(a.size_ - 1);
  return a;
}

std::string IpAllocator::Format(uint32_t addr) {
  char buf[INET_ADDRSTRLEN];
  std::snprintf(buf, sizeof(buf), "%u.%u.%u.%u", addr >> 24, (addr >> 16) & 0xff,
                (addr >> 8) & 0xff, addr & 0xff);
  return buf;
}

StatusOr<std::string> IpAllocator::Allocate() {
  for (uint32_t offset = 2; offset + 1 < size_; ++offset) {
    if (used_.insert(offset).second) return Format(network_ + offset);
  }
  return ResourceExhaustedError("no free address in the test subnet");
}

void IpAllocator::Release(const std::string& ip) {
  in_addr addr{};
  if (inet_pton(AF_INET, ip.c_str(), &addr) != 1) return;
  used_.erase(ntohl(addr.s_addr) - network_);
}

PodNetwork::PodNetwork(std::string bridge, IpAllocator ips)
    : bridge_(std::move(bridge)), ips_(std::move(ips)) {}

Status PodNetwork::SetUpBridge() {
  RemoveStale(bridge_);
  LS_RETURN_IF_ERROR(RunHostCommand({"ip", "link", "add", bridge_, "type", "bridge"}).status());
  const std::string addr = ips_.BridgeAddress() + "/" + std::to_string(ips_.prefix_len());
  LS_RETURN_IF_ERROR(RunHostCommand({"ip", "addr", "add", addr, "dev", bridge_}).status());
  return RunHostCommand({"ip", "link", "set", bridge_, "up"}).status();
}

Status PodNetwork::DeleteBridge() {
  return RunHostCommand({"ip", "link", "del", bridge_}).status();
}

StatusOr<PodNet> PodNetwork::Create() {
  PodNet net;
  {
    std::lock_guard<std::mutex> lock(mu_);
    LS_ASSIGN_OR_RETURN(net.ip, ips_.Allocate());
    char id[8];
    std::snprintf(id, sizeof(id), "%06x", next_id_++ & 0xffffff);
    net.name = bridge_ + "-" + id;
  }
  net.netns_path = "/run/netns/" + net.name;
  const std::string peer = bridge_ + "p" + net.name.substr(bridge_.size() + 1);
  const std::string cidr = net.ip + "/" + std::to_string(ips_.prefix_len());
  const std::vector<std::vector<std::string>> steps = {
      {"ip", "netns", "add", net.name},
      {"ip", "link", "add", net.name, "type", "veth", "peer", "name", peer},
      {"ip", "link", "set", peer, "netns", net.name},
      {"ip", "link", "set", net.name, "master", bridge_, "up"},
      {"ip", "-n", net.name, "link", "set", peer, "name", "eth0"},
      {"ip", "-n", net.name, "addr", "add", cidr, "dev", "eth0"},
      {"ip", "-n", net.name, "link", "set", "eth0", "up"},
      {"ip", "-n", net.name, "link", "set", "lo", "up"},
  };
  for (const auto& step : steps) {
    Status s = RunHostCommand(step).status();
    if (!s.ok()) {
      Destroy(net);
      return s;
    }
  }
  return net;
}

void PodNetwork::Destroy(const PodNet& net) {
  // Deleting the namespace takes the pod's veth end, and with it the host end, away.
  RunHostCommand({"ip", "netns", "del", net.name}).status().IgnoreError();
  RunHostCommand({"ip", "link", "del", net.name}).status().IgnoreError();  // if never moved
  std::lock_guard<std::mutex> lock(mu_);
  ips_.Release(net.ip);
}

void PodNetwork::RemoveStale(const std::string& bridge) {
  const std::string prefix = bridge + "-";
  if (StatusOr<std::string> list = RunHostCommand({"ip", "netns", "list"}); list.ok()) {
    std::istringstream lines(*list);
    std::string line;
    while (std::getline(lines, line)) {
      const std::string name = line.substr(0, line.find(' '));
      if (name.rfind(prefix, 0) != 0) continue;
      const int killed = SignalNetns("/run/netns/" + name, SIGKILL);
      log::Warning("removing stale pod network namespace",
                   {{"netns", name}, {"killed_processes", std::to_string(killed)}});
      RunHostCommand({"ip", "netns", "del", name}).status().IgnoreError();
    }
  }
  if (StatusOr<std::string> links = RunHostCommand({"ip", "-o", "link", "show"}); links.ok()) {
    std::istringstream lines(*links);
    std::string line;
    while (std::getline(lines, line)) {
      // "12: name@peer: <...>" or "12: name: <...>"
      const size_t start = line.find(": ");
      if (start == std::string::npos) continue;
      std::string name = line.substr(start + 2, line.find_first_of("@:", start + 2) - start - 2);
      if (name == bridge || name.rfind(prefix, 0) == 0 || name.rfind(bridge + "p", 0) == 0) {
        RunHostCommand({"ip", "link", "del", name}).status().IgnoreError();
      }
    }
  }
}

}  // namespace lockstep::e2e
