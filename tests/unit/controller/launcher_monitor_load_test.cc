// No head-of-line blocking in the LauncherMonitor (operator/controller/launcher_monitor.h, issue
// 44 item 2): N silent worker-0s beside a healthy job, all on loopback, through the real
// RdzvLauncherControl (the protocol, its 1 s deadline). Silent ones are a listener that accepts
// and never answers (the kernel completes the handshake; nothing sends the Challenge) and a
// listener whose accept queue is full (connects hang, as to a node that died). The healthy job is
// a real rendezvous server (launcher/rendezvous/server.h) with two members and a standby spare.
// The healthy job's Status answer, Restart answer and probe, and its spare promotion seen
// through the watch cadence, must each land within their bounds while the silent jobs are polled
// on the same cadence. With one thread carrying every request (before issue 44) each of them
// waited about N seconds.
//
// LOCKSTEP_SILENT_JOBS (default 80, more than the monitor has workers) sets N, for measuring; the
// printed "latency" lines are the figures (docs/testing.md).
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "common/unique_fd.h"
#include "launcher/rendezvous/client.h"
#include "launcher/rendezvous/server.h"
#include "operator/controller/launcher_monitor.h"
#include "tests/testing/fake_transport.h"

namespace lockstep::controller {
namespace {

using launcher::rendezvous::ClientOptions;
using launcher::rendezvous::JoinResult;
using launcher::rendezvous::JoinRound;
using launcher::rendezvous::RendezvousServer;
using launcher::rendezvous::ServerOptions;
using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kToken[] = "secret-token";  // the Secret's "c2VjcmV0LXRva2Vu"
constexpr char kHealthyUid[] = "uid-healthy";

// The control's deadline (RdzvLauncherControl's default) and the bounds the healthy job must
// meet: one deadline for a request (a silent job's worker it never waits for), and for the
// promotion the watch interval plus that.
constexpr milliseconds kDeadline{1000};
constexpr milliseconds kRequestBound{1000};
constexpr milliseconds kPromotionBound = kWatchInterval + kDeadline + milliseconds(1000);
// How long a wait may run before the test gives up: long enough to measure the single-threaded
// monitor's N-second waits.
constexpr seconds kGiveUp{120};

size_t SilentJobs() {
  const char* n = std::getenv("LOCKSTEP_SILENT_JOBS");
  return n != nullptr ? std::strtoul(n, nullptr, 10) : 80;
}

// A loopback listener on an ephemeral port that never accepts. `backlog` 0 and one connection
// held: the accept queue is full, so the kernel drops further SYNs and connects hang.
class Listener {
 public:
  explicit Listener(int backlog) {
    fd_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_.get(), backlog), 0);
    socklen_t len = sizeof(addr);
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    if (backlog == 0) {  // fill the queue
      filler_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      EXPECT_EQ(::connect(filler_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    }
  }
  uint16_t port() const { return port_; }

 private:
  UniqueFd fd_, filler_;
  uint16_t port_ = 0;
};

// The real control, on the loopback port of the job's server: the monitor asks every job at
// its pod IP (127.0.0.1 here) and the rendezvous port; each job's server has a port of its own.
class LoopbackControl final : public LauncherControl {
 public:
  void Route(const std::string& run_id, uint16_t port) {
    std::lock_guard<std::mutex> lock(mu_);
    ports_[run_id] = port;
  }
  StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget& target) override {
    return real_.GetStatus(Routed(target));
  }
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget& target,
                                         const std::string& reason) override {
    return real_.Restart(Routed(target), reason);
  }
  // Probes go to the host's port routed under the host's name.
  ProbeAnswer Probe(const std::string& host, uint16_t) override {
    return real_.Probe("127.0.0.1", Port(host));
  }

 private:
  uint16_t Port(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return ports_.at(key);
  }
  protocol::ControlTarget Routed(protocol::ControlTarget t) {
    t.port = Port(t.run_id);
    return t;
  }
  RdzvLauncherControl real_{kDeadline};
  std::mutex mu_;
  std::map<std::string, uint16_t> ports_;
};

LauncherJob Job(const std::string& name, const std::string& uid) {
  return {"ns/" + name, "ns", name, uid, "pod-" + uid, "127.0.0.1", 0};
}

ClientOptions Member(uint16_t port, uint32_t node_rank) {
  ClientOptions c;
  c.endpoint = {"127.0.0.1", port};
  c.run_id = kHealthyUid;
  c.token = kToken;
  c.node_rank = node_rank;
  c.host = "127.0.0.1";
  c.pod_name = "healthy-worker-" + std::to_string(node_rank);
  c.heartbeat_interval = milliseconds(100);
  c.peer_timeout = seconds(5);
  c.deadline = Steady::now() + seconds(20);
  return c;
}

