#pragma once
// The worker-0s of many jobs at once, as their tenants may write them (issue 44 items 1-2): one
// in-test server that speaks the real control protocol (protocol/control.h) to the operator for
// every job it is given, honestly or at the protocol's maxima. A job's worker-0 is the tenant's
// code (an init container can replace the launcher), and it holds the job's rendezvous token, so
// it can do everything a real node 0 does: send the Challenge, check the operator's MAC with
// AttemptKey(token, attempt), and answer whatever it likes.
//
// Where: each job's worker-0 pod IP is added to `lo` (label lo:g<pid>, which
// LauncherGang::RemoveLeftovers also clears once this process is gone), and a nat OUTPUT rule
// sends <IP>:kRdzvPort to this server's own port (DNAT to the same IP), so a real launcher gang
// (launcher_gang.h, whose node 0 listens on kRdzvPort of every address) can run beside it. Rules
// carry the comment lockstep-hostile-<pid>; Start first removes those of processes that are gone.
// Needs root (ip, iptables).
//
// Modes (SetMode, for every job at once):
//   kHonest: every job answers Status as node 0 of a running gang does (round 0 complete and
//            running, every member in it, nothing lost), the same answer each time.
//   kHostile: a job of kind kAnswers answers every Status differently, cycling through
//            (Hostile*, worker0_fleet.cc): a frame of kMaxFrameBytes whose list of lost members
//            is as long as the frame holds; answers inside the frame the job may be sent but
//            beyond its size (members at kMaxPeers, a lost or served node-rank past the job, a
//            lost member more than the job has, standby spares and a spare index at kMaxPeers);
//            and answers the job's size allows with every field at its maximum (strings at their
//            longest, counters at kMaxCounter, times at kMaxUnixMs, progress at UINT64_MAX, one
//            lost member per node-rank naming pods that do not exist). Kind kSilent reads the
//            request and never answers; kind kMute accepts and never even sends the Challenge.
// Restart requests get an Ack that refuses (no job here is ever restarted on purpose).
//
// Thread-safe. The destructor stops serving and removes the rules and addresses it added.

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "common/unique_fd.h"

namespace lockstep::testing {

enum class Worker0Kind { kAnswers, kSilent, kMute };
enum class Worker0Mode { kHonest, kHostile };

struct Worker0Job {
  std::string ip;      // the worker-0 pod's IP
  std::string run_id;  // the job's uid
  std::string token;   // the job's rendezvous token (its Secret)
  uint32_t attempt = 0;
  uint32_t node_ranks = 2;  // the job's replicas (no spares)
  Worker0Kind kind = Worker0Kind::kAnswers;
};

// What the hostile answers were, by kind: oversized frames, answers beyond the job, answers at
// the job's maxima; held: requests never answered (silent or mute).
enum class HostileAnswer { kOversizeFrame, kBeyondJob, kAtJobMaxima, kHeld, kCount };

class Worker0Fleet {
 public:
  static StatusOr<std::unique_ptr<Worker0Fleet>> Start(std::vector<Worker0Job> jobs);
  static int RemoveLeftovers();
  ~Worker0Fleet();

  // Switches every job to `mode` and resets the counts.
  void SetMode(Worker0Mode mode);
  // Control requests job `i` received since the last SetMode that carried the operator's MAC,
  // keyed by the job's token and attempt (a mute job's connections count here too).
  uint64_t Requests(size_t i) const;
  // Requests with a MAC that did not check, since the last SetMode.
  uint64_t BadMacs() const { return bad_macs_.load(); }
  uint64_t Answers(HostileAnswer kind) const;
  size_t size() const { return jobs_.size(); }

 private:
  Worker0Fleet() = default;
  void AcceptLoop();
  void Handler();
  void Serve(int fd);
  std::string Answer(size_t job, uint64_t poll);

  std::vector<Worker0Job> jobs_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::vector<std::string> addresses_;  // added to lo
  std::vector<std::string> rules_;      // nat OUTPUT rule specs added
  std::atomic<int> mode_{static_cast<int>(Worker0Mode::kHonest)};
  std::unique_ptr<std::atomic<uint64_t>[]> requests_;
  std::unique_ptr<std::atomic<uint64_t>[]> polls_;  // hostile answers sent, per job (the cycle)
  std::array<std::atomic<uint64_t>, static_cast<size_t>(HostileAnswer::kCount)> answers_{};
  std::atomic<uint64_t> bad_macs_{0};
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable cv_;  // a connection was accepted, or stopping_
  std::vector<int> accepted_;   // guarded by mu_: connections no handler took yet
  std::thread acceptor_;
  std::vector<std::thread> handlers_;
};

}  // namespace lockstep::testing
