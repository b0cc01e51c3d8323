#include "tests/integration/hostile/worker0_fleet.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <random>
#include <sstream>

#include "operator/api/children.h"
#include "protocol/auth.h"
#include "protocol/control.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "tests/testing/host_state.h"

namespace lockstep::testing {
namespace {

using namespace protocol;  // NOLINT: the message types, in a test helper
using Steady = std::chrono::steady_clock;

constexpr size_t kHandlers = 48;  // more than the operator's 32 launcher workers
// How long a held (silent or mute) connection is kept: past the operator's 1 s deadline, so it
// is always the operator that gives up.
constexpr std::chrono::seconds kHold{3};

int Shell(const std::string& command) { return std::system(command.c_str()); }

std::string RuleTag(pid_t pid) { return "lockstep-hostile-" + std::to_string(pid); }

// Waits until `fd` is readable (or closed) or `deadline`; false on the deadline.
bool WaitReadable(int fd, Steady::time_point deadline) {
  pollfd p{fd, POLLIN, 0};
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Steady::now());
  return ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) > 0;
}

// Sends all of `bytes` unless the peer goes or `deadline` passes (the operator closes on an
// answer beyond its job's size: that ends the send, by design).
void SendBestEffort(int fd, const std::string& bytes, Steady::time_point deadline) {
  size_t sent = 0;
  while (sent < bytes.size() && Steady::now() < deadline) {
    const ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 50);
    } else {
      return;
    }
  }
}

// Reads until the peer closes or `deadline`.
void DrainUntilClosed(int fd, Steady::time_point deadline) {
  char buf[4096];
  while (WaitReadable(fd, deadline)) {
    if (::recv(fd, buf, sizeof(buf), 0) <= 0) return;
  }
}

std::string Filled(size_t n, uint64_t seed) {
  std::string s(n, 'a');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (seed + i * 7) % 26);
  return s;
}

ControlStatus Honest(const Worker0Job& job) {
  ControlStatus s;
  s.round = 0;
  s.complete = s.running = true;
  s.members = job.node_ranks;
  return s;
}

// A frame of exactly kMaxFrameBytes: the longest list of lost members the wire's frame holds
// (entries of the least size, node-ranks distinct, so the answer passes ControlStatus::Check
// and is refused only by the job's bounds), about 100,000 of them.
std::string OversizeFrame(const Worker0Job& job, uint64_t poll) {
  ControlStatus s = Honest(job);
  s.round = static_cast<uint32_t>(poll % kMaxCounter);
  const size_t base = Encode(s).size() - kFrameHeaderBytes;
  const size_t n = (kMaxFrameBytes - base) / LostMember::kMinBytes;
  s.lost.resize(n);
  for (size_t i = 0; i < n; ++i) {
    s.lost[i].node_rank = static_cast<uint32_t>(i);
    s.lost[i].round = s.round;
    s.lost[i].lost_unix_ms = poll;
  }
  return Encode(s);
}

RoundFailure LongestFailure(uint64_t poll) {
  RoundFailure f;
  f.round = kMaxCounter;
  f.node_rank = 1;
  f.rank = std::numeric_limits<int32_t>::max();
  f.local_rank = std::numeric_limits<int32_t>::max();
  f.exit_code = std::numeric_limits<int32_t>::min();
  f.signal = std::numeric_limits<int32_t>::max();
  f.reason = FailureReason::kExit;
  f.message = Filled(kMaxStringBytes, poll);
  for (uint32_t i = 0; i < kMaxTailLines; ++i) {
    f.stderr_tail.push_back(Filled(kMaxTailLineBytes, poll + i));
  }
  return f;
}

LostMember LongestLost(uint32_t node_rank, uint64_t poll) {
  LostMember l;
  l.round = kMaxCounter;
  l.node_rank = node_rank;
  // Names of no pod of the job: a report about pods that are not there is judged stale.
  l.pod_name = Filled(kMaxObjectNameBytes, poll + node_rank);
  l.pod_uid = Filled(kMaxUidBytes, poll);
  l.node_name = Filled(kMaxObjectNameBytes, poll + 1);
  l.last_heard_unix_ms = kMaxUnixMs - poll % 1000;
  l.lost_unix_ms = kMaxUnixMs - poll % 1000;
  l.disconnected = poll % 2 == 0;
  l.why = Filled(kMaxWhyBytes, poll);
  return l;
}

