#include "launcher/launcher.h"

#include <poll.h>
#include <signal.h>

#include <algorithm>

#include "common/log.h"
#include "launcher/child_plan.h"
#include "launcher/progress/progress_file.h"
#include "launcher/supervisor/termination_log.h"
#include "launcher/world_builder.h"
#include "protocol/contract.h"

namespace lockstep::launcher {

using Steady = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

namespace contract = protocol::contract;
using protocol::FailureReason;
using Kind = AttemptEnd::Kind;

// A TensorFlow chief beside parameter servers: the ps and worker tasks serve until stopped, so the
// chief's success is the job's (TF's own contract; the operator judges the job by it too).
bool SuccessEndsJob(const LauncherConfig& config, const World& world) {
  if (config.framework != "tensorflow" || config.role != "chief") return false;
  return std::any_of(world.peers.begin(), world.peers.end(),
                     [](const PeerInfo& p) { return p.role == "ps"; });
}

}  // namespace

Launcher::Launcher(LauncherConfig config, std::vector<std::string> base_env, const Clock& clock)
    : config_(std::move(config)),
      base_env_(std::move(base_env)),
      clock_(clock),
      attempt_(config_.attempt),
      spare_index_(config_.spare ? static_cast<int32_t>(config_.role_index) : -1) {
  if (config_.advertise_addr.empty()) config_.advertise_addr = net::HostName();
}

Status Launcher::Setup() {
  LS_ASSIGN_OR_RETURN(sys::SignalFd signals, sys::SignalFd::Create());
  signals_.emplace(std::move(signals));
  if (!config_.has_token) {
    log::Warning("--insecure-no-auth and no rendezvous token: joins are not authenticated, so "
                 "any peer that reaches the rendezvous port may join");
  }
  SetUpProgressFile();
  // A spare never hosts the server, even once promoted: node 0 is never replaced by one.
  if (config_.spare || config_.node_rank != 0) return Status::Ok();
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
  opt.insecure_no_auth = config_.insecure_no_auth;
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
  if (progress_) {
    opt.progress_source = [reader = progress_] { return reader->Read(); };
  }
  LS_ASSIGN_OR_RETURN(server_,
                      rendezvous::RendezvousServer::Listen(opt, config_.rdzv_endpoint.port));
  server_->Start();
  log::Info("rendezvous server listening", {{"port", std::to_string(server_->port())}});
  return Status::Ok();
}

void Launcher::SetUpProgressFile() {
  StatusOr<std::string> path = progress::MakeProgressFilePath();
  if (!path.ok()) {
    // Progress is for people: training goes on without it.
    log::Warning("children get no LOCKSTEP_PROGRESS_FILE", {{"detail", path.status().message()}});
    return;
  }
  config_.progress_file = *path;
  progress_ = std::make_shared<progress::ProgressFileReader>(*path);
}

// What every join of this launcher says, as a member or a standby spare: its run, key, round,
// address, and pod identity (a promoted spare's later loss must name its pod too: peer evidence).
rendezvous::ClientOptions Launcher::BaseJoinOptions(uint32_t attempt) const {
  rendezvous::ClientOptions opt;
  opt.clock = &clock_;
  opt.endpoint = config_.rdzv_endpoint;
  opt.run_id = config_.rdzv_id;
  opt.token = config_.token;
  opt.key_attempt = config_.attempt;
  opt.attempt = attempt;
  opt.role = config_.role;
  opt.role_index = config_.role_index;
  opt.host = config_.advertise_addr;
  opt.port = config_.framework_port;
  opt.nproc = config_.nproc_per_node;
  // Only frameworks that use every pod (TF_CONFIG, Horovod cross ranks) get the table: it is
  // O(W) bytes per launcher and O(W^2) for the server, too slow for thousands of pods.
  opt.want_peer_table = NeedsPeerTable(config_.framework);
  opt.spare_index = spare_index_;
  opt.pod_name = config_.pod_name;
  opt.node_name = config_.node_name;
  opt.pod_uid = config_.pod_uid;
  opt.heartbeat_interval = config_.heartbeat_interval;
  opt.peer_timeout = config_.peer_timeout;
  opt.interrupt_fd = signals_->fd();
  return opt;
}

