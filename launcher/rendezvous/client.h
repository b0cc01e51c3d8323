#pragma once
// The launcher's side of the rendezvous. JoinRound() connects (retrying until the join deadline,
// since a new pod's DNS name may appear late), authenticates, heartbeats while the round gathers,
// and returns the world. The returned Session then carries heartbeats, failure reports and the
// server's Abort while children run; the launcher polls its fd in its own event loop.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/net.h"
#include "common/status.h"
#include "common/unique_fd.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "protocol/contract.h"

namespace lockstep::launcher::rendezvous {

struct ClientOptions {
  net::HostPort endpoint;
  std::string run_id;
  std::string token;
  // The launcher's --attempt (the attempt the operator created its pod for): joins are
  // authenticated with that attempt's key (protocol/auth.h AttemptKey), whatever the round.
  uint32_t key_attempt = 0;
  uint32_t attempt = 0;  // the round to join
  uint32_t node_rank = 0;
  std::string role = "worker";
  uint32_t role_index = 0;
  std::string host;  // advertised address
  uint32_t port = 0;
  uint32_t nproc = 1;
  bool want_peer_table = false;
  // Hot spares (docs/launcher.md "Hot spares"): the spare pod's index, -1 for a gang pod; and
  // whether this join is a standby one (wait for Promote, then for the promoted round's World).
  int32_t spare_index = -1;
  bool standby = false;
  std::string pod_name;   // Join::pod_name, Join::node_name: only reported
  std::string node_name;
  std::string pod_uid;
  std::chrono::milliseconds heartbeat_interval = protocol::contract::kDefaultHeartbeatInterval;
  std::chrono::milliseconds peer_timeout = protocol::contract::kDefaultPeerTimeout;
  std::chrono::steady_clock::time_point deadline;
  // Readable when the launcher must give up waiting (a signal arrived); -1 for none.
  int interrupt_fd = -1;
  // Times the deadline, the heartbeats and the server's silence (also the Session's); outlives
  // the join and its Session.
  const Clock* clock = &RealClock::Get();
};

// What the server says while children run.
struct ServerEvent {
  enum class Kind { kHeartbeat, kAbort, kClosed };
  Kind kind = Kind::kHeartbeat;
  protocol::Abort abort;  // for kAbort
  std::string detail;     // for kClosed
};

class Session {
 public:
  Session(UniqueFd fd, protocol::FrameDecoder decoder, uint32_t attempt,
          const Clock& clock = RealClock::Get());
  int fd() const { return fd_.get(); }
  uint32_t attempt() const { return attempt_; }
  std::chrono::steady_clock::time_point last_heard() const { return last_heard_; }
  // Reads what is available; events in arrival order. kClosed ends the session.
  std::vector<ServerEvent> OnReadable();
  Status SendHeartbeat();
  Status SendFailure(const protocol::Failure& f);
  Status SendDone(bool ends_job = false);
  // The children of this attempt were started (the operator's "running round").
  Status SendStarted();

 private:
  Status Send(const std::string& bytes);
  UniqueFd fd_;
  protocol::FrameDecoder decoder_;
  uint32_t attempt_;
  const Clock& clock_;
  std::chrono::steady_clock::time_point last_heard_;
};

struct JoinResult {
  protocol::WorldMsg world;
  std::optional<protocol::PeerTable> peers;  // when requested
  std::unique_ptr<Session> session;
  // A standby join: the node-rank, role and round the server promoted this spare to (the world
  // is that round's).
  std::optional<protocol::Promote> promoted;
  // A standby join the server released because the job is finishing: no world, no session.
  bool released = false;
  // A promoted spare whose connection ended before the promoted round's World (the round was
  // aborted while gathering, or the connection broke): no world, no session; the launcher joins
  // this round as the promoted node-rank.
  std::optional<uint32_t> rejoin_round;
};

// Errors: PermissionDenied (refused: final, the message is the server's reason),
// DeadlineExceeded (round not complete by the deadline), Cancelled (interrupt_fd readable),
// Aborted (the round was aborted while gathering; the caller retries with attempt + 1).
StatusOr<JoinResult> JoinRound(const ClientOptions& options);

}  // namespace lockstep::launcher::rendezvous
