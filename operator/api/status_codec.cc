// TrainingJobStatus <-> JSON (see codec.h).

#include "operator/api/codec.h"

#include <algorithm>
#include <limits>

#include "operator/api/conditions.h"
#include "operator/api/json_fields.h"
#include "operator/api/time.h"

namespace lockstep::api {

using internal::IndexPath;
using internal::Member;
using internal::MissingError;
using internal::ForEachElement;
using internal::ReadEnum;
using internal::ReadInt32;
using internal::ReadInt64;
using internal::ReadOptTime;
using internal::ReadString;
using internal::ReadStringList;
using internal::TypeError;
using nlohmann::json;

namespace {

// One lenient decode: each read fills its field or adds why not to the errors, and the decode
// goes on with the next field.
class Reads {
 public:
  explicit Reads(std::vector<std::string>* errors) : errors_(errors) {}
  bool operator()(const Status& s) {
    if (s.ok()) return true;
    errors_->push_back(s.message());
    return false;
  }

 private:
  std::vector<std::string>* errors_;
};

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

// A condition that cannot be read is left out of `out` and kept, as stored, in `unread`.
void DecodeConditions(const json& status, TrainingJobStatus* out, std::vector<json>* unread,
                      Reads& reads) {
  const json* list = Member(status, "conditions");
  if (list == nullptr) return;
  if (!list->is_array()) {
    reads(TypeError("status.conditions", "an array", *list));
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    Condition condition;
    if (reads(DecodeCondition((*list)[i], IndexPath("status.conditions", i), &condition))) {
      out->conditions.push_back(std::move(condition));
    } else {
      unread->push_back((*list)[i]);
    }
  }
}

void DecodeRestarts(const json& status, TrainingJobStatus* out, Reads& reads) {
  if (const json* r = Member(status, "restarts")) {
    const std::string path = "status.restarts";
    if (!r->is_object()) {
      reads(TypeError(path, "an object", *r));
    } else {
      reads(ReadInt32(*r, "failures", path, &out->restarts.failures));
      reads(ReadInt32(*r, "disruptions", path, &out->restarts.disruptions));
      reads(ReadInt32(*r, "consecutive", path, &out->restarts.consecutive));
      reads(ReadInt32(*r, "inPlace", path, &out->restarts.in_place));
    }
  }
  if (const json* l = Member(status, "lastRestart")) {
    const std::string path = "status.lastRestart";
    if (!l->is_object()) {
      reads(TypeError(path, "an object", *l));
      return;
    }
    LastRestart last;
    std::optional<Time> when;
    reads(ReadOptTime(*l, "time", path, &when));
    if (when) last.time = *when;
    reads(ReadString(*l, "reason", path, &last.reason));
    reads(ReadString(*l, "message", path, &last.message));
    reads(ReadInt32(*l, "attempt", path, &last.attempt));
    reads(ReadInt32(*l, "backoffSeconds", path, &last.backoff_seconds));
    if (Member(*l, "mode") != nullptr) {
      RestartMode mode = RestartMode::kRecreate;
      if (reads(ReadEnum(*l, "mode", path, &ParseRestartMode, &mode))) last.mode = mode;
    }
    reads(ReadStringList(*l, "nodes", path, &last.nodes));
    out->last_restart = std::move(last);
  }
}

void DecodeInPlace(const json& status, TrainingJobStatus* out, Reads& reads) {
  if (const json* r = Member(status, "rendezvous")) {
    const std::string path = "status.rendezvous";
    if (!r->is_object()) {
      reads(TypeError(path, "an object", *r));
    } else {
      RendezvousStatus rdzv;
      reads(ReadInt32(*r, "attempt", path, &rdzv.attempt));
      reads(ReadInt32(*r, "round", path, &rdzv.round));
      reads(ReadInt32(*r, "failureRestarts", path, &rdzv.failure_restarts));
      reads(ReadInt32(*r, "requestedRestarts", path, &rdzv.requested_restarts));
      out->rendezvous = rdzv;
    }
  }
  if (const json* q = Member(status, "restartRequest")) {
    const std::string path = "status.restartRequest";
    if (!q->is_object()) {
      reads(TypeError(path, "an object", *q));
      return;
    }
    RestartRequestStatus request;
    reads(ReadString(*q, "value", path, &request.value));
    std::optional<Time> when;
    reads(ReadOptTime(*q, "time", path, &when));
    if (when) request.time = *when;
    reads(ReadEnum(*q, "mode", path, &ParseRestartMode, &request.mode));
    reads(ReadEnum(*q, "state", path, &ParseRestartRequestState, &request.state));
    reads(ReadInt32(*q, "attempt", path, &request.attempt));
    if (Member(*q, "round") != nullptr) reads(ReadInt32(*q, "round", path, &request.round));
    out->restart_request = std::move(request);
  }
}

Status DecodeExcludedNode(const json& e, const std::string& path, ExcludedNode* node) {
  if (!e.is_object()) return TypeError(path, "an object", e);
  LS_RETURN_IF_ERROR(ReadString(e, "name", path, &node->name));
  if (node->name.empty()) return MissingError(path + ".name");
  LS_RETURN_IF_ERROR(ReadString(e, "reason", path, &node->reason));
  std::optional<Time> until;
  LS_RETURN_IF_ERROR(ReadOptTime(e, "until", path, &until));
  if (until) node->until = *until;
  return Status::Ok();
}

void DecodeExcludedNodes(const json& status, TrainingJobStatus* out, Reads& reads) {
  const json* list = Member(status, "excludedNodes");
  if (list == nullptr) return;
  if (!list->is_array()) {
    reads(TypeError("status.excludedNodes", "an array", *list));
    return;
  }
  for (size_t i = 0; i < list->size(); ++i) {
    ExcludedNode node;
    if (reads(DecodeExcludedNode((*list)[i], IndexPath("status.excludedNodes", i), &node))) {
      out->excluded_nodes.push_back(std::move(node));
    }
  }
}

void DecodeCapacity(const json& status, TrainingJobStatus* out, Reads& reads) {
  const json* c = Member(status, "capacity");
  if (c == nullptr) return;
  if (!c->is_object()) {
    reads(TypeError("status.capacity", "an object", *c));
    return;
  }
  Capacity capacity;
  reads(ReadInt32(*c, "feasibleReplicas", "status.capacity", &capacity.feasible_replicas));
  std::optional<Time> when;
  reads(ReadOptTime(*c, "observedTime", "status.capacity", &when));
  if (when) capacity.observed_time = *when;
  out->capacity = capacity;
}

// A JSON number >= 0 (status.progress.samplesPerSecond), absent or null: nullopt.
Status ReadOptNonNegativeNumber(const json& obj, const char* key, const std::string& path,
                                std::optional<double>* out) {
  const json* v = Member(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (!v->is_number() || v->get<double>() < 0) {
    return TypeError(path + "." + key, "a number >= 0", *v);
  }
  *out = v->get<double>();
  return Status::Ok();
}

void DecodeProgress(const json& status, TrainingJobStatus* out, Reads& reads) {
  const json* p = Member(status, "progress");
  if (p == nullptr || p->is_null()) return;
  const std::string path = "status.progress";
  if (!p->is_object()) {
    reads(TypeError(path, "an object", *p));
    return;
  }
  JobProgress progress;
  bool ok = reads(ReadInt64(*p, "step", path, &progress.step));
  ok = reads(internal::ReadOptInt64(*p, "totalSteps", path, &progress.total_steps)) && ok;
  ok = reads(internal::ReadOptInt32(*p, "percent", path, &progress.percent)) && ok;
  ok = reads(ReadOptNonNegativeNumber(*p, "samplesPerSecond", path,
                                      &progress.samples_per_second)) &&
       ok;
  ok = reads(internal::ReadOptInt64(*p, "etaSeconds", path, &progress.eta_seconds)) && ok;
  ok = reads(internal::ReadOptInt64(*p, "checkpointStep", path, &progress.checkpoint_step)) && ok;
  std::optional<Time> when;
  ok = reads(ReadOptTime(*p, "lastUpdate", path, &when)) && ok;
  if (when) progress.last_update = *when;
  if (ok) out->progress = progress;
}

// A count of seconds that saturates instead of failing: goodput's sums are the operator's own
// arithmetic, and a value too large for int64 reads as INT64_MAX. Negative values are kept (the
// core reads them as 0). Absent: 0.
Status ReadSaturatedInt64(const json& obj, const char* key, const std::string& path,
                          int64_t* out) {
  const json* v = Member(obj, key);
  if (v == nullptr || v->is_null()) return Status::Ok();
  if (v->is_number_unsigned() &&
      v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    *out = std::numeric_limits<int64_t>::max();
    return Status::Ok();
  }
  if (v->is_number_integer()) {
    *out = v->get<int64_t>();
    return Status::Ok();
  }
  if (v->is_number_float()) {
    const double d = v->get<double>();
    constexpr double kTwo63 = 9223372036854775808.0;
    if (d >= kTwo63) {
      *out = std::numeric_limits<int64_t>::max();
    } else if (d <= -kTwo63) {
      *out = std::numeric_limits<int64_t>::min();
    } else if (d == d) {
      *out = static_cast<int64_t>(d);
    }
    return Status::Ok();
  }
  return TypeError(path + "." + key, "an integer", *v);
}

Status DecodeGoodputFields(const json& g, const std::string& path, JobGoodput* out) {
  if (!g.is_object()) return TypeError(path, "an object", g);
  std::optional<double> ratio;
  LS_RETURN_IF_ERROR(ReadOptNonNegativeNumber(g, "ratio", path, &ratio));
  out->ratio = ratio.value_or(0);
  LS_RETURN_IF_ERROR(internal::ReadInt32(g, "percent", path, &out->percent));
  LS_RETURN_IF_ERROR(ReadSaturatedInt64(g, "productiveSeconds", path, &out->productive_seconds));
  LS_RETURN_IF_ERROR(ReadSaturatedInt64(g, "placementSeconds", path, &out->placement_seconds));
  LS_RETURN_IF_ERROR(ReadSaturatedInt64(g, "startupSeconds", path, &out->startup_seconds));
  LS_RETURN_IF_ERROR(ReadSaturatedInt64(g, "recoverySeconds", path, &out->recovery_seconds));
  LS_RETURN_IF_ERROR(ReadSaturatedInt64(g, "recomputeSeconds", path, &out->recompute_seconds));
  LS_RETURN_IF_ERROR(ForEachElement(
      g, "recoveryByCause", path, [out](const json& e, const std::string& p) {
        GoodputCause c;
        if (!e.is_object()) return TypeError(p, "an object", e);
        LS_RETURN_IF_ERROR(ReadString(e, "cause", p, &c.cause));
        LS_RETURN_IF_ERROR(ReadSaturatedInt64(e, "seconds", p, &c.seconds));
        out->recovery_by_cause.push_back(std::move(c));
        return Status::Ok();
      }));
  LS_RETURN_IF_ERROR(ReadOptNonNegativeNumber(g, "stepSeconds", path, &out->step_seconds));
  std::optional<Time> when;
  LS_RETURN_IF_ERROR(ReadOptTime(g, "updatedAt", path, &when));
  if (!when) return MissingError(path + ".updatedAt");
  out->updated_at = *when;
  return Status::Ok();
}

// status.goodput is the operator's own account, not something it acts on: one it cannot read
// is dropped (the account starts again) instead of stalling the job as an unreadable status.
void DecodeGoodput(const json& status, TrainingJobStatus* out) {
  const json* g = Member(status, "goodput");
  if (g == nullptr || g->is_null()) return;
  JobGoodput goodput;
  if (DecodeGoodputFields(*g, "status.goodput", &goodput).ok()) out->goodput = std::move(goodput);
}

void DecodeSpares(const json& status, TrainingJobStatus* out, Reads& reads) {
  const json* s = Member(status, "spares");
  if (s == nullptr || s->is_null()) return;
  const std::string path = "status.spares";
  if (!s->is_object()) {
    reads(TypeError(path, "an object", *s));
    return;
  }
  SpareStatus spares;
  bool ok = reads(ReadInt32(*s, "desired", path, &spares.desired));
  ok = reads(ReadInt32(*s, "ready", path, &spares.ready)) && ok;
  ok = reads(ReadInt32(*s, "promotions", path, &spares.promotions)) && ok;
  ok = reads(ReadInt32(*s, "attempt", path, &spares.attempt)) && ok;
  ok = reads(ReadInt32(*s, "attemptPromotions", path, &spares.attempt_promotions)) && ok;
  ok = reads(ForEachElement(*s, "serving", path, [&spares](const json& e, const std::string& p) {
         SpareServing serving;
         if (!e.is_object()) return TypeError(p, "an object", e);
         LS_RETURN_IF_ERROR(ReadInt32(e, "nodeRank", p, &serving.node_rank));
         LS_RETURN_IF_ERROR(ReadInt32(e, "spareIndex", p, &serving.spare_index));
         LS_RETURN_IF_ERROR(ReadString(e, "pod", p, &serving.pod));
         LS_RETURN_IF_ERROR(ReadInt32(e, "round", p, &serving.round));
         spares.serving.push_back(std::move(serving));
         return Status::Ok();
       })) && ok;
  if (ok) out->spares = std::move(spares);
}

void DecodeScalars(const json& status, TrainingJobStatus* out, Reads& reads) {
  reads(ReadInt64(status, "observedGeneration", "status", &out->observed_generation));
  if (Member(status, "state") != nullptr) {
    JobState state = JobState::kPending;
    if (reads(ReadEnum(status, "state", "status", &ParseJobState, &state))) out->state = state;
  }
  reads(ReadString(status, "reason", "status", &out->reason));
  reads(ReadString(status, "message", "status", &out->message));
  reads(ReadInt32(status, "replicas", "status", &out->replicas));
  reads(ReadInt32(status, "readyReplicas", "status", &out->ready_replicas));
  reads(ReadString(status, "workersReady", "status", &out->workers_ready));
  reads(ReadString(status, "selector", "status", &out->selector));
  reads(ReadInt32(status, "attempt", "status", &out->attempt));
  reads(ReadOptTime(status, "startTime", "status", &out->start_time));
  reads(ReadOptTime(status, "completionTime", "status", &out->completion_time));
}

}  // namespace

TrainingJobStatus DecodeStatusPartial(const json& status, UnreadStatus* unread) {
  TrainingJobStatus out;
  *unread = UnreadStatus{};
  if (status.is_null()) return out;
  Reads reads(&unread->errors);
  if (!status.is_object()) {
    reads(TypeError("status", "an object", status));
    return out;
  }
  DecodeScalars(status, &out, reads);
  DecodeConditions(status, &out, &unread->conditions, reads);
  DecodeRestarts(status, &out, reads);
  DecodeInPlace(status, &out, reads);
  DecodeExcludedNodes(status, &out, reads);
  DecodeCapacity(status, &out, reads);
  DecodeProgress(status, &out, reads);
  DecodeSpares(status, &out, reads);
  DecodeGoodput(status, &out);
  reads(DecodeResolvedTemplate(status, &out.resolved_template));
  return out;
}

StatusOr<TrainingJobStatus> DecodeStatus(const json& status) {
  UnreadStatus unread;
  TrainingJobStatus out = DecodeStatusPartial(status, &unread);
  if (!unread.errors.empty()) return InvalidArgumentError(unread.errors.front());
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

std::string DisplayState(const TrainingJobStatus& s) {
  if (!s.state) return "";
  const bool starting = *s.state == JobState::kPending || *s.state == JobState::kScheduling ||
                        *s.state == JobState::kRestarting;
  const Condition* failing = FindCondition(s.conditions, kConditionStartupFailing);
  if (starting && failing != nullptr && failing->status == ConditionStatus::kTrue &&
      !failing->reason.empty()) {
    return failing->reason;
  }
  return std::string(ToString(*s.state));
}

json EncodeProgress(const JobProgress& p) {
  json out = {{"step", p.step}, {"lastUpdate", FormatTime(p.last_update)}};
  if (p.total_steps) out["totalSteps"] = *p.total_steps;
  if (p.percent) out["percent"] = *p.percent;
  if (p.samples_per_second) out["samplesPerSecond"] = *p.samples_per_second;
  if (p.eta_seconds) out["etaSeconds"] = *p.eta_seconds;
  if (p.checkpoint_step) out["checkpointStep"] = *p.checkpoint_step;
  return out;
}

json EncodeGoodput(const JobGoodput& g) {
  json causes = json::array();
  for (const GoodputCause& c : g.recovery_by_cause) {
    causes.push_back({{"cause", c.cause}, {"seconds", c.seconds}});
  }
  json out = {{"ratio", g.ratio},
              {"percent", g.percent},
              {"productiveSeconds", g.productive_seconds},
              {"placementSeconds", g.placement_seconds},
              {"startupSeconds", g.startup_seconds},
              {"recoverySeconds", g.recovery_seconds},
              {"recoveryByCause", std::move(causes)},
              {"recomputeSeconds", g.recompute_seconds},
              {"updatedAt", FormatTime(g.updated_at)}};
  if (g.step_seconds) out["stepSeconds"] = *g.step_seconds;
  return out;
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
  if (s.state) out["displayState"] = DisplayState(s);
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
  if (s.progress) out["progress"] = EncodeProgress(*s.progress);
  if (s.spares) {
    json serving = json::array();
    for (const SpareServing& e : s.spares->serving) {
      serving.push_back({{"nodeRank", e.node_rank},
                         {"spareIndex", e.spare_index},
                         {"pod", e.pod},
                         {"round", e.round}});
    }
    out["spares"] = {{"desired", s.spares->desired},
                     {"ready", s.spares->ready},
                     {"promotions", s.spares->promotions},
                     {"attempt", s.spares->attempt},
                     {"attemptPromotions", s.spares->attempt_promotions},
                     {"serving", std::move(serving)}};
  }
  if (s.goodput) out["goodput"] = EncodeGoodput(*s.goodput);
  if (s.resolved_template) out["resolvedTemplate"] = EncodeResolvedTemplate(*s.resolved_template);
  // status.capacity belongs to the scheduler (server-side apply); EncodeStatus leaves it out so
  // the controller's merge patch never takes it over. EncodeCapacity writes it.
  return out;
}

json EncodeCapacity(const Capacity& c) {
  return {{"feasibleReplicas", c.feasible_replicas},
          {"observedTime", FormatTime(c.observed_time)}};
}

}  // namespace lockstep::api
