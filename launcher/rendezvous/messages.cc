#include "launcher/rendezvous/messages.h"

#include <algorithm>

#include "launcher/rendezvous/control.h"
#include "launcher/rendezvous/wire.h"

namespace lockstep::launcher::rendezvous {
namespace {

std::string Framed(MessageType type, WireWriter& w) {
  return EncodeFrame(static_cast<uint8_t>(type), w.data());
}

Status GetFixed(WireReader& r, size_t n, std::string* out, const char* what) {
  LS_RETURN_IF_ERROR(r.GetString(out, static_cast<uint32_t>(n)));
  if (out->size() != n) {
    return DataLossError(std::string(what) + " must be " + std::to_string(n) + " bytes");
  }
  return Status::Ok();
}

void PutPeer(WireWriter& w, const PeerEntry& p) {
  w.PutU32(p.group_rank);
  w.PutU32(p.node_rank);
  w.PutString(p.role);
  w.PutU32(p.role_index);
  w.PutString(p.host);
  w.PutU32(p.port);
  w.PutU32(p.nproc);
  w.PutU32(p.first_rank);
}

Status GetPeer(WireReader& r, PeerEntry* p) {
  LS_RETURN_IF_ERROR(r.GetU32(&p->group_rank));
  LS_RETURN_IF_ERROR(r.GetU32(&p->node_rank));
  LS_RETURN_IF_ERROR(r.GetString(&p->role));
  LS_RETURN_IF_ERROR(r.GetU32(&p->role_index));
  LS_RETURN_IF_ERROR(r.GetString(&p->host));
  LS_RETURN_IF_ERROR(r.GetU32(&p->port));
  LS_RETURN_IF_ERROR(r.GetU32(&p->nproc));
  return r.GetU32(&p->first_rank);
}

}  // namespace

void PutStderrTail(WireWriter& w, const std::vector<std::string>& tail) {
  const size_t lines = std::min<size_t>(tail.size(), kMaxTailLines);
  w.PutU32(static_cast<uint32_t>(lines));
  for (size_t i = tail.size() - lines; i < tail.size(); ++i) {
    w.PutString(std::string_view(tail[i]).substr(0, kMaxTailLineBytes));
  }
}

Status GetStderrTail(WireReader& r, std::vector<std::string>* tail) {
  uint32_t lines = 0;
  LS_RETURN_IF_ERROR(r.GetU32(&lines));
  if (lines > kMaxTailLines) return DataLossError("too many stderr lines");
  tail->resize(lines);
  for (std::string& line : *tail) {
    LS_RETURN_IF_ERROR(r.GetString(&line, static_cast<uint32_t>(kMaxTailLineBytes)));
  }
  return Status::Ok();
}

std::string Encode(const Challenge& m) {
  WireWriter w;
  w.PutU32(m.version);
  w.PutString(m.nonce);
  return Framed(MessageType::kChallenge, w);
}

std::string Encode(const Join& m) {
  WireWriter w;
  w.PutU32(m.version);
  w.PutString(m.run_id);
  w.PutU32(m.attempt);
  w.PutU32(m.node_rank);
  w.PutString(m.role);
  w.PutU32(m.role_index);
  w.PutString(m.host);
  w.PutU32(m.port);
  w.PutU32(m.nproc);
  w.PutU8(m.want_peer_table ? 1 : 0);
  w.PutString(m.mac);
  return Framed(MessageType::kJoin, w);
}

std::string Encode(const Refuse& m) {
  WireWriter w;
  w.PutU8(static_cast<uint8_t>(m.code));
  w.PutString(m.reason);
  return Framed(MessageType::kRefuse, w);
}

std::string Encode(const PeerTable& m) {
  WireWriter w;
  w.PutU32(static_cast<uint32_t>(m.peers.size()));
  for (const PeerEntry& p : m.peers) PutPeer(w, p);
  return Framed(MessageType::kPeerTable, w);
}

std::string Encode(const WorldMsg& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  w.PutU32(m.group_rank);
  w.PutU32(m.nnodes);
  w.PutU32(m.world_size);
  w.PutU32(m.first_rank);
  w.PutU32(m.nproc);
  w.PutString(m.master_host);
  w.PutString(m.nccl_id);
  w.PutU32(m.role_first_rank);
  w.PutU32(m.role_world_size);
  return Framed(MessageType::kWorld, w);
}

std::string Encode(const Heartbeat& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  return Framed(MessageType::kHeartbeat, w);
}

std::string Encode(const Failure& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  w.PutI32(m.rank);
  w.PutI32(m.exit_code);
  w.PutI32(m.signal);
  w.PutString(m.reason);
  w.PutString(m.message);
  PutStderrTail(w, m.stderr_tail);
  return Framed(MessageType::kFailure, w);
}

std::string Encode(const Done& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  w.PutU8(m.ends_job ? 1 : 0);
  return Framed(MessageType::kDone, w);
}

std::string Encode(const Abort& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  w.PutString(m.reason);
  w.PutI32(m.node_rank);
  w.PutString(m.message);
  w.PutU8(m.restartable ? 1 : 0);
  return Framed(MessageType::kAbort, w);
}

StatusOr<Challenge> DecodeChallenge(std::string_view body) {
  WireReader r(body);
  Challenge m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.version));
  LS_RETURN_IF_ERROR(GetFixed(r, kNonceBytes, &m.nonce, "nonce"));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Join> DecodeJoin(std::string_view body) {
  WireReader r(body);
  Join m;
  uint8_t want = 0;
  LS_RETURN_IF_ERROR(r.GetU32(&m.version));
  LS_RETURN_IF_ERROR(r.GetString(&m.run_id));
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.GetU32(&m.node_rank));
  LS_RETURN_IF_ERROR(r.GetString(&m.role));
  LS_RETURN_IF_ERROR(r.GetU32(&m.role_index));
  LS_RETURN_IF_ERROR(r.GetString(&m.host));
  LS_RETURN_IF_ERROR(r.GetU32(&m.port));
  LS_RETURN_IF_ERROR(r.GetU32(&m.nproc));
  LS_RETURN_IF_ERROR(r.GetU8(&want));
  if (want > 1) return DataLossError("join: bad want_peer_table flag");
  m.want_peer_table = want == 1;
  LS_RETURN_IF_ERROR(GetFixed(r, kMacBytes, &m.mac, "mac"));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Refuse> DecodeRefuse(std::string_view body) {
  WireReader r(body);
  Refuse m;
  uint8_t code = 0;
  LS_RETURN_IF_ERROR(r.GetU8(&code));
  if (code < static_cast<uint8_t>(RefuseCode::kBadToken) ||
      code > static_cast<uint8_t>(RefuseCode::kRoundClosed)) {
    return DataLossError("refuse: unknown code " + std::to_string(code));
  }
  m.code = static_cast<RefuseCode>(code);
  LS_RETURN_IF_ERROR(r.GetString(&m.reason));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<PeerTable> DecodePeerTable(std::string_view body) {
  WireReader r(body);
  PeerTable m;
  uint32_t n = 0;
  LS_RETURN_IF_ERROR(r.GetU32(&n));
  if (n > kMaxPeers) return DataLossError("peer table: too many peers");
  // Each entry takes at least 32 bytes, so a lying count cannot make us reserve much.
  if (n > r.remaining() / 32) return DataLossError("peer table: count exceeds body");
  m.peers.resize(n);
  for (PeerEntry& p : m.peers) LS_RETURN_IF_ERROR(GetPeer(r, &p));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<WorldMsg> DecodeWorld(std::string_view body) {
  WireReader r(body);
  WorldMsg m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.GetU32(&m.group_rank));
  LS_RETURN_IF_ERROR(r.GetU32(&m.nnodes));
  LS_RETURN_IF_ERROR(r.GetU32(&m.world_size));
  LS_RETURN_IF_ERROR(r.GetU32(&m.first_rank));
  LS_RETURN_IF_ERROR(r.GetU32(&m.nproc));
  LS_RETURN_IF_ERROR(r.GetString(&m.master_host));
  LS_RETURN_IF_ERROR(r.GetString(&m.nccl_id, kNcclIdBytes));
  LS_RETURN_IF_ERROR(r.GetU32(&m.role_first_rank));
  LS_RETURN_IF_ERROR(r.GetU32(&m.role_world_size));
  if (!m.nccl_id.empty() && m.nccl_id.size() != kNcclIdBytes) {
    return DataLossError("world: nccl id must be empty or 128 bytes");
  }
  if (m.group_rank >= m.nnodes) return DataLossError("world: group rank outside the round");
  if (static_cast<uint64_t>(m.first_rank) + m.nproc > m.world_size) {
    return DataLossError("world: ranks outside the world size");
  }
  if (static_cast<uint64_t>(m.role_first_rank) + m.nproc > m.role_world_size ||
      m.role_world_size > m.world_size) {
    return DataLossError("world: role ranks outside the role's size or the world size");
  }
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Heartbeat> DecodeHeartbeat(std::string_view body) {
  WireReader r(body);
  Heartbeat m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Failure> DecodeFailure(std::string_view body) {
  WireReader r(body);
  Failure m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.GetI32(&m.rank));
  LS_RETURN_IF_ERROR(r.GetI32(&m.exit_code));
  LS_RETURN_IF_ERROR(r.GetI32(&m.signal));
  LS_RETURN_IF_ERROR(r.GetString(&m.reason));
  LS_RETURN_IF_ERROR(r.GetString(&m.message));
  LS_RETURN_IF_ERROR(GetStderrTail(r, &m.stderr_tail).WithContext("failure"));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

std::string Encode(const Started& m) {
  WireWriter w;
  w.PutU32(m.attempt);
  return Framed(MessageType::kStarted, w);
}

StatusOr<Started> DecodeStarted(std::string_view body) {
  WireReader r(body);
  Started m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Done> DecodeDone(std::string_view body) {
  WireReader r(body);
  Done m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  uint8_t ends_job = 0;
  LS_RETURN_IF_ERROR(r.GetU8(&ends_job));
  if (ends_job > 1) return DataLossError("Done: ends_job is not 0 or 1");
  m.ends_job = ends_job == 1;
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

StatusOr<Abort> DecodeAbort(std::string_view body) {
  WireReader r(body);
  Abort m;
  LS_RETURN_IF_ERROR(r.GetU32(&m.attempt));
  LS_RETURN_IF_ERROR(r.GetString(&m.reason));
  LS_RETURN_IF_ERROR(r.GetI32(&m.node_rank));
  LS_RETURN_IF_ERROR(r.GetString(&m.message));
  uint8_t restartable = 0;
  LS_RETURN_IF_ERROR(r.GetU8(&restartable));
  if (restartable > 1) return DataLossError("abort: bad restartable flag");
  m.restartable = restartable == 1;
  LS_RETURN_IF_ERROR(r.ExpectEnd());
  return m;
}

Status DecodeAny(const Frame& frame) {
  switch (static_cast<MessageType>(frame.type)) {
    case MessageType::kChallenge: return DecodeChallenge(frame.body).status();
    case MessageType::kJoin: return DecodeJoin(frame.body).status();
    case MessageType::kRefuse: return DecodeRefuse(frame.body).status();
    case MessageType::kPeerTable: return DecodePeerTable(frame.body).status();
    case MessageType::kWorld: return DecodeWorld(frame.body).status();
    case MessageType::kHeartbeat: return DecodeHeartbeat(frame.body).status();
    case MessageType::kFailure: return DecodeFailure(frame.body).status();
    case MessageType::kDone: return DecodeDone(frame.body).status();
    case MessageType::kAbort: return DecodeAbort(frame.body).status();
    case MessageType::kStarted: return DecodeStarted(frame.body).status();
    case MessageType::kControl: return DecodeControlRequest(frame.body).status();
    case MessageType::kControlStatus: return DecodeControlStatus(frame.body).status();
    case MessageType::kControlAck: return DecodeControlAck(frame.body).status();
  }
  return DataLossError("unknown message type " + std::to_string(frame.type));
}

}  // namespace lockstep::launcher::rendezvous
