// RendezvousServer's hot spares (server.h "Hot spares"): standby joins, promotion into a lost
// member's node-rank, release when the round finishes. The bookkeeping itself is SparePool's.
#include "common/log.h"
#include "launcher/rendezvous/server.h"

namespace lockstep::launcher::rendezvous {

using protocol::Abort;
using protocol::Encode;
using protocol::FailureReason;
using protocol::Join;
using protocol::Promote;
using protocol::RefuseCode;

namespace {
const char* kLogPrefix = "rendezvous server: ";
}  // namespace

void RendezvousServer::OnStandbyJoin(Conn& c, const Join& join) {
  const std::string who = "spare " + std::to_string(join.spare_index);
  if (join.nproc == 0 || join.nproc > kMaxNprocPerNode) {
    Refuse(c, RefuseCode::kProtocol, who + ": bad nproc " + std::to_string(join.nproc));
    return;
  }
  if (std::optional<std::string> refused = spares_.AdmitStandby(join.spare_index, c.id)) {
    Refuse(c, RefuseCode::kDuplicateNode, who + ": " + *refused);
    return;
  }
  c.join = join;
  SetState(c, ConnState::kStandby);
  log::Info(std::string(kLogPrefix) + "a spare stands by",
            {{"spare_index", std::to_string(join.spare_index)},
             {"standby", std::to_string(spares_.standby())}});
  if (phase_ == Phase::kFinishing) ReleaseStandbySpares();
}

bool RendezvousServer::PromoteSpare(const Join& lost, const std::string& why,
                                    uint64_t failed_unix_ms) {
  // Node 0 hosts this server and the framework's stores: a spare cannot stand in for it.
  if (phase_ != Phase::kRunning || lost.node_rank == 0) return false;
  std::optional<net::ConnId> taken = spares_.TakeStandby();
  if (!taken) return false;
  auto it = conns_.find(*taken);
  if (it == conns_.end()) return false;  // closed in this batch; the pool forgot it too
  Conn& spare = *it->second;
  const uint32_t node_rank = lost.node_rank;
  const int32_t spare_index = spare.join.spare_index;
  AbortRound(FailureReason::kPeerLost, static_cast<int>(node_rank),
             "node " + std::to_string(node_rank) + " lost: " + why + "; spare " +
                 std::to_string(spare_index) + " takes its node rank",
             std::nullopt, /*spare_promoted=*/true, failed_unix_ms);
  // The spare is a member of the next round at once: the round completes as soon as the other
  // members rejoin, with no new pod.
  spare.join.node_rank = node_rank;
  spare.join.role = lost.role;
  spare.join.role_index = lost.role_index;
  spare.join.attempt = attempt_;
  spare.join.standby = false;
  SetState(spare, ConnState::kMember);
  members_[node_rank] = spare.id;
  spares_.RecordPromotion(node_rank, spare_index, attempt_, spare.join.host);
  log::Warning(std::string(kLogPrefix) + "promoted a spare",
               {{"node_rank", std::to_string(node_rank)},
                {"spare_index", std::to_string(spare_index)},
                {"attempt", std::to_string(attempt_)},
                {"promotions", std::to_string(spares_.promotions())}});
  Queue(spare, Encode(Promote{attempt_, node_rank, lost.role, lost.role_index}));
  return true;
}

void RendezvousServer::ReleaseStandbySpares() {
  Abort abort;
  abort.attempt = attempt_;
  abort.reason = FailureReason::kFinished;
  abort.message = "the job is finishing; the spare is not needed";
  abort.restartable = false;
  const std::string bytes = Encode(abort);
  for (net::ConnId id : ConnsIn({ConnState::kStandby})) {
    spares_.RemoveStandby(id);
    auto it = conns_.find(id);
    if (it != conns_.end()) SendLast(*it->second, bytes, /*half_close=*/false);
  }
}

}  // namespace lockstep::launcher::rendezvous
