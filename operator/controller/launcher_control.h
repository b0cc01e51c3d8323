#pragma once
// The operator's side of the launchers' control requests (protocol/control.h): ask node 0's
// rendezvous server for the gang's Status, or make it Restart the gang in place. The server is
// worker-0's launcher at <its pod IP>:kRdzvPort; requests carry an HMAC keyed by the job's
// rendezvous token (the Secret the operator created), never the token itself.
//
// LauncherControl is the seam the monitor (launcher_monitor.h) calls, so its unit tests script
// the answers; RdzvLauncherControl speaks the protocol (protocol::ControlCall) with a short
// deadline (connect + answer), so an absent or hostile peer costs at most that long and only an
// "unknown" answer.

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "operator/api/types.h"
#include "operator/kube/event_recorder.h"
#include "protocol/control_client.h"
#include "protocol/messages.h"

namespace lockstep::controller {

// What a job's worker-0 may report (issue 44: it is the tenant's code): the gang's node-ranks,
// every role, at the largest size the job may run at (spec.replicas, elastic maxReplicas, or
// status.replicas, whichever is larger, so an attempt started before a spec change still fits),
// and spec.failurePolicy.spareReplicas. Negative sizes count as 0. Pure, O(roles).
protocol::ControlBounds LauncherBounds(const api::TrainingJob& job);

// The answer was refused (not the protocol, or beyond the job's size: DataLoss or OutOfRange
// from ControlCall), as opposed to no answer (Unavailable, DeadlineExceeded, a Refuse).
bool IsRefusedAnswer(const Status& status);

// The operator's own look at a pod a launcher reported lost (peer_loss.h): a TCP connect to
// its IP at the rendezvous port.
enum class ProbeResult {
  kUnknown,      // not probed yet, no IP, or an error that says nothing about the pod
  kReachable,    // connected, or refused: the pod's network stack answered
  kUnreachable,  // timed out, or no route to the pod
};
std::string_view ToString(ProbeResult r);

struct ProbeAnswer {
  ProbeResult result = ProbeResult::kUnknown;
  std::string detail;  // for people: "connect to 10.0.0.7:29400 timed out after 1000ms"
};

class LauncherControl {
 public:
  virtual ~LauncherControl() = default;
  virtual StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget& target) = 0;
  virtual StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget& target,
                                                 const std::string& reason) = 0;
  // Blocks at most the control's deadline.
  virtual ProbeAnswer Probe(const std::string& host, uint16_t port) = 0;
};

// When to report a job's refused answers (IsRefusedAnswer), so a hostile worker-0 that answers
// wrong on every poll (2 s) costs at most a few events and log lines: a message already reported
// for the job within kRefusalWindow is not reported again, and at most kRefusalBurst messages per
// job are within any window (an answer that changes every poll makes a new message each time).
// Holds at most kRefusalBurst messages per job, for at most kMaxRefusalJobs jobs (past that, the
// jobs with nothing in their window are dropped, then the rest). Not thread-safe.
inline constexpr std::chrono::minutes kRefusalWindow{10};
inline constexpr size_t kRefusalBurst = 3;
inline constexpr size_t kMaxRefusalJobs = 4096;

class RefusalNotices {
 public:
  // Whether to report `message` for `job` now; a true answer is remembered.
  bool ShouldReport(const std::string& job, const std::string& message, Clock::Steady now);
  size_t jobs() const { return jobs_.size(); }

 private:
  struct Sent {
    Clock::Steady at;
    std::string message;
  };
  void Prune(Clock::Steady now);
  std::map<std::string, std::deque<Sent>> jobs_;
};

// Reports the answers it refuses: a Status answer refused (IsRefusedAnswer: not the protocol, or
// beyond target.bounds, the job's size) becomes a Warning event LauncherAnswerRefused on the job
// (target.job_key, target.run_id as its uid) and a log line, both as RefusalNotices allows. The
// refusal itself is returned unchanged: the monitor records the job's launchers as not answering
// (so the plan acts on what the operator sees itself), never part of the answer. Restart and
// Probe pass through. Thread-safe when `inner` is.
class RefusalReportingControl : public LauncherControl {
 public:
  using EventSink = std::function<void(const kube::InvolvedObject& job, const std::string& reason,
                                       const std::string& message)>;
  RefusalReportingControl(std::unique_ptr<LauncherControl> inner, EventSink sink,
                          const Clock& clock = RealClock::Get());
  // Events through `events` (Warning).
  RefusalReportingControl(std::unique_ptr<LauncherControl> inner, kube::EventRecorder& events,
                          const Clock& clock = RealClock::Get());

  StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget& target) override;
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget& target,
                                         const std::string& reason) override {
    return inner_->Restart(target, reason);
  }
  ProbeAnswer Probe(const std::string& host, uint16_t port) override {
    return inner_->Probe(host, port);
  }

 private:
  std::unique_ptr<LauncherControl> inner_;
  EventSink sink_;
  const Clock& clock_;
  std::mutex mu_;
  RefusalNotices notices_;  // guarded by mu_
};

class RdzvLauncherControl : public LauncherControl {
 public:
  explicit RdzvLauncherControl(std::chrono::milliseconds timeout = std::chrono::seconds(1))
      : timeout_(timeout) {}
  StatusOr<protocol::ControlStatus> GetStatus(const protocol::ControlTarget& target) override;
  StatusOr<protocol::ControlAck> Restart(const protocol::ControlTarget& target,
                                         const std::string& reason) override;
  ProbeAnswer Probe(const std::string& host, uint16_t port) override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace lockstep::controller
