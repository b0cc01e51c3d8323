#include "tests/e2e/agent/kubernetes_service.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "tests/e2e/agent/host_command.h"
#include "tests/e2e/agent/pod_json.h"

namespace lockstep::e2e {

using nlohmann::json;

namespace {

constexpr size_t kBufferBytes = 64 * 1024;

StatusOr<sockaddr_in> Address(const std::string& ip, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("not an IPv4 address: " + ip);
  }
  return addr;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

StatusOr<KubernetesService> DiscoverKubernetesService(kube::RestClient& client) {
  LS_ASSIGN_OR_RETURN(json svc, client.Get(kube::resources::Services(), "default", "kubernetes"));
  KubernetesService out;
  out.cluster_ip = Str(svc, "/spec/clusterIP");
  const json ports = Array(svc.value("spec", json::object()), "ports");
  if (out.cluster_ip.empty() || ports.empty() || !ports[0].value("port", json()).is_number()) {
    return FailedPreconditionError("the kubernetes Service has no ClusterIP or port");
  }
  out.port = ports[0]["port"].get<int>();
  // Not the Service's Endpoints: an apiserver advertising 127.0.0.1 (the local control plane)
  // publishes none, since Endpoints refuse loopback addresses. The agent's own connection names
  // the same apiserver.
  const std::string host = client.transport().Host();
  const size_t colon = host.rfind(':');
  if (colon == std::string::npos) return FailedPreconditionError("apiserver address " + host);
  out.endpoint_ip = host.substr(0, colon);
  out.endpoint_port = std::atoi(host.c_str() + colon + 1);
  if (in_addr a{}; inet_pton(AF_INET, out.endpoint_ip.c_str(), &a) != 1 || out.endpoint_port <= 0) {
    return FailedPreconditionError(
        "--apiserver-proxy needs the kubeconfig's server as an IPv4 "
        "address and port, got " +
        host);
  }
  return out;
}

EnvList KubernetesServiceEnv(const KubernetesService& s) {
  const std::string port = std::to_string(s.port);
  const std::string url = "tcp://" + s.cluster_ip + ":" + port;
  const std::string prefix = "KUBERNETES_PORT_" + port + "_TCP";
  return {{"KUBERNETES_SERVICE_HOST", s.cluster_ip},
          {"KUBERNETES_SERVICE_PORT", port},
          {"KUBERNETES_SERVICE_PORT_HTTPS", port},
          {"KUBERNETES_PORT", url},
          {prefix, url},
          {prefix + "_PROTO", "tcp"},
          {prefix + "_PORT", port},
          {prefix + "_ADDR", s.cluster_ip}};
}

Status RouteKubernetesService(const std::string& netns, const KubernetesService& s,
                              const std::string& proxy_ip) {
  const std::string port = std::to_string(s.port);
  // The route only makes the ClusterIP routable for connect(); the DNAT in the namespace's
  // OUTPUT chain then sends the packets to the bridge address, where the proxy listens.
  LS_RETURN_IF_ERROR(
      RunHostCommand({"ip", "-n", netns, "route", "add", s.cluster_ip + "/32", "dev", "eth0"})
          .status());
  return RunHostCommand({"ip",
                         "netns",
                         "exec",
                         netns,
                         "iptables",
                         "-w",
                         "-t",
                         "nat",
                         "-A",
                         "OUTPUT",
                         "-d",
                         s.cluster_ip + "/32",
                         "-p",
                         "tcp",
                         "--dport",
                         port,
                         "-j",
                         "DNAT",
                         "--to-destination",
                         proxy_ip + ":" + port})
      .status();
}

// One forwarded connection: side 0 is the pod's, side 1 the apiserver's.
struct ApiserverProxy::Conn {
  int fd[2] = {-1, -1};
  std::string pending[2];         // read from fd[i], to be written to fd[1 - i]
  bool eof[2] = {false, false};   // fd[i] will send nothing more
  bool shut[2] = {false, false};  // fd[i]'s write side is shut down
  bool hup[2] = {false, false};   // fd[i]'s peer is gone both ways (poll would keep saying so)
  bool failed = false;
  std::chrono::steady_clock::time_point last_io = std::chrono::steady_clock::now();

