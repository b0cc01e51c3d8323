#include "operator/controller/silence_guard.h"

namespace lockstep::controller {

bool IsSilenceVerdict(const NodeVerdict& verdict) {
  return verdict.lost &&
         (verdict.reason == "NodeLeaseExpired" || verdict.reason == "NodeUnreachable");
}

bool HoldSilence(int silent, int total, double fraction) {
  if (fraction <= 0 || total <= 0 || silent < kSilenceHoldMinNodes) return false;
  // 0.55 x 20 is 11.000000000000002 in doubles; 11 silent of 20 is the line, so it must hold.
  return static_cast<double>(silent) >= fraction * static_cast<double>(total) - 1e-9;
}

NodeVerdict ApplySilenceHold(NodeVerdict verdict, bool held) {
  if (held && IsSilenceVerdict(verdict)) return NodeVerdict{};
  return verdict;
}

}  // namespace lockstep::controller
