// Fuzz target for the operator's status computation from what a job's launchers send (issue 44
// items 1 and 6). Worker-0 is the tenant's code: its Status answer and its termination message
// can hold anything. The input makes a running job (its size, spares, attempt, whether worker-0
// finished and what its termination message says, a progress written before) and node 0's
// answer; the answer is read as the operator reads it (a frame no longer than the job allows,
// ParseControlAnswer bounded by LauncherBounds), becomes the pass's LauncherObservation, and
// ComputePlan runs twice (the second pass on the first one's status). Checked beyond "no crash"
// (the replay test runs under ASan + UBSan, so a signed overflow in a sum fails too):
//   - an accepted answer is within the job: at most node-ranks members, lost and served entries,
//     each node-rank once and in range; a ControlStatus refused for the job's size is refused
//     whole (never partly used), with OutOfRange or DataLoss;
//   - the status the plan writes keeps every counter non-negative, progress within its ranges
//     (step and totalSteps >= 0, percent 0..100, eta >= 0), spares serving only the job's
//     node-ranks, and at most one probe and one peer-loss note per node-rank (O(job size));
//   - its goodput's accounts stay non-negative and its ratio within 0..1 whatever times the
//     answer holds (a late recovery, goodput_evidence.h);
//   - that status encodes (api::EncodeStatus) and the next pass on it keeps the same ranges.
//
// Input: [replicas][spares][flags][now][termination length hi][lo][termination bytes][answer
// stream]. flags: bits 0-1 the attempt, bit 2 worker-0 finished (bit 3: succeeded, else failed)
// with the termination message, bit 4 a progress written before (from the next 8 bytes: step).
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "common/check.h"
#include "operator/api/codec.h"
#include "operator/controller/launcher_control.h"
#include "operator/controller/plan.h"
#include "operator/controller/training_progress.h"
#include "protocol/control_client.h"
#include "protocol/frame.h"
#include "protocol/messages.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/unit/controller/builders.h"