class LauncherMonitorLoadTest : public ::lockstep::testing::FakeKubeTest {
 protected:
  void SetUp() override {
    transport_->SetHandler([](const kube::Request& r) -> StatusOr<kube::Response> {
      if (r.method == "GET" && r.path.find("/secrets/") != std::string::npos) {
        return Json(200, {{"data", {{"token", "c2VjcmV0LXRva2Vu"}}}});
      }
      return ApiStatus(404, "NotFound");
    });
    ServerOptions opt;
    opt.run_id = kHealthyUid;
    opt.token = kToken;
    opt.min_nodes = opt.max_nodes = 2;
    opt.peer_timeout = seconds(5);
    opt.heartbeat_interval = milliseconds(100);
    StatusOr<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Listen(opt, 0);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    server_->Start();
    control_->Route(kHealthyUid, server_->port());
    control_->Route("reachable-pod", server_->port());
    monitor_.SetWatchInterval(kWatchInterval);
    monitor_.Start();
  }
  void TearDown() override { monitor_.Stop(); }

  // `n` silent jobs: two in three accept and never answer, the others' connects hang. Each is
  // polled once, so the monitor watches it; unless `cold`, waits until each has missed its first
  // deadline.
  void AddSilentJobs(size_t n, bool cold = false) {
    const size_t first = silent_jobs_.size();
    for (size_t i = first; i < first + n; ++i) {
      const std::string uid = "uid-silent-" + std::to_string(i);
      control_->Route(uid, i % 3 == 2 ? hanging_.port() : silent_.port());
      silent_jobs_.push_back(Job("silent-" + std::to_string(i), uid));
      monitor_.Poll(silent_jobs_.back());
    }
    if (cold) return;
    for (const LauncherJob& j : silent_jobs_) {
      ASSERT_TRUE(WaitFor([&] {
                    std::optional<LauncherObservation> o = monitor_.Latest(j.key, j.pod_uid);
                    return o && !o->error.empty();
                  }) < kGiveUp)
          << j.key << " was never asked";
    }
  }

  // How long until `done` holds (checked every millisecond), at most kGiveUp.
  template <typename F>
  static milliseconds WaitFor(F done) {
    const Steady::time_point start = Steady::now();
    while (!done() && Steady::now() - start < kGiveUp) std::this_thread::sleep_for(milliseconds(1));
    return std::chrono::duration_cast<milliseconds>(Steady::now() - start);
  }

  struct Latencies {
    milliseconds status, restart, probe;
  };
  // The healthy job's Status answer, Restart answer and probe, each asked alone.
  Latencies AskHealthy(const std::string& round) {
    const LauncherJob h = Job("healthy", kHealthyUid);
    Latencies l;
    monitor_.Forget(h.key);  // what it answered before does not count
    monitor_.Poll(h);
    l.status = WaitFor([&] {
      std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
      return o && o->answered;
    });
    monitor_.Restart(h, "restart-" + round, "restart requested (test)");
    l.restart = WaitFor([&] {
      std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
      return o && o->restart && (o->restart->answered || !o->restart->error.empty());
    });
    monitor_.Probe(h, "healthy-worker-1", "reachable-pod", 1);
    l.probe = WaitFor([&] {
      std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
      return o && o->probes.count("healthy-worker-1") == 1;
    });
    std::cout << "latency with " << silent_jobs_.size() << " silent jobs: status "
              << l.status.count() << " ms, restart " << l.restart.count() << " ms, probe "
              << l.probe.count() << " ms\n";
    return l;
  }

  // Declared before the monitor, whose workers call it until it stops.
  std::unique_ptr<RendezvousServer> server_;
  Listener silent_{SOMAXCONN};
  Listener hanging_{0};
  std::vector<LauncherJob> silent_jobs_;
  LoopbackControl* control_ = new LoopbackControl;  // owned by monitor_
  LauncherMonitor monitor_{client_, std::unique_ptr<LauncherControl>(control_)};
};