  ~Conn() {
    for (int f : fd) {
      if (f >= 0) close(f);
    }
  }
  // Nothing more can pass: both sides finished, or one is gone and what it sent is delivered.
  bool Done() const {
    return failed || (eof[0] && eof[1] && pending[0].empty() && pending[1].empty()) ||
           (hup[0] && pending[0].empty()) || (hup[1] && pending[1].empty());
  }
  void Read(int side) {
    char buf[16 * 1024];
    const size_t room = kBufferBytes - pending[side].size();
    if (room == 0) return;  // a hang-up with a full buffer: read once the buffer drains
    const ssize_t n = read(fd[side], buf, std::min(room, sizeof(buf)));
    if (n > 0) {
      pending[side].append(buf, static_cast<size_t>(n));
      last_io = std::chrono::steady_clock::now();
    } else if (n == 0) {
      eof[side] = true;
    } else if (errno != EAGAIN && errno != EINTR) {
      failed = true;
    }
  }
  void Write(int side) {  // writes what the other side sent
    std::string& out = pending[1 - side];
    const ssize_t n = write(fd[side], out.data(), out.size());
    if (n > 0) {
      out.erase(0, static_cast<size_t>(n));
      last_io = std::chrono::steady_clock::now();
    } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
      failed = true;
    }
  }
  // Passes a half-close on once everything before it was delivered.
  void ForwardEof() {
    for (int side = 0; side < 2; ++side) {
      if (eof[side] && pending[side].empty() && !shut[1 - side]) {
        shutdown(fd[1 - side], SHUT_WR);
        shut[1 - side] = true;
      }
    }
  }
};

StatusOr<std::unique_ptr<ApiserverProxy>> ApiserverProxy::Start(const std::string& listen_ip,
                                                                int listen_port,
                                                                const std::string& target_ip,
                                                                int target_port) {
  LS_ASSIGN_OR_RETURN(sockaddr_in addr, Address(listen_ip, listen_port));
  LS_RETURN_IF_ERROR(Address(target_ip, target_port).status());
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return InternalError("socket: " + std::string(strerror(errno)));
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    const int err = errno;
    close(fd);
    return UnavailableError("listen on " + listen_ip + ":" + std::to_string(listen_port) + ": " +
                            strerror(err));
  }
  int wake[2];
  if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    close(fd);
    return InternalError("pipe: " + std::string(strerror(errno)));
  }
  return std::unique_ptr<ApiserverProxy>(
      new ApiserverProxy(fd, wake[0], wake[1], target_ip, target_port));
}

ApiserverProxy::ApiserverProxy(int listen_fd, int wake_read, int wake_write, std::string target_ip,
                               int target_port)
    : listen_fd_(listen_fd),
      wake_read_(wake_read),
      wake_write_(wake_write),
      target_ip_(std::move(target_ip)),
      target_port_(target_port) {
  thread_ = std::thread([this] { Loop(); });
}

ApiserverProxy::~ApiserverProxy() {
  const char stop = 'x';
  ssize_t ignored = write(wake_write_, &stop, 1);
  (void)ignored;
  if (thread_.joinable()) thread_.join();
  conns_.clear();
  close(listen_fd_);
  close(wake_read_);
  close(wake_write_);
}

void ApiserverProxy::Accept() {
  while (true) {
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (client < 0) return;
    if (conns_.size() >= kMaxConnections) {
      log::Warning("apiserver proxy: connection refused, too many open",
                   {{"limit", std::to_string(kMaxConnections)}});
      close(client);
      continue;
    }
    auto conn = std::make_unique<Conn>();
    conn->fd[0] = client;
    // The apiserver is local: a blocking connect returns at once.
    const sockaddr_in target = Address(target_ip_, target_port_).value();
    conn->fd[1] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (conn->fd[1] < 0 ||
        connect(conn->fd[1], reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0) {
      log::Warning("apiserver proxy: cannot reach the apiserver",
                   {{"target", target_ip_ + ":" + std::to_string(target_port_)},
                    {"error", strerror(errno)}});
      continue;  // the Conn's destructor closes both
    }
    SetNonBlocking(conn->fd[1]);
    conns_.push_back(std::move(conn));
  }
}

void ApiserverProxy::Loop() {
  const auto idle_limit = std::chrono::seconds(kIdleTimeoutSeconds);
  while (true) {
    std::vector<pollfd> fds = {{wake_read_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    for (const auto& c : conns_) {
      for (int side = 0; side < 2; ++side) {
        if (c->hup[side]) {
          fds.push_back({-1, 0, 0});  // ignored by poll
          continue;
        }
        short events = 0;
        if (!c->eof[side] && c->pending[side].size() < kBufferBytes) events |= POLLIN;
        if (!c->pending[1 - side].empty()) events |= POLLOUT;
        // Nothing wanted from this side now (its buffer is full, nothing to write to it): not
        // polled at all, or a hang-up it reports would spin the loop.
        fds.push_back({events != 0 ? c->fd[side] : -1, events, 0});
      }
    }
    if (poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR) {
      log::Error("apiserver proxy stopped", {{"error", strerror(errno)}});
      return;
    }
    if (fds[0].revents != 0) return;  // stop requested
    for (size_t i = 0; i < conns_.size(); ++i) {
      Conn& c = *conns_[i];
      for (int side = 0; side < 2; ++side) {
        const short revents = fds[2 + 2 * i + static_cast<size_t>(side)].revents;
        if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0 && !c.eof[side]) c.Read(side);
        if ((revents & POLLOUT) != 0 && !c.failed) c.Write(side);
        if ((revents & POLLHUP) != 0 && c.eof[side]) c.hup[side] = true;
      }
      c.ForwardEof();
    }
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(conns_, [&](const std::unique_ptr<Conn>& c) {
      return c->Done() || now - c->last_io > idle_limit;
    });
    if (fds[1].revents != 0) Accept();
  }
}

}  // namespace lockstep::e2e
