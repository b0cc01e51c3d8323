#pragma once
// The operator's side of the launchers' control requests (launcher/rendezvous/control.h): ask
// node 0's rendezvous server for the gang's Status, or make it Restart the gang in place. The
// server is worker-0's launcher at <its pod IP>:kRdzvPort; requests carry an HMAC keyed by the
// job's rendezvous token (the Secret the operator created), never the token itself.
//
// LauncherControl is the interface the monitor (launcher_monitor.h) calls; RdzvLauncherControl
// speaks the protocol with a short deadline (connect + answer), so an absent or hostile peer
// costs at most that long and only an "unknown" answer.

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"
#include "launcher/rendezvous/control.h"

namespace lockstep::controller {

using LauncherStatus = launcher::rendezvous::ControlStatus;
using LauncherAck = launcher::rendezvous::ControlAck;

struct LauncherTarget {
  std::string host;  // worker-0 pod's IP
  uint16_t port = 0;
  std::string run_id;  // LOCKSTEP_RDZV_ID: the job's uid
  std::string token;   // never logged
};

class LauncherControl {
 public:
  virtual ~LauncherControl() = default;
  virtual StatusOr<LauncherStatus> GetStatus(const LauncherTarget& target) = 0;
  virtual StatusOr<LauncherAck> Restart(const LauncherTarget& target,
                                        const std::string& reason) = 0;
};

class RdzvLauncherControl : public LauncherControl {
 public:
  explicit RdzvLauncherControl(std::chrono::milliseconds timeout = std::chrono::seconds(1))
      : timeout_(timeout) {}
  StatusOr<LauncherStatus> GetStatus(const LauncherTarget& target) override;
  StatusOr<LauncherAck> Restart(const LauncherTarget& target, const std::string& reason) override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace lockstep::controller
