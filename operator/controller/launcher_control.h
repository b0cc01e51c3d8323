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
#include <string>

#include "common/status.h"
#include "protocol/control_client.h"
#include "protocol/messages.h"

namespace lockstep::controller {

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
