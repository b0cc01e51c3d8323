#pragma once
// Which servers of a running job a pod outside the job could reach (issue 44 item 5): the TCP
// ports the job's processes listen on, read from their network namespaces' /proc/<pid>/net/tcp
// and tcp6, against the job's NetworkPolicy as the API server holds it. The framework e2e tier
// samples every example's processes while the job runs and fails on a listener the policy opens
// to everyone. Pure but for ListeningTcpPorts.

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace lockstep::testing {

// The ports of the LISTEN sockets (state 0A) in a /proc/net/tcp or tcp6 text, loopback-bound
// ones (127.0.0.0/8, ::1, ::ffff:127.x) left out: no other pod can reach those. Lines that do
// not parse are skipped.
std::set<int> ParseListeningPorts(std::string_view proc_net_tcp);

// ParseListeningPorts of /proc/<pid>/net/tcp and tcp6: the listeners of the network namespace
// `pid` is in (its pod's). Empty when the process is gone.
std::set<int> ListeningTcpPorts(pid_t pid);

// The listeners of every network namespace one of `pids` is in, each namespace's tables read once.
// A job's processes mostly share a few namespaces, and the kernel walks its whole socket hash for
// each read of net/tcp (about 2 ms here, even when nearly empty): per process, a Ray job's 40
// processes cost 160 ms of each 500-ms poll.
std::set<int> ListeningTcpPortsOf(const std::vector<pid_t>& pids);

// Whether `policy` (a networking.k8s.io/v1 NetworkPolicy) lets a pod that none of its peers
// select (another namespace, no labels of the job) open TCP `port` on the pods it selects: some
// ingress rule without `from` (or with an empty one) whose ports include `port` (none listed:
// every port; a named port counts as a match, since it cannot be resolved here). A policy
// without Ingress in its policyTypes restricts nothing.
bool OpenToAnyone(const nlohmann::json& policy, int port);

}  // namespace lockstep::testing
