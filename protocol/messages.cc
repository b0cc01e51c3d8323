#include "protocol/messages.h"

#include <algorithm>
#include <utility>

namespace lockstep::protocol {

Status WorldMsg::Check() const {
  if (!nccl_id.empty() && nccl_id.size() != kNcclIdBytes) {
    return DataLossError("world: nccl id must be empty or 128 bytes");
  }
  if (group_rank >= nnodes) return DataLossError("world: group rank outside the round");
  if (static_cast<uint64_t>(first_rank) + nproc > world_size) {
    return DataLossError("world: ranks outside the world size");
  }
  if (static_cast<uint64_t>(role_first_rank) + nproc > role_world_size ||
      role_world_size > world_size) {
    return DataLossError("world: role ranks outside the role's size or the world size");
  }
  return Status::Ok();
}

namespace {

// The first value `key` gives twice among `items`, if any; sorts a copy (O(n log n)).
template <typename T, typename Key>
std::optional<uint32_t> FirstRepeat(const std::vector<T>& items, Key key) {
  std::vector<uint32_t> values;
  values.reserve(items.size());
  for (const T& item : items) values.push_back(key(item));
  std::sort(values.begin(), values.end());
  auto it = std::adjacent_find(values.begin(), values.end());
  if (it == values.end()) return std::nullopt;
  return *it;
}

Status OverLimit(const std::string& field, uint64_t value, uint64_t limit) {
  return DataLossError("control status: " + field + " " + std::to_string(value) +
                       " exceeds limit " + std::to_string(limit));
}

}  // namespace

Status ControlStatus::Check() const {
  const std::pair<const char*, uint32_t> counters[] = {
      {"round", round},
      {"failure_restarts", failure_restarts},
      {"requested_restarts", requested_restarts},
      {"promotions", promotions},
      {"last_failure.round", last_failure ? last_failure->round : 0}};
  for (const auto& [field, value] : counters) {
    if (value > kMaxCounter) return OverLimit(field, value, kMaxCounter);
  }
  if (members > kMaxPeers) return OverLimit("members", members, kMaxPeers);
  if (standby_spares > kMaxPeers) return OverLimit("standby_spares", standby_spares, kMaxPeers);
  for (const SpareServing& s : serving) {
    if (s.round > kMaxCounter) return OverLimit("serving.round", s.round, kMaxCounter);
  }
  const std::pair<const char*, uint64_t> times[] = {
      {"last_failure.failed_unix_ms", last_failure ? last_failure->failed_unix_ms : 0},
      {"running_since_unix_ms", running_since_unix_ms}};
  for (const auto& [field, value] : times) {
    if (value > kMaxUnixMs) return OverLimit(field, value, kMaxUnixMs);
  }
  for (const LostMember& l : lost) {
    if (l.round > kMaxCounter) return OverLimit("lost.round", l.round, kMaxCounter);
    if (l.last_heard_unix_ms > kMaxUnixMs) {
      return OverLimit("lost.last_heard_unix_ms", l.last_heard_unix_ms, kMaxUnixMs);
    }
    if (l.lost_unix_ms > kMaxUnixMs) {
      return OverLimit("lost.lost_unix_ms", l.lost_unix_ms, kMaxUnixMs);
    }
  }
  // One entry per node-rank (the server keeps them by node-rank): a repeat is not a server's.
  if (auto r = FirstRepeat(lost, [](const LostMember& l) { return l.node_rank; })) {
    return DataLossError("control status: node rank " + std::to_string(*r) +
                         " is lost more than once");
  }
  if (auto r = FirstRepeat(serving, [](const SpareServing& s) { return s.node_rank; })) {
    return DataLossError("control status: node rank " + std::to_string(*r) +
                         " is served more than once");
  }
  if (auto r = FirstRepeat(serving, [](const SpareServing& s) { return s.spare_index; })) {
    return DataLossError("control status: spare " + std::to_string(*r) +
                         " serves more than one node rank");
  }
  return Status::Ok();
}

namespace {

// Decodes `frame` as the message of AllMessages whose type it names.
template <typename... M>
Status DecodeAnyOf(const Frame& frame, std::tuple<M...>* /*messages*/) {
  Status result = DataLossError("unknown message type " + std::to_string(frame.type));
  (void)((frame.type == static_cast<uint8_t>(M::kType)
              ? (result = Decode<M>(frame.body).status(), true)
              : false) ||
         ...);
  return result;
}

// Two messages sharing a type byte would decode as each other.
template <typename... M>
constexpr bool DistinctTypes(std::tuple<M...>* /*messages*/) {
  const uint8_t types[] = {static_cast<uint8_t>(M::kType)...};
  for (size_t i = 0; i < sizeof...(M); ++i) {
    for (size_t j = i + 1; j < sizeof...(M); ++j) {
      if (types[i] == types[j]) return false;
    }
  }
  return true;
}
static_assert(DistinctTypes(static_cast<AllMessages*>(nullptr)),
              "two messages in AllMessages share a MessageType");

}  // namespace

Status DecodeAny(const Frame& frame) {
  return DecodeAnyOf(frame, static_cast<AllMessages*>(nullptr));
}

}  // namespace lockstep::protocol
