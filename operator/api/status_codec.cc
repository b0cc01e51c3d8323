// TrainingJobStatus <-> JSON (see codec.h).

#include "operator/api/codec.h"

#include <algorithm>
#include <limits>

#include "operator/api/json_fields.h"
#include "operator/api/time.h"

namespace lockstep::api {

using internal::ForEachElement;
using internal::Member;
using internal::MissingError;
using internal::ReadEnum;
using internal::ReadInt32;
using internal::ReadInt64;
using internal::ReadOptTime;
using internal::ReadString;
using internal::ReadStringList;
using internal::TypeError;
using nlohmann::json;

namespace {

Status DecodeCondition(const json& c, const std::string& path, Condition* out) {
  if (!c.is_object()) return TypeError(path, "an object", c);
  LS_RETURN_IF_ERROR(ReadString(c, "type", path, &out->type));
  if (out->type.empty()) return MissingError(path + ".type");
  LS_RETURN_IF_ERROR(ReadEnum(c, "status", path, &ParseConditionStatus, &out->status));
  LS_RETURN_IF_ERROR(ReadInt64(c, "observedGeneration", path, &out->observed_generation));
  std::optional<Time> when;
  LS_RETURN_IF_ERROR(ReadOptTime(c, "lastTransitionTime", path, &when));
  if (when) out->last_transition_time = *when;
  LS_RETURN_IF_ERROR(ReadString(c, "reason", path, &out->reason));
  return ReadString(c, "message", path, &out->message);
}

Status DecodeRestarts(const json& status, TrainingJobStatus* out) {
  if (const json* r = Member(status, "restarts")) {
    if (!r->is_object()) return TypeError("status.restarts", "an object", *r);
    LS_RETURN_IF_ERROR(ReadInt32(*r, "failures", "status.restarts", &out->restarts.failures));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "disruptions", "status.restarts", &out->restarts.disruptions));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "consecutive", "status.restarts", &out->restarts.consecutive));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "inPlace", "status.restarts", &out->restarts.in_place));
  }
  if (const json* l = Member(status, "lastRestart")) {
    if (!l->is_object()) return TypeError("status.lastRestart", "an object", *l);
    LastRestart last;
    std::optional<Time> when;
    LS_RETURN_IF_ERROR(ReadOptTime(*l, "time", "status.lastRestart", &when));
    if (when) last.time = *when;
    LS_RETURN_IF_ERROR(ReadString(*l, "reason", "status.lastRestart", &last.reason));
    LS_RETURN_IF_ERROR(ReadString(*l, "message", "status.lastRestart", &last.message));
    LS_RETURN_IF_ERROR(ReadInt32(*l, "attempt", "status.lastRestart", &last.attempt));
    LS_RETURN_IF_ERROR(
        ReadInt32(*l, "backoffSeconds", "status.lastRestart", &last.backoff_seconds));
    if (Member(*l, "mode") != nullptr) {
      RestartMode mode = RestartMode::kRecreate;
      LS_RETURN_IF_ERROR(ReadEnum(*l, "mode", "status.lastRestart", &ParseRestartMode, &mode));
      last.mode = mode;
    }
    LS_RETURN_IF_ERROR(ReadStringList(*l, "nodes", "status.lastRestart", &last.nodes));
    out->last_restart = std::move(last);
  }
  return Status::Ok();
}

Status DecodeInPlace(const json& status, TrainingJobStatus* out) {
  if (const json* r = Member(status, "rendezvous")) {
    const std::string path = "status.rendezvous";
    if (!r->is_object()) return TypeError(path, "an object", *r);
    RendezvousStatus rdzv;
    LS_RETURN_IF_ERROR(ReadInt32(*r, "attempt", path, &rdzv.attempt));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "round", path, &rdzv.round));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "failureRestarts", path, &rdzv.failure_restarts));
    LS_RETURN_IF_ERROR(ReadInt32(*r, "requestedRestarts", path, &rdzv.requested_restarts));
    out->rendezvous = rdzv;
  }
  if (const json* q = Member(status, "restartRequest")) {
    const std::string path = "status.restartRequest";
    if (!q->is_object()) return TypeError(path, "an object", *q);
    RestartRequestStatus request;
    LS_RETURN_IF_ERROR(ReadString(*q, "value", path, &request.value));
    std::optional<Time> when;
    LS_RETURN_IF_ERROR(ReadOptTime(*q, "time", path, &when));
    if (when) request.time = *when;
    LS_RETURN_IF_ERROR(ReadEnum(*q, "mode", path, &ParseRestartMode, &request.mode));
    LS_RETURN_IF_ERROR(ReadEnum(*q, "state", path, &ParseRestartRequestState, &request.state));
    LS_RETURN_IF_ERROR(ReadInt32(*q, "attempt", path, &request.attempt));
    if (Member(*q, "round") != nullptr) {
      LS_RETURN_IF_ERROR(ReadInt32(*q, "round", path, &request.round));
    }
    out->restart_request = std::move(request);
  }
  return Status::Ok();
}

