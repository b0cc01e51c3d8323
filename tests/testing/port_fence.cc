#include "tests/testing/port_fence.h"

#include <filesystem>
#include <sstream>
#include <string>

#include "tests/testing/host_state.h"

namespace lockstep::testing {
namespace {

using nlohmann::json;

// "0100007F" (IPv4, bytes in host order: 127.0.0.1) or a 32-hex-digit IPv6 address.
bool IsLoopback(std::string_view hex_address) {
  if (hex_address.size() == 8) return hex_address.substr(6, 2) == "7F";
  if (hex_address.size() == 32) {
    if (hex_address == "00000000000000000000000001000000") return true;  // ::1
    // ::ffff:127.x.y.z: the last word is the IPv4 address as above.
    return hex_address.substr(0, 24) == "0000000000000000FFFF0000" &&
           hex_address.substr(30, 2) == "7F";
  }
  return false;
}

bool PortMatches(const json& rule_port, int port) {
  if (!rule_port.is_object()) return false;
  if (rule_port.value("protocol", std::string("TCP")) != "TCP") return false;
  if (!rule_port.contains("port")) return true;  // every port of the protocol
  const json& first = rule_port["port"];
  if (first.is_string()) return true;  // a named port: assume it may be this one
  if (!first.is_number_integer()) return false;
  const int low = first.get<int>();
  const int high = rule_port.contains("endPort") && rule_port["endPort"].is_number_integer()
                       ? rule_port["endPort"].get<int>()
                       : low;
  return port >= low && port <= high;
}

}  // namespace

std::set<int> ParseListeningPorts(std::string_view proc_net_tcp) {
  std::set<int> ports;
  std::istringstream lines{std::string(proc_net_tcp)};
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    if (!(fields >> slot >> local >> remote >> state) || state != "0A") continue;
    const size_t colon = local.find(':');
    if (colon == std::string::npos || colon + 5 != local.size()) continue;
    if (IsLoopback(std::string_view(local).substr(0, colon))) continue;
    try {
      ports.insert(std::stoi(local.substr(colon + 1), nullptr, 16));
    } catch (const std::exception&) {
      continue;
    }
  }
  return ports;
}

std::set<int> ListeningTcpPorts(pid_t pid) {
  const std::string net = "/proc/" + std::to_string(pid) + "/net/";
  std::set<int> ports = ParseListeningPorts(ReadWholeFile(net + "tcp"));
  ports.merge(ParseListeningPorts(ReadWholeFile(net + "tcp6")));
  return ports;
}

std::set<int> ListeningTcpPortsOf(const std::vector<pid_t>& pids) {
  std::set<int> ports;
  std::set<std::string> namespaces_read;
  for (pid_t pid : pids) {
    std::error_code ec;
    // "net:[4026531840]": the namespace's identity. A process gone meanwhile has none: skipped.
    const std::string ns =
        std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/ns/net", ec).string();
    if (ec || !namespaces_read.insert(ns).second) continue;
    ports.merge(ListeningTcpPorts(pid));
  }
  return ports;
}

bool OpenToAnyone(const json& policy, int port) {
  const json spec = policy.value("spec", json::object());
  bool restricts_ingress = false;
  for (const json& type : spec.value("policyTypes", json::array({"Ingress"}))) {
    restricts_ingress = restricts_ingress || type == "Ingress";
  }
  if (!restricts_ingress) return true;
  for (const json& rule : spec.value("ingress", json::array())) {
    const json from = rule.value("from", json::array());
    if (from.is_array() && !from.empty()) continue;  // only the peers it names
    const json ports = rule.value("ports", json::array());
    if (!ports.is_array() || ports.empty()) return true;
    for (const json& rule_port : ports) {
      if (PortMatches(rule_port, port)) return true;
    }
  }
  return false;
}

}  // namespace lockstep::testing
