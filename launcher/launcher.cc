#include "launcher/launcher.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>

#include "common/log.h"
#include "launcher/child_plan.h"
#include "launcher/contract.h"
#include "launcher/world_builder.h"

namespace lockstep::launcher {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

int MsUntil(Steady::time_point t, Steady::time_point now) {
  auto ms = std::chrono::duration_cast<milliseconds>(t - now).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 100));
}

std::string DescribeFailure(const supervisor::ChildFailure& f) {
  if (f.signal != 0) {
    return "rank " + std::to_string(f.rank) + " killed by signal " + std::to_string(f.signal);
  }
  return "rank " + std::to_string(f.rank) + " exited with code " + std::to_string(f.exit_code);
}

// A TensorFlow chief beside parameter servers: the ps and worker tasks serve until stopped, so the
// chief's success is the job's (TF's own contract; the operator judges the job by it too).
bool SuccessEndsJob(const LauncherConfig& config, const World& world) {
  if (config.framework != "tensorflow" || config.role != "chief") return false;
  return std::any_of(world.peers.begin(), world.peers.end(),
                     [](const PeerInfo& p) { return p.role == "ps"; });
}

}  // namespace

Launcher::Launcher(LauncherConfig config, std::vector<std::string> base_env)
    : config_(std::move(config)), base_env_(std::move(base_env)), attempt_(config_.attempt) {
  if (config_.advertise_addr.empty()) config_.advertise_addr = sys::HostName();
}

Status Launcher::Setup() {
  LS_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::Create());
  signals_.emplace(std::move(signals));
  if (!config_.has_token) {
    log::Warning("no rendezvous token (--token-file or LOCKSTEP_TOKEN): joins are not "
                 "authenticated by a secret");
  }
  if (config_.node_rank != 0) return Status::Ok();
  StatusOr<std::unique_ptr<nccl::NcclLibrary>> lib = nccl::NcclLibrary::Load(config_.nccl_library);
  if (lib.ok()) {
    nccl_ = std::move(*lib);
    log::Info("NCCL loaded", {{"version", nccl_->VersionString()}});
  } else {
    log::Info("NCCL not loadable; children get no LOCKSTEP_NCCL_UNIQUE_ID",
              {{"detail", lib.status().message()}});
  }
  rendezvous::ServerOptions opt;
  opt.run_id = config_.rdzv_id;
  opt.token = config_.token;
  opt.attempt = config_.attempt;
  opt.min_nodes = config_.min_nodes;
  opt.max_nodes = config_.max_nodes;
  opt.last_call = config_.last_call;
  opt.peer_timeout = config_.peer_timeout;
  opt.heartbeat_interval = config_.heartbeat_interval;
  opt.max_restarts = config_.max_restarts;
  opt.nccl_id_source = [lib = nccl_.get()]() -> std::string {
    if (lib == nullptr) return "";
    StatusOr<std::string> id = lib->GetUniqueId();
    if (!id.ok()) {
      log::Warning("ncclGetUniqueId failed; this round has no NCCL id",
                   {{"error", id.status().message()}});
      return "";
    }
    return *id;
  };
  LS_ASSIGN_OR_RETURN(server_,
                      rendezvous::RendezvousServer::Listen(opt, config_.rdzv_endpoint.port));
  server_->Start();
  log::Info("rendezvous server listening", {{"port", std::to_string(server_->port())}});
  return Status::Ok();
}

StatusOr<rendezvous::JoinResult> Launcher::Join(uint32_t attempt) {
  rendezvous::ClientOptions opt;
  opt.endpoint = config_.rdzv_endpoint;
  opt.run_id = config_.rdzv_id;
  opt.token = config_.token;
  opt.attempt = attempt;
  opt.node_rank = config_.node_rank;
  opt.role = config_.role;
  opt.role_index = config_.role_index;
  opt.host = config_.advertise_addr;
  opt.port = config_.framework_port;
  opt.nproc = config_.nproc_per_node;
  // Only frameworks that use every pod (TF_CONFIG, Horovod cross ranks) get the table: it is
  // O(W) bytes per launcher and O(W^2) for the server, too slow for thousands of pods.
  opt.want_peer_table = NeedsPeerTable(config_.framework);
  opt.heartbeat_interval = config_.heartbeat_interval;
  opt.peer_timeout = config_.peer_timeout;
  opt.deadline = Steady::now() + config_.join_timeout;
  opt.interrupt_fd = signals_->fd();
  return rendezvous::JoinRound(opt);
}

