#pragma once
// The part of a kubelet's HTTPS server that `kubectl logs` needs: the apiserver proxies
// pods/log to GET /containerLogs/<ns>/<pod>/<container> on the node's InternalIP and
// status.daemonEndpoints.kubeletEndpoint port, presenting its kubelet client certificate and
// checking ours against --kubelet-certificate-authority.
//
// Security, as a kubelet's: TLS 1.2+, the client must present a certificate signed by the
// cluster CA (authentication), and each request is authorized by the caller's `authorize`
// (the agent asks the apiserver with a SubjectAccessReview for nodes/proxy, as a kubelet in
// Webhook authorization mode does). Bounded: at most kMaxConnections at once (more are closed
// at accept), 10 s to send the request head of at most 8 KiB, 30 s for the client to take each
// write; a follow stream ends when the container has exited and its log is drained, or at Stop.
//
// Thread-safe: one accept thread and one thread per connection; Stop() joins them all.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "tests/e2e/agent/container_logs.h"

namespace lockstep::e2e {

// Who the verified client certificate names: CN is the user, each O a group.
struct PeerIdentity {
  std::string user;
  std::vector<std::string> groups;
};

// Where a container's log is, and whether the container may still write to it.
struct LogSource {
  std::string path;
  std::string node;               // the node the pod is bound to (what authorization names)
  std::function<bool()> running;  // false once the container has exited
};

struct KubeletServerOptions {
  std::string address;            // the node's InternalIP
  int port = 10250;               // 0: any free port
  std::string cert_pem, key_pem;  // the serving certificate (kubernetes.io/kubelet-serving)
  std::string client_ca_pem;      // the cluster CA that signs the apiserver's client certificate
  // NOT_FOUND: no such pod (404); FAILED_PRECONDITION: no such container or not started (400).
  std::function<StatusOr<LogSource>(const ContainerLogRequest&)> locate;
  // OK to serve; PERMISSION_DENIED (403) otherwise.
  std::function<Status(const PeerIdentity&, const std::string& node)> authorize;
};

class KubeletServer {
 public:
  static constexpr int kMaxConnections = 16;

  explicit KubeletServer(KubeletServerOptions options);
  ~KubeletServer();  // Stop()s
  KubeletServer(const KubeletServer&) = delete;
  KubeletServer& operator=(const KubeletServer&) = delete;

  // Loads the certificates, listens and starts accepting.
  Status Start();
  // Closes the listener and every connection, and joins their threads.
  void Stop();
  int port() const { return port_; }

 private:
  struct Tls;  // OpenSSL context (kept out of this header)

  void AcceptLoop();
  void Serve(int fd);
  bool Stopping() const { return stopping_.load(); }

  KubeletServerOptions options_;
  std::unique_ptr<Tls> tls_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread accept_thread_;
  void JoinFinished();

  std::mutex mu_;
  std::set<int> open_fds_;                   // guarded by mu_
  std::map<uint64_t, std::thread> threads_;  // by connection serial; guarded by mu_
  std::vector<uint64_t> finished_;           // serials whose thread has returned; guarded by mu_
  uint64_t next_serial_ = 0;                 // guarded by mu_
};

}  // namespace lockstep::e2e
