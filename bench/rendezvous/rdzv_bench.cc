// Rendezvous benchmark: time for W simulated launchers (clients spread over a few processes on
// loopback, each holding many sockets) to connect, authenticate, join one round and receive the
// world with a fresh NCCL unique id from lockstep's RendezvousServer.
//
//   rdzv_bench --clients W [--procs K] [--reps R] [--nccl-library PATH] [--peer-table 1]
// Prints one line per repetition: "lockstep clients=W ms=T nccl=yes|no peer_table=yes|no
// server_cpu_ms=S clients_cpu_ms=C": wall time, and the CPU time the server process and the
// client workers spent in that window (load-independent, unlike T on a shared machine).
// --peer-table 1 makes every client ask for the full peer table, as lockstep-launcher does.
// Worker processes are forked before any thread starts and wait for a "go" on a pipe, so the
// measured time covers only connect + challenge + join + world delivery to every client.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/net.h"
#include "launcher/nccl/nccl.h"
#include "launcher/rendezvous/server.h"
#include "protocol/auth.h"
#include "protocol/frame.h"
#include "protocol/messages.h"

namespace lockstep::launcher::bench {
namespace {

using namespace rendezvous;
using namespace protocol;
using Steady = std::chrono::steady_clock;
constexpr char kToken[] = "bench-token";
constexpr char kRunId[] = "bench";
constexpr size_t kMaxConnecting = 256;  // per worker: bounded handshakes keep the backlog short
uint32_t g_total_clients = 0;                // W, for checking the peer table

// CPU time (user + system) of `who` so far, in ms.
double CpuMs(int who) {
  rusage u{};
  ::getrusage(who, &u);
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  return ms(u.ru_utime) + ms(u.ru_stime);
}

struct Client {
  UniqueFd fd;
  FrameDecoder decoder;
  uint32_t node_rank = 0;
  bool done = false;
};

// One worker: opens `count` clients with node ranks [first, first + count); returns 0 when all
// received a world (with an NCCL id when `want_nccl`).
int RunClients(uint16_t port, uint32_t first, uint32_t count, bool want_nccl, bool want_table,
               int report_fd) {
  const double cpu_at_go = CpuMs(RUSAGE_SELF);
  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  // Keyed once per worker process: stands for 2,048 launchers on separate machines, each of
  // which computes one MAC, so the worker should not pay OpenSSL's per-call HMAC setup 2,048
  // times on the cores the server needs.
  const JoinMacKey mac_key(protocol::AttemptKey(kToken, 0));  // the server's attempt 0
  std::unordered_map<int, Client> clients;
  uint32_t next = 0, done = 0, in_flight = 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Non-blocking connects: the challenge arriving is what says a connection is up.
  auto open_more = [&]() -> bool {
    while (next < count && in_flight < kMaxConnecting) {
      UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      const auto* sa = reinterpret_cast<const sockaddr*>(&addr);
      const bool started =
          fd.valid() && (::connect(fd.get(), sa, sizeof(addr)) == 0 || errno == EINPROGRESS);
      if (!started) {
        std::perror("connect");
        return false;
      }
      // No TCP_NODELAY (lockstep-launcher's client sets it for its heartbeats): a simulated
      // client's only write here is its Join, which Nagle never holds back (nothing of its own
      // is unacknowledged before it), and 8,192 setsockopt calls would take CPU from the server.
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd.get();
      ::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd.get(), &ev);
      Client& c = clients[fd.get()];
      c.node_rank = first + next++;
      c.fd = std::move(fd);
      ++in_flight;
    }
    return true;
  };
  if (!open_more()) return 1;
  std::vector<epoll_event> events(1024);
  while (done < count) {
    const int n = ::epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), 30000);
    if (n <= 0) return 2;
    for (int i = 0; i < n; ++i) {
      Client& c = clients.at(events[static_cast<size_t>(i)].data.fd);
      std::string bytes;
      StatusOr<net::ReadResult> r = net::ReadAvailable(c.fd.get(), &bytes);
      if (!r.ok() || r->eof) return 3;
      c.decoder.Append(bytes);
      for (;;) {
        auto f = c.decoder.Next();
        if (!f.ok()) return 4;
        if (!f->has_value()) break;
        const Frame& frame = **f;
        if (frame.type == static_cast<uint8_t>(MessageType::kChallenge)) {
          StatusOr<Challenge> ch = Decode<Challenge>(frame.body);
          if (!ch.ok()) return 5;
          Join j;
          j.run_id = kRunId;
          j.node_rank = c.node_rank;
          j.role = "worker";
          j.role_index = c.node_rank;
          j.host = "127.0.0.1";
          j.nproc = 1;
          j.want_peer_table = want_table;
          j.mac = mac_key.Mac(ch->nonce, kRunId, 0, c.node_rank);
          const std::string out = Encode(j);
          StatusOr<size_t> w = net::WriteSome(c.fd.get(), out);
          if (!w.ok() || *w != out.size()) return 6;
          --in_flight;
          if (!open_more()) return 1;
        } else if (frame.type == static_cast<uint8_t>(MessageType::kWorld)) {
          StatusOr<WorldMsg> world = Decode<WorldMsg>(frame.body);
          if (!world.ok() || (want_nccl && world->nccl_id.size() != kNcclIdBytes)) return 7;
          c.done = true;
          ++done;
        } else if (frame.type == static_cast<uint8_t>(MessageType::kPeerTable)) {
          StatusOr<PeerTable> table = Decode<PeerTable>(frame.body);
          if (!table.ok() || table->peers.size() != g_total_clients) return 9;
        } else if (frame.type == static_cast<uint8_t>(MessageType::kRefuse)) {
          return 8;
        }
      }
    }
  }
  // Report, then hold the sockets until the parent has stopped the clock and says so: closing a
  // member of a running round would make the server abort it.
  const double cpu_ms = CpuMs(RUSAGE_SELF) - cpu_at_go;
  (void)!::write(report_fd, &cpu_ms, sizeof(cpu_ms));
  char cmd = 0;
  (void)!::read(STDIN_FILENO, &cmd, 1);
  return 0;
}

