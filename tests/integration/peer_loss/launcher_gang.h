#pragma once
// Real lockstep-launcher processes playing the launchers of a kwok job's pods, so a node can die
// or be partitioned the way the peer evidence sees it (docs/failures.md "Peer evidence"). Used by
// tests/integration/peer_loss/ and bench/recovery (--mode peer).
//
// Each pod's kwok IP is added to `lo`, so the operator's probe of a live pod is answered (by a
// refusal: nothing listens there but node 0's server). Node 0's launcher hosts the rendezvous
// server (it listens on every address); launcher i joins it through an address of its own,
// 127.77.0.<i>, so an iptables rule pair on that address cuts launcher i off from node 0 alone.
//   Kill(i):       the node dies: launcher i is SIGKILLed (its children die with it) and packets
//                  to <IP i>:29400 are dropped, so nothing answers there any more, as with a
//                  powered-off host (removing the address from lo is not enough where a default
//                  route leads to a proxy that accepts every connection, as on CI sandboxes);
//   Partition(i, from_operator_too):  the node is cut off but alive: packets between launcher i
//                  and node 0 are dropped (and, with from_operator_too, the operator's probe of
//                  <IP i>:29400 too); launcher i keeps running and must fence its ranks itself.
// Needs root (ip, iptables). Not thread-safe. The destructor kills the launchers and removes the
// addresses and rules it added. Each rule carries the comment lockstep-gang-<pid> and each address
// the label lo:g<pid> of the process that added it; Start first removes those whose process is
// gone (RemoveLeftovers), so a test process killed before its destructors ran (a ctest TIMEOUT,
// a killed CI run) does not cut the next run's launchers off.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "tests/launcher/core/harness.h"

namespace lockstep::testing {

struct GangPod {
  std::string name;
  std::string ip;
  std::string node;
  std::string uid;
  // A hot spare's pod (spec.failurePolicy.spareReplicas): its launcher runs with --spare and this
  // --role-index, standing by with no node-rank; -1: a gang pod. Spares come after the gang pods.
  int spare_index = -1;
};

struct GangOptions {
  std::string run_id;  // the job's uid
  std::string token;   // the job's rendezvous token
  std::string launcher_bin;
  std::string child_bin;  // lockstep_test_child
  std::string dir;        // where logs, env files and checkpoint files go
  int nproc = 2;
  // The child's arguments after OUTDIR; --forever by default.
  std::vector<std::string> child_args = {"--forever"};
  std::vector<std::string> launcher_args;  // extra flags (e.g. --peer-timeout 3)
};

class LauncherGang {
 public:
  // Adds each pod's IP to lo and starts one launcher per pod (gang pod i is node rank i; a spare
  // pod's launcher stands by).
  static StatusOr<std::unique_ptr<LauncherGang>> Start(std::vector<GangPod> pods,
                                                       GangOptions options);
  // Removes the OUTPUT rules and lo addresses a gang of a process that no longer exists added
  // (above); those of live processes stay. Returns how many it removed.
  static int RemoveLeftovers();
  ~LauncherGang();

  Status Kill(size_t i);
  // The node dies silently: launcher i is frozen (SIGSTOP) and cut off from node 0 and the
  // operator's probe (Partition(i, true)): no EOF, no answer, as with a powered-off host.
  Status Freeze(size_t i);
  Status Partition(size_t i, bool from_operator_too);
  void Heal(size_t i);
  launcher::testing::LauncherProcess& launcher(size_t i) { return *launchers_.at(i); }
  const GangPod& pod(size_t i) const { return pods_.at(i); }
  // The last time one of pod i's children touched its checkpoint file (the children touch
  // <dir>/ckpt.<i>.<local rank> every 100 ms, as a trainer writing checkpoints would), or the
  // epoch when none did.
  std::chrono::system_clock::time_point LastCheckpoint(size_t i) const;
  // Waits until every child of round 0 (of the gang pods: a standby spare runs none) wrote its
  // env file.
  bool WaitChildren(std::chrono::seconds timeout) const;
  std::string Logs() const;

 private:
  LauncherGang() = default;
  std::vector<GangPod> pods_;
  GangOptions options_;
  std::vector<std::unique_ptr<launcher::testing::LauncherProcess>> launchers_;
  std::vector<std::string> addresses_;  // added to lo
  std::vector<std::string> rules_;      // iptables rule specs added to OUTPUT
};

}  // namespace lockstep::testing
