#include "launcher/rendezvous/wire.h"

namespace lockstep::launcher::rendezvous {

void WireWriter::PutU32(uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) PutU8(static_cast<uint8_t>(v >> shift));
}

void WireWriter::PutU64(uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8) PutU8(static_cast<uint8_t>(v >> shift));
}

void WireWriter::PutString(std::string_view s) {
  PutU32(static_cast<uint32_t>(s.size()));
  out_.append(s);
}

Status WireReader::Need(size_t n) const {
  if (remaining() < n) {
    return DataLossError("message truncated: need " + std::to_string(n) + " bytes, have " +
                         std::to_string(remaining()));
  }
  return Status::Ok();
}

Status WireReader::GetU8(uint8_t* v) {
  LS_RETURN_IF_ERROR(Need(1));
  *v = static_cast<uint8_t>(in_[pos_++]);
  return Status::Ok();
}

Status WireReader::GetU32(uint32_t* v) {
  LS_RETURN_IF_ERROR(Need(4));
  uint32_t r = 0;
  for (int i = 0; i < 4; ++i) r = (r << 8) | static_cast<uint8_t>(in_[pos_++]);
  *v = r;
  return Status::Ok();
}

Status WireReader::GetI32(int32_t* v) {
  uint32_t u = 0;
  LS_RETURN_IF_ERROR(GetU32(&u));
  *v = static_cast<int32_t>(u);
  return Status::Ok();
}

Status WireReader::GetU64(uint64_t* v) {
  LS_RETURN_IF_ERROR(Need(8));
  uint64_t r = 0;
  for (int i = 0; i < 8; ++i) r = (r << 8) | static_cast<uint8_t>(in_[pos_++]);
  *v = r;
  return Status::Ok();
}

Status WireReader::GetString(std::string* s, uint32_t max_bytes) {
  uint32_t n = 0;
  LS_RETURN_IF_ERROR(GetU32(&n));
  if (n > max_bytes) {
    return DataLossError("string field of " + std::to_string(n) + " bytes exceeds limit " +
                         std::to_string(max_bytes));
  }
  return GetRaw(n, s);
}

Status WireReader::GetRaw(size_t n, std::string* s) {
  LS_RETURN_IF_ERROR(Need(n));
  s->assign(in_.substr(pos_, n));
  pos_ += n;
  return Status::Ok();
}

Status WireReader::ExpectEnd() const {
  if (remaining() != 0) {
    return DataLossError(std::to_string(remaining()) + " unexpected trailing bytes");
  }
  return Status::Ok();
}

}  // namespace lockstep::launcher::rendezvous