struct Worker {
  pid_t pid;
  int to_child;    // writes "go" commands
  int from_child;  // reads results
};

int Main(int argc, char** argv) {
  uint32_t clients = 64, procs = 4, reps = 1;
  bool peer_table = false;
  bool verbose = false;
  std::string nccl_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--clients") clients = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    else if (a == "--procs") procs = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    else if (a == "--reps") reps = static_cast<uint32_t>(std::atoi(argv[i + 1]));
    else if (a == "--nccl-library") nccl_path = argv[i + 1];
    else if (a == "--peer-table") peer_table = std::string(argv[i + 1]) == "1";
    else if (a == "--verbose") verbose = std::string(argv[i + 1]) == "1";
  }
  net::RaiseFileLimit();
  // --verbose 1 keeps the server's "round complete ... gather_ms=" line: the time until the last
  // join arrived, so the rest of ms= is the world broadcast.
  log::SetMinLevel(verbose ? log::Level::kInfo : log::Level::kWarning);
  std::unique_ptr<nccl::NcclLibrary> lib;
  if (!nccl_path.empty()) {
    StatusOr<std::unique_ptr<nccl::NcclLibrary>> loaded = nccl::NcclLibrary::Load(nccl_path);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().ToString().c_str());
      return 1;
    }
    lib = std::move(*loaded);
  }
  for (uint32_t rep = 0; rep < reps; ++rep) {
    // Workers first (no thread exists yet), each blocked on its command pipe.
    std::vector<Worker> workers;
    uint16_t port_slot = 0;
    for (uint32_t p = 0; p < procs; ++p) {
      int down[2], up[2];
      (void)!::pipe(down);
      (void)!::pipe(up);
      const uint32_t first = clients * p / procs, last = clients * (p + 1) / procs;
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::dup2(down[0], STDIN_FILENO);
        uint16_t port = 0;
        if (::read(STDIN_FILENO, &port, sizeof(port)) != sizeof(port)) ::_exit(9);
        g_total_clients = clients;
        const int rc = RunClients(port, first, last - first, lib != nullptr, peer_table, up[1]);
        ::_exit(rc);
      }
      ::close(down[0]);
      ::close(up[1]);
      workers.push_back({pid, down[1], up[0]});
    }
    ServerOptions opt;
    opt.run_id = kRunId;
    opt.token = kToken;
    opt.min_nodes = opt.max_nodes = clients;
    opt.peer_timeout = std::chrono::milliseconds(30000);
    opt.heartbeat_interval = std::chrono::milliseconds(10000);
    opt.nccl_id_source = [&lib]() -> std::string {
      if (!lib) return "";
      StatusOr<std::string> id = lib->GetUniqueId();
      return id.ok() ? *id : "";
    };
    StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(opt, 0);
    if (!server.ok()) {
      std::fprintf(stderr, "%s\n", server.status().ToString().c_str());
      return 1;
    }
    (*server)->Start();
    port_slot = (*server)->port();
    const Steady::time_point start = Steady::now();
    const double server_cpu_at_go = CpuMs(RUSAGE_SELF);
    for (const Worker& w : workers) (void)!::write(w.to_child, &port_slot, sizeof(port_slot));
    // Every worker reports its CPU time once all its clients hold the world (EOF: it failed).
    double clients_cpu_ms = 0;
    for (const Worker& w : workers) {
      double cpu = 0;
      if (::read(w.from_child, &cpu, sizeof(cpu)) != sizeof(cpu)) {
        std::fprintf(stderr, "a client worker failed\n");
        for (const Worker& other : workers) ::kill(other.pid, SIGKILL);
        return 1;
      }
      clients_cpu_ms += cpu;
    }
    const double ms =
        std::chrono::duration<double, std::milli>(Steady::now() - start).count();
    // The server process is the server's loop thread plus this thread blocked in read(2).
    const double server_cpu_ms = CpuMs(RUSAGE_SELF) - server_cpu_at_go;
    // Stop the server before the clients leave: it would otherwise abort the round, one lost
    // member at a time, and log it.
    (*server)->Stop();
    for (const Worker& w : workers) {
      (void)!::write(w.to_child, "x", 1);
      ::close(w.to_child);
      ::close(w.from_child);
    }
    for (const Worker& w : workers) {
      int status = 0;
      ::waitpid(w.pid, &status, 0);
    }
    // ms= first: run.py takes the first "ms=" of the line.
    std::printf("lockstep clients=%u ms=%.1f nccl=%s peer_table=%s server_cpu_ms=%.1f "
                "clients_cpu_ms=%.1f\n",
                clients, ms, lib ? "yes" : "no", peer_table ? "yes" : "no", server_cpu_ms,
                clients_cpu_ms);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace lockstep::launcher::bench

int main(int argc, char** argv) { return lockstep::launcher::bench::Main(argc, argv); }
