#include "operator/controller/launcher_control.h"

namespace lockstep::controller {
namespace {

namespace rdzv = launcher::rendezvous;

rdzv::ControlTarget ToTarget(const LauncherTarget& t) {
  return rdzv::ControlTarget{t.host, t.port, t.run_id, t.token};
}

}  // namespace

StatusOr<LauncherStatus> RdzvLauncherControl::GetStatus(const LauncherTarget& target) {
  LS_ASSIGN_OR_RETURN(rdzv::ControlReply reply,
                      rdzv::ControlCall(ToTarget(target), rdzv::ControlKind::kStatus, "",
                                        timeout_));
  if (!reply.status) return DataLossError("control: the server answered Status with no status");
  return std::move(*reply.status);
}

StatusOr<LauncherAck> RdzvLauncherControl::Restart(const LauncherTarget& target,
                                                   const std::string& reason) {
  LS_ASSIGN_OR_RETURN(rdzv::ControlReply reply,
                      rdzv::ControlCall(ToTarget(target), rdzv::ControlKind::kRestart, reason,
                                        timeout_));
  if (!reply.ack) return DataLossError("control: the server answered Restart with no ack");
  return std::move(*reply.ack);
}

}  // namespace lockstep::controller