Status DecodeExcludedNodes(const json& status, TrainingJobStatus* out) {
  auto decode = [out](const json& e, const std::string& path) {
    if (!e.is_object()) return TypeError(path, "an object", e);
    ExcludedNode node;
    LS_RETURN_IF_ERROR(ReadString(e, "name", path, &node.name));
    if (node.name.empty()) return MissingError(path + ".name");
    LS_RETURN_IF_ERROR(ReadString(e, "reason", path, &node.reason));
    std::optional<Time> until;
    LS_RETURN_IF_ERROR(ReadOptTime(e, "until", path, &until));
    if (until) node.until = *until;
    out->excluded_nodes.push_back(std::move(node));
    return Status::Ok();
  };
  return ForEachElement(status, "excludedNodes", "status", decode);
}

Status DecodeCapacity(const json& status, TrainingJobStatus* out) {
  const json* c = Member(status, "capacity");
  if (c == nullptr) return Status::Ok();
  if (!c->is_object()) return TypeError("status.capacity", "an object", *c);
  Capacity capacity;
  LS_RETURN_IF_ERROR(
      ReadInt32(*c, "feasibleReplicas", "status.capacity", &capacity.feasible_replicas));
  std::optional<Time> when;
  LS_RETURN_IF_ERROR(ReadOptTime(*c, "observedTime", "status.capacity", &when));
  if (when) capacity.observed_time = *when;
  out->capacity = capacity;
  return Status::Ok();
}

}  // namespace

StatusOr<TrainingJobStatus> DecodeStatus(const json& status) {
  TrainingJobStatus out;
  if (status.is_null()) return out;
  if (!status.is_object()) return TypeError("status", "an object", status);
  LS_RETURN_IF_ERROR(ReadInt64(status, "observedGeneration", "status", &out.observed_generation));
  if (Member(status, "state") != nullptr) {
    JobState state = JobState::kPending;
    LS_RETURN_IF_ERROR(ReadEnum(status, "state", "status", &ParseJobState, &state));
    out.state = state;
  }
  LS_RETURN_IF_ERROR(ReadString(status, "reason", "status", &out.reason));
  LS_RETURN_IF_ERROR(ReadString(status, "message", "status", &out.message));
  auto decode_condition = [&out](const json& c, const std::string& path) {
    Condition condition;
    LS_RETURN_IF_ERROR(DecodeCondition(c, path, &condition));
    out.conditions.push_back(std::move(condition));
    return Status::Ok();
  };
  LS_RETURN_IF_ERROR(ForEachElement(status, "conditions", "status", decode_condition));
  LS_RETURN_IF_ERROR(ReadInt32(status, "replicas", "status", &out.replicas));
  LS_RETURN_IF_ERROR(ReadInt32(status, "readyReplicas", "status", &out.ready_replicas));
  LS_RETURN_IF_ERROR(ReadString(status, "workersReady", "status", &out.workers_ready));
  LS_RETURN_IF_ERROR(ReadString(status, "selector", "status", &out.selector));
  LS_RETURN_IF_ERROR(ReadInt32(status, "attempt", "status", &out.attempt));
  LS_RETURN_IF_ERROR(DecodeRestarts(status, &out));
  LS_RETURN_IF_ERROR(ReadOptTime(status, "startTime", "status", &out.start_time));
  LS_RETURN_IF_ERROR(ReadOptTime(status, "completionTime", "status", &out.completion_time));
  LS_RETURN_IF_ERROR(DecodeInPlace(status, &out));
  LS_RETURN_IF_ERROR(DecodeExcludedNodes(status, &out));
  LS_RETURN_IF_ERROR(DecodeCapacity(status, &out));
  return out;
}

