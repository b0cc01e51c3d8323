#include "operator/controller/launcher_control.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/enum_names.h"
#include "common/log.h"
#include "common/unique_fd.h"

namespace lockstep::controller {

std::string_view ToString(ProbeResult r) {
  static constexpr NameTable<ProbeResult, 3> kNames = {
      {{ProbeResult::kUnknown, "unknown"},
       {ProbeResult::kReachable, "reachable"},
       {ProbeResult::kUnreachable, "unreachable"}}};
  return NameOf(kNames, r, "unknown");
}

protocol::ControlBounds LauncherBounds(const api::TrainingJob& job) {
  const auto count = [](int64_t n) { return static_cast<uint64_t>(std::max<int64_t>(n, 0)); };
  int64_t workers = job.spec.replicas;
  if (job.spec.elastic) workers = std::max<int64_t>(workers, job.spec.elastic->max_replicas);
  workers = std::max<int64_t>(workers, job.status.replicas);
  uint64_t nodes = count(workers);
  for (const api::Role& role : job.spec.roles) nodes += count(role.replicas);
  constexpr uint64_t kMax = protocol::kMaxPeers;
  return protocol::ControlBounds{static_cast<uint32_t>(std::min(nodes, kMax)),
                                 static_cast<uint32_t>(std::min(
                                     count(job.spec.failure_policy.spare_replicas), kMax))};
}

bool IsRefusedAnswer(const Status& status) {
  return status.code() == StatusCode::kDataLoss || status.code() == StatusCode::kOutOfRange;
}

bool RefusalNotices::ShouldReport(const std::string& job, const std::string& message,
                                  Clock::Steady now) {
  std::deque<Sent>& sent = jobs_[job];
  while (!sent.empty() && now - sent.front().at >= kRefusalWindow) sent.pop_front();
  for (const Sent& s : sent) {
    if (s.message == message) return false;
  }
  if (sent.size() >= kRefusalBurst) return false;
  sent.push_back({now, message});
  if (jobs_.size() > kMaxRefusalJobs) Prune(now);
  return true;
}

void RefusalNotices::Prune(Clock::Steady now) {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    const bool quiet = it->second.empty() || now - it->second.back().at >= kRefusalWindow;
    it = quiet ? jobs_.erase(it) : std::next(it);
  }
  // Every job still in its window: forget the first ones (a job forgotten may report again).
  while (jobs_.size() > kMaxRefusalJobs) jobs_.erase(jobs_.begin());
}

RefusalReportingControl::RefusalReportingControl(std::unique_ptr<LauncherControl> inner,
                                                 EventSink sink, const Clock& clock)
    : inner_(std::move(inner)), sink_(std::move(sink)), clock_(clock) {}

RefusalReportingControl::RefusalReportingControl(std::unique_ptr<LauncherControl> inner,
                                                 kube::EventRecorder& events, const Clock& clock)
    : RefusalReportingControl(
          std::move(inner),
          [&events](const kube::InvolvedObject& job, const std::string& reason,
                    const std::string& message) { events.Record(job, "Warning", reason, message); },
          clock) {}

StatusOr<protocol::ControlStatus> RefusalReportingControl::GetStatus(
    const protocol::ControlTarget& target) {
  StatusOr<protocol::ControlStatus> status = inner_->GetStatus(target);
  if (status.ok() || !IsRefusedAnswer(status.status())) return status;
  // Cut: the reason comes from the peer's bytes in part, and the event holds 1 KiB.
  const std::string why = status.status().message().substr(0, 600);
  const std::string job = target.job_key.empty() ? target.run_id : target.job_key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!notices_.ShouldReport(job, why, clock_.Now())) return status;
  }
  log::Warning("refused the launchers' status answer",
               {{"job", job}, {"pod_ip", target.host}, {"error", why}});
  const size_t slash = target.job_key.find('/');
  if (sink_ && slash != std::string::npos) {
    kube::InvolvedObject object{"lockstep.dev/v1alpha1", "TrainingJob",
                                target.job_key.substr(0, slash), target.job_key.substr(slash + 1),
                                target.run_id, ""};
    sink_(object, "LauncherAnswerRefused",
          "the status answer of node 0's launcher (" + target.host +
              ") was refused and ignored; the operator treats the launchers as not answering: " +
              why);
  }
  return status;
}

StatusOr<protocol::ControlStatus> RdzvLauncherControl::GetStatus(
    const protocol::ControlTarget& target) {
  LS_ASSIGN_OR_RETURN(protocol::ControlReply reply,
                      protocol::ControlCall(target, protocol::ControlKind::kStatus, "", timeout_));
  if (!reply.status) return DataLossError("control: the server answered Status with no status");
  return std::move(*reply.status);
}

StatusOr<protocol::ControlAck> RdzvLauncherControl::Restart(const protocol::ControlTarget& target,
                                                            const std::string& reason) {
  LS_ASSIGN_OR_RETURN(
      protocol::ControlReply reply,
      protocol::ControlCall(target, protocol::ControlKind::kRestart, reason, timeout_));
  if (!reply.ack) return DataLossError("control: the server answered Restart with no ack");
  return std::move(*reply.ack);
}

namespace {

// What a connect's errno says about the peer: refused means its network stack answered (the
// pod is there; only nobody listens), no route or a timeout means nothing answered.
ProbeResult FromErrno(int err) {
  switch (err) {
    case 0:
    case ECONNREFUSED:
      return ProbeResult::kReachable;
    case ETIMEDOUT:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EHOSTDOWN:
      return ProbeResult::kUnreachable;
    default:
      return ProbeResult::kUnknown;
  }
}

ProbeAnswer Answer(int err, const std::string& target, std::chrono::milliseconds timeout) {
  ProbeAnswer a;
  a.result = FromErrno(err);
  if (err == 0) {
    a.detail = "connected to " + target;
  } else if (err == ETIMEDOUT) {
    a.detail =
        "connect to " + target + " timed out after " + std::to_string(timeout.count()) + "ms";
  } else {
    a.detail = "connect to " + target + ": " + std::strerror(err);
  }
  return a;
}

}  // namespace

ProbeAnswer RdzvLauncherControl::Probe(const std::string& host, uint16_t port) {
  const std::string target = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return ProbeAnswer{ProbeResult::kUnknown, "not an IPv4 address: " + host};
  }
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (fd.get() < 0) return Answer(errno, target, timeout_);  // unknown: says nothing of the pod
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) {
    return Answer(0, target, timeout_);
  }
  if (errno != EINPROGRESS) return Answer(errno, target, timeout_);
  pollfd p{fd.get(), POLLOUT, 0};
  const int n = ::poll(&p, 1, static_cast<int>(timeout_.count()));
  if (n == 0) return Answer(ETIMEDOUT, target, timeout_);
  if (n < 0) return Answer(errno, target, timeout_);
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  return Answer(err, target, timeout_);
}

}  // namespace lockstep::controller
