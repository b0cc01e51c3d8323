#include "operator/controller/launcher_monitor.h"

#include <algorithm>

#include "common/log.h"
#include "operator/api/children.h"
#include "operator/kube/base64.h"

namespace lockstep::controller {
namespace {

// The token as the pods mounted it: the Secret's data value, base64 the apiserver wrote (always
// whole 4-character groups).
StatusOr<std::string> DecodeToken(const std::string& in) {
  if (in.size() % 4 != 0) return DataLossError("token: not base64");
  StatusOr<std::string> token = kube::Base64Decode(in);
  if (!token.ok()) return DataLossError("token: not base64");
  return token;
}

// Two answers differ in what the plan reads (so the job is worth another pass).
bool SameStatus(const LauncherObservation& a, const LauncherObservation& b) {
  return a.pod_uid == b.pod_uid && a.answered == b.answered &&
         a.status.round == b.status.round && a.status.complete == b.status.complete &&
         a.status.running == b.status.running &&
         a.status.failure_restarts == b.status.failure_restarts &&
         a.status.requested_restarts == b.status.requested_restarts &&
         // Hot spares (spare_plan.h): a promotion, or a spare standing by or gone.
         a.status.promotions == b.status.promotions &&
         a.status.standby_spares == b.status.standby_spares &&
         a.status.serving == b.status.serving &&
         a.status.lost == b.status.lost;
}

std::string ProbeKey(const std::string& job, const std::string& pod, uint64_t report) {
  return job + "|" + pod + "|" + std::to_string(report);
}

}  // namespace

LauncherMonitor::LauncherMonitor(kube::RestClient& client,
                                 std::unique_ptr<LauncherControl> control, const Clock& clock,
                                 DispatchLimits limits)
    : client_(client),
      control_(std::move(control)),
      clock_(clock),
      limits_(limits),
      dispatch_(limits) {}

LauncherMonitor::~LauncherMonitor() { Stop(); }

void LauncherMonitor::SetChangedHandler(std::function<void(const std::string&)> handler) {
  changed_ = std::move(handler);
}

void LauncherMonitor::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!workers_.empty() || stopping_) return;
  for (size_t i = 0; i < std::max<size_t>(limits_.workers, 3); ++i) {  // dispatch_'s clamp
    workers_.emplace_back([this] { Work(); });
  }
  watcher_ = std::thread([this] { WatchLoop(); });
}

void LauncherMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  watch_cv_.notify_all();
  // A worker in a request returns within the control's deadline.
  for (std::thread& t : workers_) {
    if (t.joinable()) t.join();
  }
  if (watcher_.joinable()) watcher_.join();
}

void LauncherMonitor::Queue(Op op, const std::string& probe_key) {
  std::optional<LauncherDispatch::OpId> id = dispatch_.Add(op.job.key, op.kind, probe_key);
  if (id) ops_.emplace(*id, std::move(op));
}

void LauncherMonitor::Poll(const LauncherJob& job) {
  bool new_watch = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool ask = true;
    if (watch_interval_.count() > 0) {
      const Clock::Steady now = clock_.Now();
      auto [it, inserted] = watches_.try_emplace(job.key, Watch{job, now, now});
      Watch& w = it->second;
      // The pass read an answer that changed within the interval: the watch asks next (its
      // `next` is at most an interval after the request that answered).
      ask = inserted || w.job.pod_uid != job.pod_uid || !w.changed ||
            now - *w.changed >= WatchInterval();
      if (w.job.pod_uid != job.pod_uid) w.changed.reset();
      w.job = job;
      if (ask) w.next = now + WatchInterval();
      w.expires = now + kWatchExpiry;
      new_watch = inserted;
    }
    if (ask) Queue(Op{job, LauncherOpKind::kStatus, "", ""});
  }
  work_cv_.notify_one();
  if (new_watch) watch_cv_.notify_one();
}

void LauncherMonitor::Probe(const LauncherJob& job, const std::string& pod, const std::string& ip,
                            uint64_t report_lost_unix_ms) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Op op{job, LauncherOpKind::kProbe, "", ""};
    op.probe_pod = pod;
    op.probe_ip = ip;
    op.probe_report = report_lost_unix_ms;
    Queue(std::move(op), ProbeKey(job.key, pod, report_lost_unix_ms));
  }
  work_cv_.notify_one();
}