int Launcher::Run() {
  Status setup = Setup();
  if (!setup.ok()) {
    supervisor::TerminationReport report;
    report.reason = "launcher";
    report.attempt = static_cast<int>(attempt_);
    report.node_rank = static_cast<int>(config_.node_rank);
    report.message = setup.ToString();
    return Finish(report, contract::kExitInternal);
  }
  for (;;) {
    const Steady::time_point join_start = Steady::now();
    StatusOr<rendezvous::JoinResult> joined = Join(attempt_);
    if (!joined.ok()) {
      if (IsAborted(joined.status())) {
        ++attempt_;
        continue;
      }
      return JoinFailed(joined.status(), attempt_);
    }
    const World world = BuildWorld(config_, joined->world, joined->peers,
                                   restart_count_ + requested_restarts_);
    log::Info("world formed",
              {{"attempt", std::to_string(world.attempt)},
               {"node_rank", std::to_string(world.node_rank)},
               {"nnodes", std::to_string(world.nnodes)},
               {"world_size", std::to_string(world.world_size)},
               {"first_rank", std::to_string(world.self().first_rank)},
               {"nccl_id", world.nccl_unique_id_hex.empty() ? "none" : "set"},
               {"peer_table", world.peers_complete ? "yes" : "no"},
               {"join_ms", std::to_string(std::chrono::duration_cast<milliseconds>(
                                              Steady::now() - join_start).count())}});
    const bool can_restart = static_cast<uint32_t>(restart_count_) < config_.max_restarts;
    AttemptEnd end = RunAttempt(world, *joined->session, can_restart);
    supervisor::TerminationReport report;
    report.attempt = world.attempt;
    report.restart_count = restart_count_;
    report.requested_restarts = requested_restarts_;
    report.node_rank = world.node_rank;
    report.message = end.message;
    report.stderr_tail = end.tail;
    if (end.failure) {
      report.rank = end.failure->rank;
      report.exit_code = end.failure->exit_code;
      report.signal = end.failure->signal;
    }
    switch (end.kind) {
      case EndKind::kSuccess:
        joined->session->SendDone(SuccessEndsJob(config_, world)).IgnoreError();
        if (server_) WaitForPeersToFinish();
        log::Info("all local processes succeeded");
        // The restart counts reach the operator after the server is gone (docs/failures.md).
        report.reason = "succeeded";
        return Finish(report, 0);
      case EndKind::kChildFailed:
      case EndKind::kHang:
      case EndKind::kAborted:
        if (end.abort && end.abort->restartable &&
            end.abort->reason == rendezvous::kAbortRequested) {
          // The operator asked (control.h): rejoin without charging the budget, even when none
          // is left, since no rank failed.
          ++requested_restarts_;
          attempt_ = end.abort->attempt + 1;
          log::Warning("restarting in place on request",
                       {{"attempt", std::to_string(attempt_)},
                        {"requested_restarts", std::to_string(requested_restarts_)},
                        {"cause", end.abort->message}});
          continue;
        }
        if (can_restart && end.abort && end.abort->restartable) {
          ++restart_count_;
          attempt_ = end.abort->attempt + 1;
          log::Warning("restarting in place",
                       {{"attempt", std::to_string(attempt_)},
                        {"restart_count", std::to_string(restart_count_)},
                        {"cause", end.message}});
          continue;
        }
        if (end.kind == EndKind::kAborted && end.abort->reason == rendezvous::kAbortFinished) {
          // The chief's success ended the job; this node's servers were stopped on purpose.
          joined->session->SendDone().IgnoreError();
          log::Info("the job finished on another node; local processes stopped",
                    {{"cause", end.message}});
          report.reason = "finished";
          report.rank = -1;
          report.exit_code = 0;
          report.signal = 0;
          report.stderr_tail.clear();
          return Finish(report, 0);
        }
        if (end.kind == EndKind::kAborted) {
          // Another node's failure: say so, so the operator does not blame this pod's ranks.
          report.reason = end.abort->reason == "peer-lost" ? "peer-lost" : "peer-failed";
          report.message = "node " + std::to_string(end.abort->node_rank) + ": " + end.message;
          return Finish(report, contract::kExitPeerLost);
        }
        report.reason = end.kind == EndKind::kHang                          ? "hang"
                        : end.failure && end.failure->signal != 0 ? "signal"
                                                                  : "exit";
        return Finish(report, end.kind == EndKind::kHang ? contract::kExitHang : end.exit_code);
      case EndKind::kServerLost:
        report.reason = "peer-lost";
        return Finish(report, contract::kExitPeerLost);
      case EndKind::kSignal:
        report.reason = "terminated";
        report.signal = end.signal;
        return Finish(report, end.exit_code);
      case EndKind::kInternal:
        report.reason = "launcher";
        return Finish(report, contract::kExitInternal);
    }
  }
}

