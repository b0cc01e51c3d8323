#include "operator/controller/launcher_control.h"

namespace lockstep::controller {

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

}  // namespace lockstep::controller