// Every field at the largest value the job's size allows (CheckControlBounds passes), different
// every poll. No `serving` entries: a served node-rank makes the operator delete the replaced
// pod, which would end this job's part in the measurement (its pods recreated elsewhere).
ControlStatus AtJobMaxima(const Worker0Job& job, uint64_t poll) {
  ControlStatus s;
  s.round = kMaxCounter - static_cast<uint32_t>(poll % 1000);
  s.complete = s.running = poll % 3 != 0;
  s.members = job.node_ranks;
  s.failure_restarts = kMaxCounter - 2000 + static_cast<uint32_t>(poll % 2000);
  s.requested_restarts = kMaxCounter - 4000 + static_cast<uint32_t>(poll % 2000);
  s.last_failure = LongestFailure(poll);
  s.progress = TrainingProgress{
      std::numeric_limits<uint64_t>::max() - poll, std::numeric_limits<uint64_t>::max(),
      std::numeric_limits<uint64_t>::max() - poll, std::numeric_limits<uint32_t>::max(),
      std::numeric_limits<uint64_t>::max()};
  s.promotions = kMaxCounter;
  s.standby_spares = job.node_ranks;  // spares + node ranks: the bound's limit
  for (uint32_t r = 0; r < job.node_ranks; ++r) s.lost.push_back(LongestLost(r, poll));
  return s;
}

// Inside the frame the job may be sent, but beyond the job's size or the protocol's ranges:
// each poll breaks a different bound.
ControlStatus BeyondJob(const Worker0Job& job, uint64_t poll) {
  ControlStatus s = Honest(job);
  s.round = static_cast<uint32_t>(poll % kMaxCounter);
  switch (poll % 7) {
    case 0:
      s.members = kMaxPeers;
      break;
    case 1:  // a node-rank past R
      s.lost.push_back(LongestLost(job.node_ranks, poll));
      break;
    case 2:
      for (uint32_t r = 0; r <= job.node_ranks; ++r) {  // one lost member more than R
        s.lost.push_back(LongestLost(r, poll));
        s.lost.back().why.clear();
      }
      break;
    case 3:
      s.standby_spares = kMaxPeers;
      break;
    case 4:
      s.serving.push_back({0, kMaxPeers - 1, 1, Filled(kMaxHostBytes, poll)});
      break;
    case 5:
      s.failure_restarts = kMaxCounter + 1 + static_cast<uint32_t>(poll % 1000);
      break;
    default:
      s.lost.push_back(LongestLost(0, poll));
      s.lost.back().lost_unix_ms = (uint64_t{1} << 62) + poll;  // nanoseconds would overflow
      break;
  }
  return s;
}

}  // namespace