int Launcher::JoinFailed(const Status& status, uint32_t attempt) {
  supervisor::TerminationReport report;
  report.attempt = static_cast<int>(attempt);
  report.restart_count = restart_count_;
  report.requested_restarts = requested_restarts_;
  report.node_rank = static_cast<int>(config_.node_rank);
  report.message = status.message();
  int code = contract::kExitInternal;
  if (status.code() == StatusCode::kPermissionDenied) {
    report.reason = "refused";
    code = contract::kExitRefused;
    report.message = "rendezvous refused this launcher: " + status.message();
  } else if (IsDeadlineExceeded(status)) {
    report.reason = "timeout";
    code = contract::kExitJoinTimeout;
  } else if (status.code() == StatusCode::kCancelled) {
    report.reason = "terminated";
    code = 128 + SIGTERM;
  } else {
    report.reason = "rendezvous";
  }
  return Finish(report, code);
}

Launcher::AttemptEnd Launcher::RunAttempt(const World& world, rendezvous::Session& session,
                                          bool can_restart) {
  AttemptEnd end;
  StatusOr<LocalPlan> plan = PlanLocalChildren(config_, world, base_env_);
  Status started = plan.ok() ? StartServices(world, *plan) : plan.status();
  supervisor::Supervisor sup;
  if (started.ok()) started = sup.Start(std::move(plan->children));
  if (!started.ok()) {
    end.kind = EndKind::kInternal;
    end.message = started.ToString();
    session.SendFailure({static_cast<uint32_t>(world.attempt), -1, 0, 0, "launcher",
                         end.message, {}}).IgnoreError();
    return end;
  }
  // Tells the server (and through it the operator) that this node's part of the round runs. A
  // failed send means a lost server, which the heartbeats below notice.
  session.SendStarted().IgnoreError();
  bool session_alive = true;
  bool decided = false;
  Steady::time_point next_beat = Steady::now() + config_.heartbeat_interval;
  std::optional<Steady::time_point> abort_wait_until;
  auto stop_children = [&](int sig) { sup.Stop(config_.grace_period, sig); };
  auto report_failure = [&](const std::string& reason, int rank, int code, int sig) {
    if (!session_alive) return;
    Status s = session.SendFailure(
        {static_cast<uint32_t>(world.attempt), rank, code, sig, reason, end.message, end.tail});
    if (!s.ok()) session_alive = false;
    abort_wait_until = Steady::now() + config_.peer_timeout;
  };
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({signals_->fd(), POLLIN, 0});
    if (session_alive) fds.push_back({session.fd(), POLLIN, 0});
    for (int fd : sup.OutputFds()) fds.push_back({fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), MsUntil(next_beat, Steady::now()));
    const Steady::time_point now = Steady::now();

    for (int sig : signals_->Drain()) {
      if (sig == SIGCHLD) continue;  // reaped by Poll below
      log::Info("signal received; stopping children", {{"signal", std::to_string(sig)}});
      if (!decided) {
        decided = true;
        end.kind = EndKind::kSignal;
        end.signal = sig;
        end.message = "launcher received signal " + std::to_string(sig);
      }
      stop_children(sig);
    }
    for (const pollfd& p : fds) {
      if (p.fd != signals_->fd() && (!session_alive || p.fd != session.fd()) && p.revents != 0) {
        sup.OnOutput(p.fd, now);
      }
    }
    if (session_alive && fds.size() > 1 && fds[1].fd == session.fd() && fds[1].revents != 0) {
      for (const rendezvous::ServerEvent& ev : session.OnReadable()) {
        if (ev.kind == rendezvous::ServerEvent::Kind::kAbort &&
            ev.abort.attempt == static_cast<uint32_t>(world.attempt) && !end.abort) {
          end.abort = ev.abort;
          if (!decided) {
            decided = true;
            end.kind = EndKind::kAborted;
            end.message = ev.abort.message;
          }
          stop_children(SIGTERM);
        } else if (ev.kind == rendezvous::ServerEvent::Kind::kClosed) {
          session_alive = false;
          if (!decided) {
            decided = true;
            end.kind = EndKind::kServerLost;
            end.message = "lost the rendezvous server (node 0): " + ev.detail;
          }
          stop_children(SIGTERM);
        }
      }
    }
    if (session_alive && now >= next_beat) {
      next_beat = now + config_.heartbeat_interval;
      if (!session.SendHeartbeat().ok() || now - session.last_heard() > config_.peer_timeout) {
        session_alive = false;
        if (!decided) {
          decided = true;
          end.kind = EndKind::kServerLost;
          end.message = "rendezvous server (node 0) silent for longer than the peer timeout";
        }
        stop_children(SIGTERM);
      }
    }
    sup.Poll(now);
    if (!decided && sup.first_failure()) {
      decided = true;
      end.kind = EndKind::kChildFailed;
      end.failure = sup.first_failure();
      end.exit_code = end.failure->exit_code;
      end.tail = end.failure->stderr_tail;
      end.message = DescribeFailure(*end.failure);
      log::Warning("local process failed; stopping the gang", {{"cause", end.message}});
      stop_children(SIGTERM);
      // An exit code the job's FailJob rules name ends the job: no round restarts for it.
      const bool permanent = end.failure->signal == 0 &&
                             config_.fail_exit_codes.count(end.failure->exit_code) > 0;
      if (permanent) end.message += " (a FailJob exit code: no in-place restart)";
      report_failure(permanent                    ? std::string(rendezvous::kFailurePermanent)
                     : end.failure->signal != 0 ? "signal"
                                                : "exit",
                     end.failure->rank, end.failure->exit_code, end.failure->signal);
    }
    if (!decided) {
      if (std::optional<std::string> hang = sup.CheckHang(now, config_.hang_timeout)) {
        decided = true;
        end.kind = EndKind::kHang;
        end.message = *hang;
        end.tail = sup.TailOf(0);
        log::Warning("hang detected; stopping the gang", {{"cause", *hang}});
        stop_children(SIGTERM);
        report_failure("hang", -1, contract::kExitHang, 0);
      }
    }
    if (!decided && sup.state() == supervisor::Supervisor::State::kExited) {
      decided = true;
      end.kind = EndKind::kSuccess;
    }
    if (!decided || !sup.AllExited()) continue;
    if (end.kind == EndKind::kSignal) end.exit_code = sup.ExitCode();
    // After our own failure, a restart needs the server's abort (it carries the attempt to
    // rejoin); wait for it up to the peer timeout.
    const bool local_failure = end.kind == EndKind::kChildFailed || end.kind == EndKind::kHang;
    if (local_failure && can_restart && !end.abort && session_alive && abort_wait_until &&
        now < *abort_wait_until) {
      continue;
    }
    return end;
  }
}