StatusOr<rendezvous::JoinResult> Launcher::Join(uint32_t attempt) {
  rendezvous::ClientOptions opt = BaseJoinOptions(attempt);
  opt.node_rank = config_.node_rank;
  opt.deadline = clock_.Now() + config_.join_timeout;
  return rendezvous::JoinRound(opt);
}

std::variant<rendezvous::JoinResult, int> Launcher::StandBy() {
  rendezvous::ClientOptions opt = BaseJoinOptions(attempt_);
  opt.standby = true;
  // A spare waits as long as the job runs: no join timeout (a signal still ends the wait).
  opt.deadline = clock_.Now() + std::chrono::hours(24 * 365);
  log::Info("standing by as a spare", {{"spare_index", std::to_string(spare_index_)}});
  StatusOr<rendezvous::JoinResult> joined = rendezvous::JoinRound(opt);
  if (!joined.ok()) return JoinFailed(joined.status(), attempt_);
  if (joined->released) {
    protocol::TerminationMessage report;
    report.reason = FailureReason::kFinished;
    report.attempt = static_cast<int>(attempt_);
    report.node_rank = -1;
    report.message = "spare " + std::to_string(spare_index_) + " released: the job finished";
    log::Info("released: the job finished without needing this spare");
    return Finish(report, 0);
  }
  const protocol::Promote& promoted = *joined->promoted;
  config_.node_rank = promoted.node_rank;
  config_.role = promoted.role;
  config_.role_index = promoted.role_index;
  attempt_ = promoted.attempt;
  // The gang's children count every round since the operator's attempt as a restart; the
  // spare's children count the same, so LOCKSTEP_RESTART_COUNT agrees across the world.
  promotion_restarts_ = static_cast<int>(promoted.attempt - config_.attempt);
  log::SetComponent("launcher[" + std::to_string(config_.node_rank) + "]");
  log::Warning("promoted: this spare serves a lost node rank",
               {{"spare_index", std::to_string(spare_index_)},
                {"node_rank", std::to_string(promoted.node_rank)},
                {"role", promoted.role},
                {"role_index", std::to_string(promoted.role_index)},
                {"attempt", std::to_string(promoted.attempt)}});
  return std::move(*joined);
}

int Launcher::Run() {
  if (Status setup = Setup(); !setup.ok()) {
    protocol::TerminationMessage report;
    report.reason = FailureReason::kLauncher;
    report.attempt = static_cast<int>(attempt_);
    report.node_rank = static_cast<int>(config_.node_rank);
    report.message = setup.ToString();
    return Finish(report, contract::kExitInternal);
  }
  std::optional<rendezvous::JoinResult> promoted;
  if (config_.spare) {
    std::variant<rendezvous::JoinResult, int> stood = StandBy();
    if (const int* code = std::get_if<int>(&stood)) return *code;
    promoted = std::move(std::get<rendezvous::JoinResult>(stood));
    if (promoted->rejoin_round) {
      attempt_ = *promoted->rejoin_round;
      promoted.reset();
    }
  }
  for (;;) {
    const Steady::time_point join_start = clock_.Now();
    // The promoted spare's first round was joined while it stood by.
    StatusOr<rendezvous::JoinResult> joined =
        promoted ? StatusOr<rendezvous::JoinResult>(std::move(*promoted)) : Join(attempt_);
    promoted.reset();
    if (!joined.ok()) {
      if (IsAborted(joined.status())) {
        ++attempt_;
        continue;
      }
      return JoinFailed(joined.status(), attempt_);
    }
    const World world = BuildWorld(config_, joined->world, joined->peers,
                                   restart_count_ + requested_restarts_ + promotion_restarts_);
    log::Info("world formed",
              {{"attempt", std::to_string(world.attempt)},
               {"node_rank", std::to_string(world.node_rank)},
               {"nnodes", std::to_string(world.nnodes)},
               {"world_size", std::to_string(world.world_size)},
               {"first_rank", std::to_string(world.self().first_rank)},
               {"nccl_id", world.nccl_unique_id_hex.empty() ? "none" : "set"},
               {"peer_table", world.peers_complete ? "yes" : "no"},
               {"join_ms", std::to_string(std::chrono::duration_cast<milliseconds>(
                                              clock_.Now() - join_start).count())}});
    const bool can_restart = static_cast<uint32_t>(restart_count_) < config_.max_restarts;
    const AttemptEnd end = RunAttempt(world, *joined->session, can_restart);
    if (std::optional<int> code = AfterAttempt(world, *joined->session, end, can_restart)) {
      return *code;
    }
  }
}