json EncodeCondition(const Condition& c) {
  json out = {{"type", c.type},
              {"status", ToString(c.status)},
              {"lastTransitionTime", FormatTime(c.last_transition_time)},
              {"reason", c.reason},
              {"message", c.message}};
  if (c.observed_generation != 0) out["observedGeneration"] = c.observed_generation;
  return out;
}

int32_t TotalRestarts(const TrainingJobStatus& s) {
  const int64_t total = int64_t{std::max(s.attempt, 0)} + std::max(s.restarts.in_place, 0);
  return static_cast<int32_t>(std::min<int64_t>(total, std::numeric_limits<int32_t>::max()));
}

json EncodeStatus(const TrainingJobStatus& s) {
  json out = {
      {"observedGeneration", s.observed_generation},
      {"replicas", s.replicas},
      {"readyReplicas", s.ready_replicas},
      {"attempt", s.attempt},
      {"restarts",
       {{"failures", s.restarts.failures},
        {"disruptions", s.restarts.disruptions},
        {"consecutive", s.restarts.consecutive},
        {"inPlace", s.restarts.in_place},
        {"total", TotalRestarts(s)}}}};
  if (s.state) out["state"] = ToString(*s.state);
  if (!s.reason.empty()) out["reason"] = s.reason;
  if (!s.message.empty()) out["message"] = s.message;
  if (!s.workers_ready.empty()) out["workersReady"] = s.workers_ready;
  if (!s.selector.empty()) out["selector"] = s.selector;
  // Always written (possibly empty) so a merge patch of the whole status replaces the list.
  out["conditions"] = json::array();
  for (const Condition& c : s.conditions) out["conditions"].push_back(EncodeCondition(c));
  if (s.start_time) out["startTime"] = FormatTime(*s.start_time);
  if (s.completion_time) out["completionTime"] = FormatTime(*s.completion_time);
  if (s.last_restart) {
    out["lastRestart"] = {{"time", FormatTime(s.last_restart->time)},
                          {"reason", s.last_restart->reason},
                          {"message", s.last_restart->message},
                          {"attempt", s.last_restart->attempt},
                          {"backoffSeconds", s.last_restart->backoff_seconds}};
    if (s.last_restart->mode) out["lastRestart"]["mode"] = ToString(*s.last_restart->mode);
    if (!s.last_restart->nodes.empty()) out["lastRestart"]["nodes"] = s.last_restart->nodes;
  }
  if (s.rendezvous) {
    out["rendezvous"] = {{"attempt", s.rendezvous->attempt},
                         {"round", s.rendezvous->round},
                         {"failureRestarts", s.rendezvous->failure_restarts},
                         {"requestedRestarts", s.rendezvous->requested_restarts}};
  }
  if (s.restart_request) {
    const RestartRequestStatus& q = *s.restart_request;
    out["restartRequest"] = {{"value", q.value},
                             {"time", FormatTime(q.time)},
                             {"mode", ToString(q.mode)},
                             {"state", ToString(q.state)},
                             {"attempt", q.attempt}};
    if (q.round >= 0) out["restartRequest"]["round"] = q.round;
  }
  // Always written (possibly empty), like conditions, so a merge patch replaces the list.
  out["excludedNodes"] = json::array();
  for (const ExcludedNode& e : s.excluded_nodes) {
    out["excludedNodes"].push_back(
        {{"name", e.name}, {"reason", e.reason}, {"until", FormatTime(e.until)}});
  }
  // status.capacity belongs to the scheduler (server-side apply); EncodeStatus leaves it out so
  // the controller's merge patch never takes it over. EncodeCapacity writes it.
  return out;
}

json EncodeCapacity(const Capacity& c) {
  return {{"feasibleReplicas", c.feasible_replicas},
          {"observedTime", FormatTime(c.observed_time)}};
}

}  // namespace lockstep::api