std::chrono::milliseconds LauncherMonitor::WatchInterval() const {
  const auto spread = kWatchSpacing * static_cast<int64_t>(watches_.size());
  return std::max<std::chrono::milliseconds>(watch_interval_, spread);
}

Clock::Steady LauncherMonitor::QueueDueWatches(Clock::Steady now) {
  Clock::Steady next = now + std::chrono::hours(1);
  for (auto it = watches_.begin(); it != watches_.end();) {
    Watch& w = it->second;
    if (now >= w.expires) {  // the plan stopped asking: the gang no longer runs
      it = watches_.erase(it);
      continue;
    }
    if (now >= w.next) {
      Queue(Op{w.job, LauncherOpKind::kStatus, "", ""});  // coalesced with a queued poll
      w.next = now + WatchInterval();
    }
    next = std::min(next, w.next);
    ++it;
  }
  return next;
}

void LauncherMonitor::Restart(const LauncherJob& job, const std::string& request,
                              const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // What was observed before the restart says nothing about the round after it.
    LauncherObservation& obs = latest_[job.key];
    obs = LauncherObservation{};
    obs.pod_uid = job.pod_uid;
    obs.restart = LauncherObservation::RestartAnswer{request, false, {}, ""};
    // The plan polls for what follows at once.
    if (auto w = watches_.find(job.key); w != watches_.end()) w->second.changed.reset();
    Queue(Op{job, LauncherOpKind::kRestart, request, reason});
  }
  work_cv_.notify_one();
}

std::optional<LauncherObservation> LauncherMonitor::Latest(const std::string& job_key,
                                                           const std::string& pod_uid) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(job_key);
  if (it == latest_.end() || it->second.pod_uid != pod_uid) return std::nullopt;
  return it->second;
}

void LauncherMonitor::Forget(const std::string& job_key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (LauncherDispatch::OpId id : dispatch_.Forget(job_key)) ops_.erase(id);
  latest_.erase(job_key);
  tokens_.erase(job_key);
  watches_.erase(job_key);
}

void LauncherMonitor::WatchLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const Clock::Steady now = clock_.Now();
    const size_t queued = dispatch_.queued();
    const Clock::Steady next = QueueDueWatches(now);
    if (dispatch_.queued() != queued) work_cv_.notify_all();
    // Woken early by a new watch (its first poll is due an interval from now) or Stop.
    watch_cv_.wait_for(lock, next - now);
  }
}

void LauncherMonitor::Work() {
  for (;;) {
    LauncherDispatch::Ticket ticket;
    Op op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || dispatch_.Runnable(); });
      if (stopping_) return;
      ticket = *dispatch_.Next();
      auto it = ops_.find(ticket.id);
      op = std::move(it->second);
      ops_.erase(it);
      // More may run (a lane had room for several): hand them to another worker.
      if (dispatch_.Runnable()) work_cv_.notify_one();
    }
    LauncherOutcome outcome = LauncherOutcome::kInTime;
    if (op.kind == LauncherOpKind::kProbe) {
      RunProbe(op);
    } else {
      outcome = Run(op);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      dispatch_.Done(ticket, outcome);
      if (!dispatch_.Runnable()) continue;
    }
    work_cv_.notify_one();  // this worker takes one; the job's next request may be for another
  }
}

StatusOr<protocol::ControlTarget> LauncherMonitor::Target(const LauncherJob& job) {
  const protocol::ControlTarget base{job.pod_ip, static_cast<uint16_t>(api::kRdzvPort), job.uid, "",
                                     job.attempt, job.bounds, job.key};
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tokens_.find(job.key);
    if (it != tokens_.end() && it->second.first == job.uid) {
      protocol::ControlTarget t = base;
      t.token = it->second.second;
      return t;
    }
  }
  // The Secret is the job's own (same name, and the job's uid is checked by the server as the
  // run id): the token the pods mounted.
  LS_ASSIGN_OR_RETURN(nlohmann::json secret,
                      client_.Get(kube::resources::Secrets(), job.namespace_,
                                  api::RdzvSecretName(job.name)));
  const nlohmann::json* data = secret.contains("data") ? &secret["data"] : nullptr;
  const std::string key(api::kTokenKey);
  if (data == nullptr || !data->contains(key) || !(*data)[key].is_string()) {
    return NotFoundError("the rendezvous Secret has no token");
  }
  protocol::ControlTarget t = base;
  LS_ASSIGN_OR_RETURN(t.token, DecodeToken((*data)[key].get<std::string>()));
  std::lock_guard<std::mutex> lock(mu_);
  tokens_[job.key] = {job.uid, t.token};
  return t;
}

