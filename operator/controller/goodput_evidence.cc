#include "operator/controller/goodput_evidence.h"

#include <algorithm>
#include <chrono>

#include "operator/controller/inplace_plan.h"

namespace lockstep::controller {
namespace {

api::Time FromUnixMs(uint64_t ms) {
  // Check() bounds it before 2200: in range of a nanosecond time point.
  return api::Time(std::chrono::duration_cast<api::Time::duration>(
      std::chrono::milliseconds(static_cast<int64_t>(ms))));
}

std::string FailureCause(const protocol::ControlStatus& st) {
  for (const protocol::SpareServing& s : st.serving) {
    if (s.round == st.round) return std::string(kSparePromotedCause);
  }
  return InPlaceReason(st.last_failure->reason);
}

}  // namespace

std::optional<LateRecovery> LauncherRecovery(const protocol::ControlStatus& st,
                                             const api::TrainingJobStatus& stored,
                                             api::Time now) {
  if (!st.running || st.running_since_unix_ms == 0 || st.round == 0 || !stored.goodput) {
    return std::nullopt;
  }
  const api::Time until = FromUnixMs(st.running_since_unix_ms);
  // Charged already (a fold since the round began), or a start the operator has not reached.
  if (until <= stored.goodput->updated_at || until > now) return std::nullopt;
  std::optional<LateRecovery> out;
  if (st.last_failure && st.last_failure->round + 1 == st.round &&
      st.last_failure->failed_unix_ms != 0) {
    out = LateRecovery{FailureCause(st), FromUnixMs(st.last_failure->failed_unix_ms), until};
  } else if (const std::optional<api::RestartRequestStatus>& req = stored.restart_request;
             req && req->attempt == stored.attempt && req->round >= 0 &&
             static_cast<uint32_t>(req->round) + 1 == st.round) {
    out = LateRecovery{"RestartRequested", req->time, until};
  }
  // A round that ran before its failure: not an answer a server gives.
  if (out && out->until < out->from) return std::nullopt;
  return out;
}

}  // namespace lockstep::controller