#if defined(LOCKSTEP_HAVE_STORES)
namespace {

// The stores listen only where their clients reach them, node 0's address as every child got it
// (MASTER_ADDR): on a pod, its own IP, not every interface. A name that does not resolve to
// this machine (a host alias, DNS not ready) falls back to every interface, said in the log.
template <typename Server>
StatusOr<int> ListenForChildren(Server& server, const World& world, int port,
                                std::string_view what) {
  StatusOr<int> bound = server.Start(world.master_addr, port);
  if (bound.ok()) return bound;
  log::Warning(std::string(what) + ": cannot listen on node 0's address alone; every interface",
               {{"address", world.master_addr}, {"error", bound.status().message()}});
  return server.Start("", port);
}

// Room for every process of the world to hold a few connections.
stores::ServerLimits StoreServerLimits(const World& world) {
  stores::ServerLimits limits;
  limits.max_connections =
      std::max<size_t>(limits.max_connections, 4 * static_cast<size_t>(world.world_size));
  return limits;
}

}  // namespace
#endif

Status Launcher::StartServices(const World& world, const LocalPlan& plan) {
  if (world.node_rank != 0) return Status::Ok();
#if defined(LOCKSTEP_HAVE_STORES)
  // A fresh store per attempt: torch 2.15 no longer prefixes worker keys with the restart
  // count, so a store kept across an in-place restart would hand the new attempt the dead
  // attempt's gloo/NCCL addresses. The previous attempt's ranks are gone by now.
  if (plan.tcp_store) {
    if (tcp_store_) tcp_store_->Stop();
    tcp_store_.reset();
    stores::TcpStoreOptions options;
    options.server = StoreServerLimits(world);
    auto store = std::make_unique<stores::TcpStoreServer>(options);
    LS_ASSIGN_OR_RETURN(int port, ListenForChildren(*store, world, world.master_port, "tcpstore"));
    log::Info("TCPStore-compatible store listening",
              {{"address", world.master_addr}, {"port", std::to_string(port)}});
    tcp_store_ = std::move(store);
  }
  // Scope sizes follow the world, which may change between elastic attempts.
  if (plan.gloo_kv && (!gloo_kv_ || gloo_scopes_ != plan.gloo_scope_sizes)) {
    if (gloo_kv_) gloo_kv_->Stop();
    gloo_kv_.reset();
    stores::GlooKvOptions options;
    options.server = StoreServerLimits(world);
    auto kv = std::make_unique<stores::GlooKvServer>(plan.gloo_scope_sizes, options);
    LS_ASSIGN_OR_RETURN(int port, ListenForChildren(*kv, world, world.kv_port, "gloo kv"));
    log::Info("Gloo KV rendezvous server listening",
              {{"address", world.master_addr}, {"port", std::to_string(port)}});
    gloo_kv_ = std::move(kv);
    gloo_scopes_ = plan.gloo_scope_sizes;
  }
  return Status::Ok();
#else
  if (plan.tcp_store || plan.gloo_kv) {
    return UnimplementedError("framework needs node-0 stores, but they were not built");
  }
  return Status::Ok();
#endif
}

void Launcher::WaitForPeersToFinish() {
  log::Info("waiting for the other nodes to finish before stopping the rendezvous server");
  while (server_->ActiveMembers() > 0) {
    pollfd p{signals_->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    for (int sig : signals_->Drain()) {
      if (sig != SIGCHLD) return;
    }
  }
}

int Launcher::Finish(supervisor::TerminationReport report, int code) {
  Status written = supervisor::WriteTerminationLog(config_.termination_log, report);
  if (!written.ok()) {
    log::Info("termination log not written", {{"detail", written.message()}});
  }
  log::Write(code == 0 ? log::Level::kInfo : log::Level::kError, "launcher exiting",
             {{"exit_code", std::to_string(code)},
              {"reason", report.reason},
              {"message", report.message}});
#if defined(LOCKSTEP_HAVE_STORES)
  if (tcp_store_) tcp_store_->Stop();
  if (gloo_kv_) gloo_kv_->Stop();
#endif
  if (server_) server_->Stop();
  return code;
}

}  // namespace lockstep::launcher