void LauncherMonitor::RunProbe(const Op& op) {
  const ProbeAnswer answer = control_->Probe(op.probe_ip, static_cast<uint16_t>(api::kRdzvPort));
  log::Info("probed a pod the launchers reported lost",
            {{"job", op.job.key},
             {"pod", op.probe_pod},
             {"result", std::string(ToString(answer.result))},
             {"detail", answer.detail}});
  {
    std::lock_guard<std::mutex> lock(mu_);
    LauncherObservation& obs = latest_[op.job.key];
    if (obs.pod_uid != op.job.pod_uid) return;  // another attempt's server meanwhile
    obs.probes[op.probe_pod] = LauncherObservation::Probe{op.probe_report, answer};
  }
  if (changed_) changed_(op.job.key);
}

LauncherOutcome LauncherMonitor::Run(const Op& op) {
  const bool restart_op = op.kind == LauncherOpKind::kRestart;
  StatusOr<protocol::ControlTarget> target = Target(op.job);
  // Timed from after the token: the apiserver's latency says nothing about worker-0.
  const Clock::Steady asked = clock_.Now();
  bool deadline_exceeded = false;
  LauncherObservation result;
  result.pod_uid = op.job.pod_uid;
  std::optional<LauncherObservation::RestartAnswer> restart;
  if (restart_op) {
    restart = LauncherObservation::RestartAnswer{op.request, true, {}, ""};
    StatusOr<protocol::ControlAck> ack = target.ok()
                                             ? control_->Restart(*target, op.reason)
                                             : StatusOr<protocol::ControlAck>(target.status());
    if (ack.ok()) {
      restart->ack = *ack;
    } else {
      deadline_exceeded = target.ok() && ack.status().code() == StatusCode::kDeadlineExceeded;
      restart->answered = false;
      restart->error = ack.status().message();
    }
    log::Info("asked the launchers to restart in place",
              {{"job", op.job.key},
               {"request", op.request},
               {"accepted", ack.ok() && ack->accepted ? "true" : "false"},
               {"detail", ack.ok() ? ack->message : ack.status().message()}});
  } else {
    StatusOr<protocol::ControlStatus> status =
        target.ok() ? control_->GetStatus(*target)
                    : StatusOr<protocol::ControlStatus>(target.status());
    if (status.ok()) {
      result.answered = true;
      result.status = std::move(*status);
    } else {
      deadline_exceeded =
          target.ok() && status.status().code() == StatusCode::kDeadlineExceeded;
      result.error = status.status().message();
      log::Debug("launcher status unknown", {{"job", op.job.key}, {"error", result.error}});
    }
  }
  // A refused MAC may mean a token the job no longer has (the Secret was recreated): fetch it
  // again next time.
  const LauncherOutcome outcome = deadline_exceeded || clock_.Now() - asked >= kSlowAnswer
                                      ? LauncherOutcome::kSilent
                                      : LauncherOutcome::kInTime;
  const std::string& error = restart_op ? restart->error : result.error;
  bool changed = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error.find("authentication failed") != std::string::npos) tokens_.erase(op.job.key);
    LauncherObservation& obs = latest_[op.job.key];
    if (restart_op) {
      obs.pod_uid = op.job.pod_uid;
      obs.restart = restart;
    } else {
      if (obs.pod_uid != result.pod_uid) obs = LauncherObservation{};
      changed = !SameStatus(obs, result);
      result.restart = obs.restart;
      result.probes = std::move(obs.probes);
      // The lost members stay known when the server stops answering: node 0's launcher exits
      // (after a short linger) once a loss left it no in-place restart.
      if (!result.answered) result.status.lost = std::move(obs.status.lost);
      obs = std::move(result);
      auto w = watches_.find(op.job.key);
      if (changed && w != watches_.end() && w->second.job.pod_uid == op.job.pod_uid) {
        w->second.changed = clock_.Now();
      }
    }
  }
  if (changed && changed_) changed_(op.job.key);
  return outcome;
}

}  // namespace lockstep::controller