namespace lockstep::controller {
namespace {

using protocol::ControlBounds;
using protocol::ControlStatus;
using testing::InAttempt;
using testing::Pod;
using testing::T0;

// An answer the operator accepted is within the job's size.
void CheckAccepted(const ControlStatus& s, const ControlBounds& b) {
  LS_CHECK(s.members <= b.node_ranks);
  LS_CHECK(s.lost.size() <= b.node_ranks && s.serving.size() <= b.node_ranks);
  std::set<uint32_t> lost, served;
  for (const protocol::LostMember& l : s.lost) {
    LS_CHECK(l.node_rank < b.node_ranks && lost.insert(l.node_rank).second);
    LS_CHECK(l.lost_unix_ms <= protocol::kMaxUnixMs && l.last_heard_unix_ms <= protocol::kMaxUnixMs);
  }
  for (const protocol::SpareServing& e : s.serving) {
    LS_CHECK(e.node_rank < b.node_ranks && served.insert(e.node_rank).second);
  }
  LS_CHECK(s.failure_restarts <= protocol::kMaxCounter &&
           s.requested_restarts <= protocol::kMaxCounter && s.round <= protocol::kMaxCounter &&
           s.promotions <= protocol::kMaxCounter);
}

// The ranges of the status a pass writes.
void CheckStatus(const api::TrainingJobStatus& s, const ControlBounds& b) {
  LS_CHECK(s.attempt >= 0);
  LS_CHECK(s.restarts.failures >= 0 && s.restarts.disruptions >= 0 &&
           s.restarts.consecutive >= 0 && s.restarts.in_place >= 0);
  if (s.rendezvous) {
    LS_CHECK(s.rendezvous->round >= 0 && s.rendezvous->failure_restarts >= 0 &&
             s.rendezvous->requested_restarts >= 0);
  }
  if (s.progress) {
    LS_CHECK(s.progress->step >= 0);
    if (s.progress->total_steps) LS_CHECK(*s.progress->total_steps >= 0);
    if (s.progress->percent) LS_CHECK(*s.progress->percent >= 0 && *s.progress->percent <= 100);
    if (s.progress->eta_seconds) LS_CHECK(*s.progress->eta_seconds >= 0);
    if (std::optional<double> ratio = ProgressRatio(*s.progress)) {
      LS_CHECK(*ratio >= 0 && *ratio <= 1);
    }
  }
  if (s.spares) {
    LS_CHECK(s.spares->promotions >= 0 && s.spares->attempt_promotions >= 0 &&
             s.spares->ready >= 0);
    LS_CHECK(s.spares->serving.size() <= b.node_ranks);
    for (const api::SpareServing& e : s.spares->serving) {
      LS_CHECK(e.node_rank >= 0 && static_cast<uint32_t>(e.node_rank) < b.node_ranks);
      LS_CHECK(e.spare_index >= 0 && e.round >= 0);
    }
  }
  if (s.goodput) {
    // Late recoveries (goodput_evidence.h) move time between accounts, never below zero.
    for (int64_t v : {s.goodput->productive_seconds, s.goodput->placement_seconds,
                      s.goodput->startup_seconds, s.goodput->recovery_seconds,
                      s.goodput->recompute_seconds}) {
      LS_CHECK(v >= 0);
    }
    LS_CHECK(s.goodput->ratio >= 0 && s.goodput->ratio <= 1);
  }
  (void)api::EncodeStatus(s);
}

void CheckPlan(const Plan& plan, const ControlBounds& b) {
  CheckStatus(plan.status, b);
  LS_CHECK(plan.launcher_probes.size() <= b.node_ranks);
  LS_CHECK(plan.peer_loss.size() <= b.node_ranks);
}

struct Input {
  int replicas = 1;
  int spares = 0;
  int attempt = 0;
  bool finished = false;
  bool succeeded = false;
  std::optional<int64_t> written_step;
  int now_seconds = 0;
  std::string termination;
  std::string_view answer;
};

Input Read(fuzz::FuzzInput& in) {
  Input x;
  x.replicas = 1 + in.Byte() % 8;
  x.spares = in.Byte() % 3;
  const uint8_t flags = in.Byte();
  x.attempt = flags & 3;
  x.finished = (flags & 4) != 0;
  x.succeeded = (flags & 8) != 0;
  x.now_seconds = in.Byte();
  if ((flags & 16) != 0) {
    uint64_t step = 0;
    for (int i = 0; i < 8; ++i) step = (step << 8) | in.Byte();
    x.written_step = static_cast<int64_t>(step >> 1);  // status.progress.step is >= 0
  }
  const size_t length = (size_t{in.Byte()} << 8) | in.Byte();
  x.termination = std::string(in.Bytes(length));
  x.answer = in.Rest();
  return x;
}

CachedJob MakeJob(const Input& x) {
  CachedJob job = testing::Job(x.replicas);
  job.job.spec.failure_policy.spare_replicas = x.spares;
  job.job.spec.failure_policy.max_restarts = 3;
  job.job.status.attempt = x.attempt;
  job.job.status.replicas = x.replicas;
  api::Condition running;
  running.type = "Running";
  running.status = api::ConditionStatus::kTrue;
  running.last_transition_time = T0();
  job.job.status.conditions.push_back(running);
  if (x.written_step) {
    api::JobProgress p;
    p.step = *x.written_step;
    p.total_steps = std::numeric_limits<int64_t>::max();
    p.last_update = T0();
    job.job.status.progress = p;
  }
  return job;
}

std::vector<kube::Pod> MakePods(const Input& x) {
  std::vector<kube::Pod> pods;
  for (int i = 0; i < x.replicas; ++i) {
    kube::Pod p = InAttempt(Pod("worker", i, "Running", "node-" + std::to_string(i)), x.attempt);
    p.pod_ip = "10.0.0." + std::to_string(i + 1);
    if (i == 0 && x.finished) {
      p.phase = x.succeeded ? "Succeeded" : "Failed";
      p.conditions.clear();
      kube::ContainerStatus c;
      c.name = "trainer";
      c.state = "terminated";
      c.exit_code = x.succeeded ? 0 : 1;
      c.message = x.termination;
      p.container_statuses.push_back(c);
    }
    pods.push_back(std::move(p));
  }
  for (int i = 0; i < x.spares; ++i) {
    kube::Pod p = InAttempt(Pod("spare", i, "Running", "node-s" + std::to_string(i)), x.attempt);
    p.pod_ip = "10.0.1." + std::to_string(i + 1);
    pods.push_back(std::move(p));
  }
  return pods;
}

// Node 0's answer as the operator reads it: its first frame, no longer than the job allows.
LauncherObservation Observe(std::string_view stream, const ControlBounds& bounds,
                            const std::string& pod_uid) {
  LauncherObservation obs;
  obs.pod_uid = pod_uid;
  protocol::FrameDecoder decoder(protocol::MaxControlAnswerFrameBytes(bounds));
  decoder.Append(stream);
  StatusOr<std::optional<protocol::Frame>> frame = decoder.Next();
  if (!frame.ok() || !frame->has_value()) {
    obs.error = frame.ok() ? "no answer" : frame.status().message();
    return obs;
  }
  StatusOr<protocol::ControlReply> reply = protocol::ParseControlAnswer(**frame, bounds);
  // Refused whole: a ControlStatus that decodes but is beyond the job never reaches the plan.
  StatusOr<ControlStatus> unbounded = protocol::Decode<ControlStatus>((*frame)->body);
  const bool status_frame =
      (*frame)->type == static_cast<uint8_t>(protocol::MessageType::kControlStatus);
  if (status_frame && unbounded.ok() && !protocol::CheckControlBounds(*unbounded, bounds).ok()) {
    LS_CHECK(!reply.ok() && reply.status().code() == StatusCode::kOutOfRange);
  }
  if (status_frame && !reply.ok()) LS_CHECK(IsRefusedAnswer(reply.status()));
  if (!reply.ok() || !reply->status) {
    obs.error = reply.ok() ? "not a status" : reply.status().message();
    return obs;
  }
  CheckAccepted(*reply->status, bounds);
  obs.answered = true;
  obs.status = std::move(*reply->status);
  return obs;
}

}  // namespace
}  // namespace lockstep::controller

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::controller;
  lockstep::fuzz::FuzzInput in(data, size);
  const Input x = Read(in);
  CachedJob job = MakeJob(x);
  const lockstep::protocol::ControlBounds bounds = LauncherBounds(job.job);
  Observed observed;
  observed.pods = MakePods(x);
  observed.service_exists = observed.network_policy_exists = true;
  observed.launchers = Observe(x.answer, bounds, observed.pods.front().meta.uid);
  PlanOptions options;
  options.launcher_image = "lockstep/launcher:dev";
  const lockstep::api::Time now = T0() + std::chrono::seconds(x.now_seconds);
  const Plan first = ComputePlan(job, observed, now, /*settled=*/true, options);
  CheckPlan(first, bounds);
  // The next pass reads what this one wrote, with the same answer.
  job.job.status = first.status;
  const Plan second = ComputePlan(job, observed, now + std::chrono::seconds(11), true, options);
  CheckPlan(second, bounds);
  return 0;
}