TEST_F(LauncherMonitorLoadTest, AHealthyJobIsAnsweredInItsBoundsBesideSilentJobs) {
  const Latencies alone = AskHealthy("alone");
  EXPECT_LT(alone.status, kRequestBound);
  EXPECT_LT(alone.restart, kRequestBound);
  EXPECT_LT(alone.probe, kRequestBound);
  AddSilentJobs(SilentJobs());
  const Latencies beside = AskHealthy("beside");
  EXPECT_LT(beside.status, kRequestBound);
  EXPECT_LT(beside.restart, kRequestBound);
  EXPECT_LT(beside.probe, kRequestBound);
  // Half as many again, asked for the first time just before the healthy job (a node that just
  // died under jobs that answered until now): their first requests are in the responsive lane
  // and take its workers for one deadline (launcher_monitor.h "kLauncherWorkers"), then move
  // aside.
  AddSilentJobs(SilentJobs() / 2, /*cold=*/true);
  const Latencies cold = AskHealthy("cold");
  EXPECT_LT(cold.status, 2 * kDeadline + kRequestBound);
  EXPECT_LT(cold.restart, kRequestBound);
  EXPECT_LT(cold.probe, kRequestBound);
}

// The spare promotion bound: node 1 of the healthy job is lost, its standby spare is promoted,
// and the monitor's watch (no poll from the plan) brings the promotion to Latest() within the
// watch interval and a deadline, while the silent jobs are watched on the same cadence. The
// plan waits kSparePromotionWait (30 s) for this answer before it restarts the gang instead.
TEST_F(LauncherMonitorLoadTest, ASparePromotionReachesTheOperatorWithinItsBoundBesideSilentJobs) {
  int interrupt[2];
  ASSERT_EQ(::pipe2(interrupt, O_CLOEXEC), 0);
  UniqueFd interrupt_read(interrupt[0]), interrupt_write(interrupt[1]);
  ClientOptions spare = Member(server_->port(), 0);
  spare.spare_index = 0;
  spare.standby = true;
  spare.pod_name = "healthy-spare-0";
  spare.interrupt_fd = interrupt_read.get();
  std::thread standby([&] { (void)JoinRound(spare); });  // ends when interrupted
  std::vector<StatusOr<JoinResult>> members;
  for (uint32_t r = 0; r < 2; ++r) members.emplace_back(UnavailableError("not run"));
  {
    std::vector<std::thread> joins;
    for (uint32_t r = 0; r < 2; ++r) {
      joins.emplace_back([&, r] { members[r] = JoinRound(Member(server_->port(), r)); });
    }
    for (std::thread& t : joins) t.join();
  }
  // The members' launchers heartbeat while the round runs (the server's peer timeout is 5 s).
  std::mutex beats_mu;
  bool stop_beats = false;
  std::thread beats([&] {
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(beats_mu);
        if (stop_beats) return;
        for (auto& m : members) {
          if (m.ok() && m->session) (void)m->session->SendHeartbeat();
        }
      }
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  auto stop_threads = [&] {
    (void)!::write(interrupt_write.get(), "x", 1);
    standby.join();
    {
      std::lock_guard<std::mutex> lock(beats_mu);
      stop_beats = true;
    }
    beats.join();
  };
  for (const auto& m : members) {
    if (!m.ok()) stop_threads();
    ASSERT_TRUE(m.ok()) << m.status();
  }
  const LauncherJob h = Job("healthy", kHealthyUid);
  monitor_.Poll(h);
  // The round runs with the spare standing by (the watch polls it too).
  EXPECT_LT(WaitFor([&] {
              std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
              return o && o->answered && o->status.standby_spares == 1;
            }),
            seconds(10));
  // From here only the watch asks (the plan's polls of the job are what started it).
  AddSilentJobs(SilentJobs());

  std::optional<LauncherObservation> before = monitor_.Latest(h.key, h.pod_uid);
  ASSERT_TRUE(before.has_value());
  ASSERT_EQ(before->status.promotions, 0u) << "a member was lost before the test lost one";
  const Steady::time_point lost = Steady::now();
  {
    std::lock_guard<std::mutex> lock(beats_mu);
    members[1]->session.reset();  // node 1's launcher is gone: the spare takes its node-rank
  }
  const milliseconds seen = WaitFor([&] {
    std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
    return o && o->answered && o->status.promotions >= 1;
  });
  std::cout << "latency with " << silent_jobs_.size() << " silent jobs: spare promotion "
            << seen.count() << " ms after the loss ("
            << std::chrono::duration_cast<milliseconds>(Steady::now() - lost).count() << " ms)\n";
  stop_threads();
  EXPECT_LT(seen, kPromotionBound);
  std::optional<LauncherObservation> o = monitor_.Latest(h.key, h.pod_uid);
  ASSERT_TRUE(o.has_value());
  ASSERT_EQ(o->status.serving.size(), 1u);
  EXPECT_EQ(o->status.serving[0].node_rank, 1u);
}

}  // namespace
}  // namespace lockstep::controller
