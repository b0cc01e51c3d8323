#pragma once
// In-cluster access to the API server for the agent's pods (`--apiserver-proxy`), as the kubelet
// and kube-proxy give it: every container gets the `kubernetes` Service's env
// (KUBERNETES_SERVICE_HOST=<its ClusterIP>, KUBERNETES_SERVICE_PORT=443 and the docker-link
// forms), and each pod's network namespace a route and a DNAT rule that send <ClusterIP>:<port>
// to the agent's bridge address, where ApiserverProxy forwards the TCP stream to the apiserver
// (the local one listens on 127.0.0.1 only, which no pod can reach). TLS passes
// through untouched: the pod checks the apiserver's certificate, whose SANs hold the ClusterIP,
// and authenticates with its own ServiceAccount token, so in-cluster clients work unchanged.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "operator/kube/rest_client.h"
#include "tests/e2e/agent/pod_env.h"

namespace lockstep::e2e {

struct KubernetesService {
  std::string cluster_ip;   // the `kubernetes` Service's ClusterIP
  int port = 443;           // its port
  std::string endpoint_ip;  // where the apiserver listens: the agent's own connection's
  int endpoint_port = 0;
};

// Reads the default/kubernetes Service; the endpoint is the apiserver `client` talks to.
StatusOr<KubernetesService> DiscoverKubernetesService(kube::RestClient& client);

// The env a kubelet gives every container for that Service, in the kubelet's order.
EnvList KubernetesServiceEnv(const KubernetesService& service);

// Inside the pod's network namespace `netns` (an `ip netns` name): a route to the ClusterIP and
// a DNAT of <ClusterIP>:<port> to <proxy_ip>:<port>.
Status RouteKubernetesService(const std::string& netns, const KubernetesService& service,
                              const std::string& proxy_ip);

// A TCP forwarder, one thread polling every connection. Bounded: at most kMaxConnections at
// once (more are refused), 64 KiB buffered per direction (a full buffer stops reading from the
// sender), and a connection idle in both directions for kIdleTimeout is closed (long watches
// see bookmarks and HTTP/2 pings well within it).
class ApiserverProxy {
 public:
  static constexpr int kMaxConnections = 256;
  static constexpr int kIdleTimeoutSeconds = 600;

  // Listens on listen_ip:listen_port and forwards every connection to target_ip:target_port.
  static StatusOr<std::unique_ptr<ApiserverProxy>> Start(const std::string& listen_ip,
                                                         int listen_port,
                                                         const std::string& target_ip,
                                                         int target_port);
  // Stops the thread and closes every connection.
  ~ApiserverProxy();

  ApiserverProxy(const ApiserverProxy&) = delete;
  ApiserverProxy& operator=(const ApiserverProxy&) = delete;

 private:
  struct Conn;
  ApiserverProxy(int listen_fd, int wake_read, int wake_write, std::string target_ip,
                 int target_port);
  void Loop();
  void Accept();

  const int listen_fd_;
  const int wake_read_;
  const int wake_write_;
  const std::string target_ip_;
  const int target_port_;
  std::vector<std::unique_ptr<Conn>> conns_;  // Loop thread only
  std::thread thread_;
};

}  // namespace lockstep::e2e