std::optional<int> Launcher::AfterAttempt(const World& world, rendezvous::Session& session,
                                          const AttemptEnd& end, bool can_restart) {
  protocol::TerminationMessage report;
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
    case Kind::kSuccess:
      session.SendDone(SuccessEndsJob(config_, world)).IgnoreError();
      if (server_) WaitForPeersToFinish();
      log::Info("all local processes succeeded");
      // The restart counts reach the operator after the server is gone (docs/failures.md).
      report.reason = FailureReason::kSucceeded;
      return Finish(report, 0);
    case Kind::kChildFailed:
    case Kind::kHang:
    case Kind::kAborted:
      if (end.abort && end.abort->restartable && end.abort->reason == FailureReason::kRequested) {
        // The operator asked (protocol/control.h): rejoin without charging the budget, even
        // when none is left, since no rank failed.
        ++requested_restarts_;
        attempt_ = end.abort->attempt + 1;
        log::Warning("restarting in place on request",
                     {{"attempt", std::to_string(attempt_)},
                      {"requested_restarts", std::to_string(requested_restarts_)},
                      {"cause", end.abort->message}});
        return std::nullopt;
      }
      if (end.abort && end.abort->restartable && end.abort->spare_promoted) {
        // A spare took a lost member's node-rank: every rank of this node is healthy, so the
        // round is rejoined uncharged, like a requested one.
        ++promotion_restarts_;
        attempt_ = end.abort->attempt + 1;
        log::Warning("restarting in place: a spare replaced a lost node",
                     {{"attempt", std::to_string(attempt_)}, {"cause", end.abort->message}});
        return std::nullopt;
      }
      if (can_restart && end.abort && end.abort->restartable) {
        ++restart_count_;
        attempt_ = end.abort->attempt + 1;
        log::Warning("restarting in place",
                     {{"attempt", std::to_string(attempt_)},
                      {"restart_count", std::to_string(restart_count_)},
                      {"cause", end.message}});
        return std::nullopt;
      }
      if (end.kind == Kind::kAborted && end.abort->reason == FailureReason::kFinished) {
        // The chief's success ended the job; this node's servers were stopped on purpose.
        session.SendDone().IgnoreError();
        log::Info("the job finished on another node; local processes stopped",
                  {{"cause", end.message}});
        report.reason = FailureReason::kFinished;
        report.rank = -1;
        report.exit_code = 0;
        report.signal = 0;
        report.stderr_tail.clear();
        return Finish(report, 0);
      }
      if (end.kind == Kind::kAborted) {
        // Another node's failure: say so, so the operator does not blame this pod's ranks.
        report.reason = end.abort->reason == FailureReason::kPeerLost
                            ? FailureReason::kPeerLost
                            : FailureReason::kPeerFailed;
        report.message = "node " + std::to_string(end.abort->node_rank) + ": " + end.message;
        if (server_ && end.abort->reason == FailureReason::kPeerLost && !end.stop_signaled) {
          LingerForLostReport();
        }
        return Finish(report, contract::kExitPeerLost);
      }
      report.reason = end.kind == Kind::kHang                        ? FailureReason::kHang
                      : end.failure && end.failure->signal != 0 ? FailureReason::kSignal
                                                                : FailureReason::kExit;
      return Finish(report, end.kind == Kind::kHang ? contract::kExitHang : end.exit_code);
    case Kind::kServerLost:
      report.reason = FailureReason::kPeerLost;
      return Finish(report, contract::kExitPeerLost);
    case Kind::kSignal:
      // Stopped from outside (the pod deleted: suspend, preemption, eviction): not the job's
      // failure, whatever the children exited with; the operator reads the reason.
      report.reason = FailureReason::kTerminated;
      report.signal = end.signal;
      report.exit_code = end.exit_code;
      return Finish(report, end.exit_code);
    case Kind::kInternal:
      report.reason = FailureReason::kLauncher;
      return Finish(report, contract::kExitInternal);
  }
  return Finish(report, contract::kExitInternal);  // unreachable: every kind is handled
}

