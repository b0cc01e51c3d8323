#pragma once
// The launcher's top level: host the rendezvous server (node 0), join a round, start and supervise
// the local children, and on failure either restart the gang in place (a new round, attempt + 1)
// or exit with a code the operator understands (protocol/contract.h), leaving the termination
// message (protocol/termination.h) behind. Single-threaded apart from the server's own loop
// thread.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "launcher/attempt.h"
#include "launcher/child_plan.h"
#include "launcher/config/config.h"
#include "launcher/nccl/nccl.h"
#include "launcher/rendezvous/client.h"
#include "launcher/progress/progress_file.h"
#include "launcher/rendezvous/server.h"
#include "launcher/supervisor/supervisor.h"
#include "launcher/sys/signals.h"
#include "launcher/world.h"
#include "protocol/termination.h"

#if defined(LOCKSTEP_HAVE_STORES)
#include "launcher/stores/gloo_kv_server.h"
#include "launcher/stores/tcp_store_server.h"
#endif

namespace lockstep::launcher {

// How long node 0 keeps its server up after a member was lost and it cannot restart in place:
// the operator polls a running job every 2 s (docs/failures.md "Peer evidence").
inline constexpr std::chrono::milliseconds kLostReportLinger{5000};

class Launcher {
 public:
  // `clock` (which outlives the launcher) times the joins, the attempts and their children.
  Launcher(LauncherConfig config, std::vector<std::string> base_env,
           const Clock& clock = RealClock::Get());
  // Runs to the end of the job; returns the process exit code.
  int Run();

 private:
  Status Setup();
  // Makes the directory of the children's LOCKSTEP_PROGRESS_FILE (config_.progress_file).
  void SetUpProgressFile();
  StatusOr<rendezvous::JoinResult> Join(uint32_t attempt);
  // The options every join shares (Join, StandBy).
  rendezvous::ClientOptions BaseJoinOptions(uint32_t attempt) const;
  // A spare pod (--spare): stands by until node 0's server promotes it (then this launcher
  // serves the lost node-rank: config_'s node rank, role and role index become that member's)
  // or releases it. The promoted round's join result, or the exit code.
  std::variant<rendezvous::JoinResult, int> StandBy();
  // Starts the attempt's children and services, then runs the Attempt (attempt.h) to its end.
  AttemptEnd RunAttempt(const World& world, rendezvous::Session& session, bool can_restart);
  // What an ended attempt means: the next round (nullopt), or the process's exit code.
  std::optional<int> AfterAttempt(const World& world, rendezvous::Session& session,
                                  const AttemptEnd& end, bool can_restart);
  int JoinFailed(const Status& status, uint32_t attempt);
  int Finish(protocol::TerminationMessage report, int code);
  // Node 0 only: the stores the framework plan asks for (TCPStore-compatible, Gloo KV).
  Status StartServices(const World& world, const LocalPlan& plan);
  void WaitForPeersToFinish();
  // Node 0 leaving after a member was lost and no in-place restart is left: keeps its server (and
  // the lost-member report) up for kLostReportLinger first.
  void LingerForLostReport();

  LauncherConfig config_;
  std::vector<std::string> base_env_;
  const Clock& clock_;
  std::optional<sys::SignalFd> signals_;
  std::unique_ptr<nccl::NcclLibrary> nccl_;
  std::unique_ptr<rendezvous::RendezvousServer> server_;
  // The children's progress file (SetUpProgressFile), read for the server's Status answers and
  // for the termination message; null when there is none.
  std::shared_ptr<progress::ProgressFileReader> progress_;
#if defined(LOCKSTEP_HAVE_STORES)
  std::unique_ptr<stores::TcpStoreServer> tcp_store_;
  std::unique_ptr<stores::GlooKvServer> gloo_kv_;
  std::map<std::string, int> gloo_scopes_;
#endif
  // In-place restarts: charged to --max-restarts (failures), and requested by the operator
  // (protocol/control.h), which cost no budget. Children see their sum as the restart count.
  int restart_count_ = 0;
  int requested_restarts_ = 0;
  // Rounds every member rejoined because a spare replaced a lost one: no rank of theirs failed,
  // so no budget is charged; the children's restart count includes them.
  int promotion_restarts_ = 0;
  uint32_t attempt_ = 0;
  // The spare pod's index (--role-index of a --spare launcher), -1 for a gang pod: sent with
  // every join, so the server can tell the spare that replaced a node-rank from the pod it
  // replaced.
  int32_t spare_index_ = -1;
};

}  // namespace lockstep::launcher