int Worker0Fleet::RemoveLeftovers() {
  int removed = 0;
  std::istringstream rules(ShellOutput("iptables -t nat -S OUTPUT 2>/dev/null"));
  for (std::string line; std::getline(rules, line);) {
    const size_t at = line.find("--comment lockstep-hostile-");
    if (line.rfind("-A OUTPUT ", 0) != 0 || at == std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(
        std::atol(line.c_str() + at + std::string("--comment lockstep-hostile-").size()));
    if (pid <= 0 || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    removed += Shell("iptables -t nat -D OUTPUT " + line.substr(10) + " 2>/dev/null") == 0;
  }
  return removed;
}

StatusOr<std::unique_ptr<Worker0Fleet>> Worker0Fleet::Start(std::vector<Worker0Job> jobs) {
  std::unique_ptr<Worker0Fleet> f(new Worker0Fleet());
  f->jobs_ = std::move(jobs);
  f->requests_ = std::make_unique<std::atomic<uint64_t>[]>(f->jobs_.size());
  f->polls_ = std::make_unique<std::atomic<uint64_t>[]>(f->jobs_.size());
  RemoveLeftovers();
  f->listener_ = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int one = 1;
  ::setsockopt(f->listener_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(f->listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(f->listener_.get(), 1024) != 0) {
    return InternalError("worker-0 fleet: cannot listen");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(f->listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  f->port_ = ntohs(addr.sin_port);
  const std::string label = "lo:g" + std::to_string(::getpid());
  for (const Worker0Job& j : f->jobs_) {
    if (Shell("ip addr add " + j.ip + "/32 dev lo label " + label) != 0) {
      return FailedPreconditionError("cannot add " + j.ip + " to lo (root needed)");
    }
    f->addresses_.push_back(j.ip);
    const std::string rule = "-d " + j.ip + "/32 -p tcp --dport " + std::to_string(api::kRdzvPort) +
                             " -m comment --comment " + RuleTag(::getpid()) +
                             " -j DNAT --to-destination " + j.ip + ":" + std::to_string(f->port_);
    if (Shell("iptables -t nat -I OUTPUT " + rule) != 0) {
      return FailedPreconditionError("iptables refused: " + rule);
    }
    f->rules_.push_back(rule);
  }
  f->acceptor_ = std::thread([p = f.get()] { p->AcceptLoop(); });
  for (size_t i = 0; i < kHandlers; ++i) {
    f->handlers_.emplace_back([p = f.get()] { p->Handler(); });
  }
  return f;
}

Worker0Fleet::~Worker0Fleet() {
  stopping_ = true;
  cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  for (std::thread& t : handlers_) t.join();
  for (int fd : accepted_) ::close(fd);
  for (const std::string& rule : rules_)
    Shell("iptables -t nat -D OUTPUT " + rule + " 2>/dev/null");
  for (const std::string& a : addresses_) Shell("ip addr del " + a + "/32 dev lo 2>/dev/null");
}

void Worker0Fleet::SetMode(Worker0Mode mode) {
  mode_ = static_cast<int>(mode);
  for (size_t i = 0; i < jobs_.size(); ++i) requests_[i] = 0;
  for (auto& a : answers_) a = 0;
  bad_macs_ = 0;
}

uint64_t Worker0Fleet::Requests(size_t i) const { return requests_[i].load(); }

uint64_t Worker0Fleet::Answers(HostileAnswer kind) const {
  return answers_[static_cast<size_t>(kind)].load();
}

void Worker0Fleet::AcceptLoop() {
  while (!stopping_) {
    if (!WaitReadable(listener_.get(), Steady::now() + std::chrono::milliseconds(100))) continue;
    const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> lock(mu_);
    accepted_.push_back(fd);
    cv_.notify_one();
  }
}

void Worker0Fleet::Handler() {
  for (;;) {
    int fd = -1;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !accepted_.empty(); });
      if (stopping_) return;
      fd = accepted_.back();
      accepted_.pop_back();
    }
    Serve(fd);
    ::close(fd);
  }
}

void Worker0Fleet::Serve(int fd) {
  // Which job: the address the operator connected to (DNAT kept the IP).
  sockaddr_in local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return;
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  size_t i = 0;
  while (i < jobs_.size() && jobs_[i].ip != text) ++i;
  if (i == jobs_.size()) return;
  const Worker0Job& job = jobs_[i];
  const bool hostile = mode_.load() == static_cast<int>(Worker0Mode::kHostile);
  const Steady::time_point hold = Steady::now() + kHold;
  if (hostile && job.kind == Worker0Kind::kMute) {  // accepts, never says a word
    ++requests_[i];
    ++answers_[static_cast<size_t>(HostileAnswer::kHeld)];
    DrainUntilClosed(fd, hold);
    return;
  }
  Challenge challenge;
  static thread_local std::mt19937_64 random(std::random_device{}());
  challenge.nonce.resize(kNonceBytes);
  for (char& c : challenge.nonce) c = static_cast<char>(random());
  SendBestEffort(fd, Encode(challenge), hold);
  FrameDecoder decoder(1u << 16);
  std::optional<Frame> frame;
  while (!frame && WaitReadable(fd, hold)) {
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return;
    decoder.Append(std::string_view(buf, static_cast<size_t>(n)));
    StatusOr<std::optional<Frame>> next = decoder.Next();
    if (!next.ok()) return;
    frame = std::move(*next);
  }
  if (!frame || frame->type != static_cast<uint8_t>(MessageType::kControl)) return;
  StatusOr<ControlRequest> request = Decode<ControlRequest>(frame->body);
  if (!request.ok()) return;
  // What a real node 0 checks (launcher/rendezvous/server_status.cc).
  const std::string expected = ControlMac(AttemptKey(job.token, job.attempt), challenge.nonce,
                                          request->run_id, request->kind, request->reason);
  if (!MacEquals(expected, request->mac) || request->run_id != job.run_id) {
    ++bad_macs_;
    SendBestEffort(fd, Encode(Refuse{RefuseCode::kBadToken, "control: authentication failed"}),
                   hold);
    return;
  }
  ++requests_[i];
  std::string answer;
  if (request->kind == ControlKind::kRestart) {
    answer = Encode(ControlAck{false, 0, "nothing to restart"});
  } else if (!hostile) {
    answer = Encode(Honest(job));
  } else if (job.kind == Worker0Kind::kSilent) {
    ++answers_[static_cast<size_t>(HostileAnswer::kHeld)];
    DrainUntilClosed(fd, hold);
    return;
  } else {
    answer = Answer(i, polls_[i]++);
  }
  SendBestEffort(fd, answer, hold);
  ::shutdown(fd, SHUT_WR);
  DrainUntilClosed(fd, hold);
}

std::string Worker0Fleet::Answer(size_t i, uint64_t poll) {
  const Worker0Job& job = jobs_[i];
  switch (poll % 4) {
    case 0:
      ++answers_[static_cast<size_t>(HostileAnswer::kOversizeFrame)];
      return OversizeFrame(job, poll);
    case 1:
      ++answers_[static_cast<size_t>(HostileAnswer::kBeyondJob)];
      return Encode(BeyondJob(job, poll / 4));
    default:
      ++answers_[static_cast<size_t>(HostileAnswer::kAtJobMaxima)];
      return Encode(AtJobMaxima(job, poll));
  }
}

}  // namespace lockstep::testing
