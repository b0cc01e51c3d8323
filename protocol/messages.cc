#include "protocol/messages.h"

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
