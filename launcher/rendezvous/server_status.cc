// What RendezvousServer tells the operator (server.h "Control requests"): Status and Restart
// requests on their own connections, and the record of members lost (lost_members.h).
#include <algorithm>

#include "common/log.h"
#include "launcher/rendezvous/server.h"
#include "protocol/control.h"

namespace lockstep::launcher::rendezvous {

using protocol::ControlAck;
using protocol::ControlKind;
using protocol::ControlRequest;
using protocol::ControlStatus;
using protocol::FailureReason;
using protocol::RefuseCode;
using std::chrono::milliseconds;

namespace {
const char* kLogPrefix = "rendezvous server: ";
}  // namespace

void RendezvousServer::OnControl(Conn& c, const ControlRequest& request) {
  if (request.version != protocol::kProtocolVersion) {
    Refuse(c, RefuseCode::kProtocol, "control: protocol version " +
                                         std::to_string(request.version) + " unsupported");
    return;
  }
  // Keyed by this launcher's attempt (control.h): a request for another attempt's launchers
  // fails here like a wrong token.
  const std::string expected =
      protocol::ControlMac(control_key_, c.nonce, request.run_id, request.kind, request.reason);
  if (!protocol::MacEquals(expected, request.mac)) {
    Refuse(c, RefuseCode::kBadToken,
           "control: authentication failed (wrong rendezvous token, or a request for another "
           "attempt's launchers)");
    return;
  }
  if (request.run_id != opt_.run_id) {
    Refuse(c, RefuseCode::kOtherRun, "control: run id does not match this server's run id");
    return;
  }
  std::string answer;
  if (request.kind == ControlKind::kStatus) {
    answer = Encode(CurrentStatus());
  } else {
    ControlAck ack;
    ack.round = attempt_;
    if (phase_ == Phase::kRunning) {
      log::Warning(std::string(kLogPrefix) + "restart requested",
                   {{"attempt", std::to_string(attempt_)}, {"reason", request.reason}});
      ack.accepted = true;
      AbortRound(FailureReason::kRequested, -1, "restart requested: " + request.reason);
    } else {
      ack.message = "round " + std::to_string(attempt_) + " is " +
                    (phase_ == Phase::kGathering ? "still gathering" : "finishing") +
                    "; nothing to restart";
    }
    answer = Encode(ack);
  }
  SendLast(c, answer, /*half_close=*/true);
}

ControlStatus RendezvousServer::CurrentStatus() const {
  ControlStatus st;
  st.round = attempt_;
  st.complete = phase_ != Phase::kGathering;
  st.members = static_cast<uint32_t>(members_.size());
  st.running = phase_ == Phase::kRunning && !members_.empty();
  for (const auto& [node_rank, id] : members_) {
    auto it = conns_.find(id);
    if (it == conns_.end() || !it->second->started) st.running = false;
  }
  st.failure_restarts = failure_restarts_;
  st.requested_restarts = requested_restarts_;
  st.last_failure = last_failure_;
  if (opt_.progress_source) st.progress = opt_.progress_source();
  st.promotions = spares_.promotions();
  st.standby_spares = spares_.standby();
  st.serving = spares_.Serving();
  st.lost = lost_.List();
  st.running_since_unix_ms = st.running ? running_since_unix_ms_ : 0;
  return st;
}

uint64_t RendezvousServer::WallNowUnixMs() const {
  return static_cast<uint64_t>(std::max<int64_t>(
      0, std::chrono::duration_cast<milliseconds>(opt_.clock->WallNow().time_since_epoch())
             .count()));
}

uint64_t RendezvousServer::RecordLost(const Conn& c, const std::string& why,
                                      bool disconnected) {
  // The steady clock times the peer timeout; the report is in wall time, which the operator
  // compares with the node's Lease (docs/failures.md "Peer evidence").
  const auto unix_ms = [](Clock::Wall t) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count());
  };
  const Clock::Wall wall_now = opt_.clock->WallNow();
  const auto silent_for = opt_.clock->Now() - c.last_seen;
  protocol::LostMember lost;
  lost.round = attempt_;
  lost.node_rank = c.join.node_rank;
  lost.pod_name = c.join.pod_name;
  lost.node_name = c.join.node_name;
  lost.pod_uid = c.join.pod_uid;
  lost.last_heard_unix_ms =
      unix_ms(wall_now - std::chrono::duration_cast<Clock::Wall::duration>(silent_for));
  lost.lost_unix_ms = unix_ms(wall_now);
  lost.disconnected = disconnected;
  lost.why = why;
  // A closed connection is the failure itself; a silent member failed after its last bytes.
  const uint64_t evidence = disconnected ? lost.lost_unix_ms : lost.last_heard_unix_ms;
  lost_.Record(std::move(lost));
  return evidence;
}

}  // namespace lockstep::launcher::rendezvous