int Launcher::JoinFailed(const Status& status, uint32_t attempt) {
  protocol::TerminationMessage report;
  report.attempt = static_cast<int>(attempt);
  report.restart_count = restart_count_;
  report.requested_restarts = requested_restarts_;
  report.node_rank = static_cast<int>(config_.node_rank);
  report.message = status.message();
  int code = contract::kExitInternal;
  if (status.code() == StatusCode::kPermissionDenied) {
    report.reason = FailureReason::kRefused;
    code = contract::kExitRefused;
    report.message = "rendezvous refused this launcher: " + status.message();
  } else if (IsDeadlineExceeded(status)) {
    report.reason = FailureReason::kTimeout;
    code = contract::kExitJoinTimeout;
  } else if (status.code() == StatusCode::kCancelled) {
    report.reason = FailureReason::kTerminated;
    code = 128 + SIGTERM;
  } else {
    report.reason = FailureReason::kRendezvous;
  }
  return Finish(report, code);
}

AttemptEnd Launcher::RunAttempt(const World& world, rendezvous::Session& session,
                                bool can_restart) {
  StatusOr<LocalPlan> plan = PlanLocalChildren(config_, world, base_env_);
  Status started = plan.ok() ? StartServices(world, *plan) : plan.status();
  supervisor::Supervisor children(clock_);
  if (started.ok()) started = children.Start(std::move(plan->children));
  if (!started.ok()) {
    AttemptEnd end;
    end.kind = Kind::kInternal;
    end.message = started.ToString();
    session.SendFailure({static_cast<uint32_t>(world.attempt), -1, 0, 0, FailureReason::kLauncher,
                         end.message, {}}).IgnoreError();
    return end;
  }
  // Tells the server (and through it the operator) that this node's part of the round runs. A
  // failed send means a lost server, which the attempt's heartbeats notice.
  session.SendStarted().IgnoreError();
  return Attempt(config_, world, session, children, *signals_, can_restart, progress_.get(),
                 clock_)
      .Run();
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

void Launcher::LingerForLostReport() {
  // The operator acts on a lost member only once it read the server's report (Status; it polls
  // a running job every 2 s) and corroborated it (docs/failures.md "Peer evidence"). Exiting at
  // once took the report with the server: the pod then failed with 75, whose culprit the
  // operator waited for in vain, and the lost node was charged to maxRestarts as the job's own
  // failure. A signal (the pod deleted) ends the wait.
  log::Info("keeping the rendezvous server up so the operator can read the lost member",
            {{"ms", std::to_string(kLostReportLinger.count())}});
  const Steady::time_point until = clock_.Now() + kLostReportLinger;
  while (clock_.Now() < until) {
    pollfd p{signals_->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    for (int sig : signals_->Drain()) {
      if (sig != SIGCHLD) return;
    }
  }
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

int Launcher::Finish(protocol::TerminationMessage report, int code) {
  // The trainers' last word on progress: node 0's gives the operator the final step.
  if (progress_) report.progress = progress_->Read();
  Status written = supervisor::WriteTerminationLog(config_.termination_log, report);
  if (!written.ok()) {
    log::Info("termination log not written", {{"detail", written.message()}});
  }
  log::Write(code == 0 ? log::Level::kInfo : log::Level::kError, "launcher exiting",
             {{"exit_code", std::to_string(code)},
              {"reason", std::string(protocol::ToString(report.reason))},
              {"message", report.message}});
#if defined(LOCKSTEP_HAVE_STORES)
  if (tcp_store_) tcp_store_->Stop();
  if (gloo_kv_) gloo_kv_->Stop();
#endif
  if (server_) server_->Stop();
  progress::RemoveProgressFile(config_.progress_file);
  return code;
}

}  // namespace lockstep::launcher
