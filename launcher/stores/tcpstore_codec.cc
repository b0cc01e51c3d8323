#include "launcher/stores/tcpstore_codec.h"

#include <cstring>

namespace lockstep::launcher::stores {
namespace {

// Reads fields from the front of a buffer; any read past the end marks the request incomplete.
class Reader {
 public:
  explicit Reader(std::string_view buf) : buf_(buf) {}

  template <typename T>
  bool Value(T* v) {
    if (buf_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, buf_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }

  // Returns kInvalid for a length over `max`, kNeedMore when the bytes are not all there yet.
  ParseResult Bytes(std::uint64_t max, std::string* out) {
    std::uint64_t len = 0;
    if (!Value(&len)) return ParseResult::kNeedMore;
    if (len > max) return ParseResult::kInvalid;
    if (buf_.size() - pos_ < len) return ParseResult::kNeedMore;
    out->assign(buf_.data() + pos_, static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return ParseResult::kOk;
  }

  size_t pos() const { return pos_; }

 private:
  std::string_view buf_;
  size_t pos_ = 0;
};

bool HasOneKey(QueryType t) {
  switch (t) {
    case QueryType::kSet:
    case QueryType::kCompareSet:
    case QueryType::kGet:
    case QueryType::kAdd:
    case QueryType::kDeleteKey:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
    case QueryType::kQueuePop:
    case QueryType::kQueueLen:
      return true;
    default:
      return false;
  }
}

int ValuesAfterKey(QueryType t) {
  switch (t) {
    case QueryType::kSet:
    case QueryType::kAppend:
    case QueryType::kQueuePush:
      return 1;
    case QueryType::kCompareSet:
      return 2;
    default:
      return 0;
  }
}

bool IsKeyList(QueryType t) {
  return t == QueryType::kCheck || t == QueryType::kWait || t == QueryType::kMultiGet ||
         t == QueryType::kMultiSet;
}

ParseResult ParseBody(Reader& r, Request* req, std::string* error) {
  const QueryType t = req->type;
  if (t == QueryType::kValidate || t == QueryType::kPing) {
    return r.Value(&req->u32) ? ParseResult::kOk : ParseResult::kNeedMore;
  }
  if (HasOneKey(t)) {
    req->keys.emplace_back();
    ParseResult res = r.Bytes(kMaxKeyLen, &req->keys.back());
    if (res != ParseResult::kOk) {
      if (res == ParseResult::kInvalid) *error = "key longer than 8 KiB";
      return res;
    }
    for (int i = 0; i < ValuesAfterKey(t); ++i) {
      req->values.emplace_back();
      res = r.Bytes(kMaxPayloadLen, &req->values.back());
      if (res != ParseResult::kOk) {
        if (res == ParseResult::kInvalid) *error = "value larger than 8 MiB";
        return res;
      }
    }
    if (t == QueryType::kAdd && !r.Value(&req->i64)) return ParseResult::kNeedMore;
    return ParseResult::kOk;
  }
  if (IsKeyList(t)) {
    std::uint64_t n = 0;
    if (!r.Value(&n)) return ParseResult::kNeedMore;
    if (n > kMaxKeyCount) {
      *error = "more than 128Ki keys in one request";
      return ParseResult::kInvalid;
    }
    for (std::uint64_t i = 0; i < n; ++i) {
      req->keys.emplace_back();
      ParseResult res = r.Bytes(kMaxKeyLen, &req->keys.back());
      if (res == ParseResult::kOk && t == QueryType::kMultiSet) {
        req->values.emplace_back();
        res = r.Bytes(kMaxPayloadLen, &req->values.back());
      }
      if (res != ParseResult::kOk) {
        if (res == ParseResult::kInvalid) *error = "key or value beyond the size limits";
        return res;
      }
    }
    return ParseResult::kOk;
  }
  return ParseResult::kOk;  // GETNUMKEYS, CANCEL_WAIT: no fields
}

}  // namespace

ParseResult ParseRequest(std::string_view buf, Request* req, size_t* consumed, std::string* error) {
  *req = Request{};
  Reader r(buf);
  std::uint8_t type = 0;
  if (!r.Value(&type)) return ParseResult::kNeedMore;
  if (type > static_cast<std::uint8_t>(QueryType::kQueueLen)) {
    *error = "unknown query type " + std::to_string(type);
    return ParseResult::kInvalid;
  }
  req->type = static_cast<QueryType>(type);
  ParseResult res = ParseBody(r, req, error);
  if (res == ParseResult::kOk) *consumed = r.pos();
  return res;
}

void PutU8(std::uint8_t v, std::string* out) { out->push_back(static_cast<char>(v)); }

void PutU32(std::uint32_t v, std::string* out) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutI64(std::int64_t v, std::string* out) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(v));
}

void PutBytes(std::string_view bytes, std::string* out) {
  const std::uint64_t len = bytes.size();
  out->append(reinterpret_cast<const char*>(&len), sizeof(len));
  out->append(bytes);
}

void EncodeRequest(const Request& req, std::string* out) {
  PutU8(static_cast<std::uint8_t>(req.type), out);
  const QueryType t = req.type;
  if (t == QueryType::kValidate || t == QueryType::kPing) {
    PutU32(req.u32, out);
  } else if (HasOneKey(t)) {
    PutBytes(req.keys.at(0), out);
    for (int i = 0; i < ValuesAfterKey(t); ++i)
      PutBytes(req.values.at(static_cast<size_t>(i)), out);
    if (t == QueryType::kAdd) PutI64(req.i64, out);
  } else if (IsKeyList(t)) {
    const std::uint64_t n = req.keys.size();
    out->append(reinterpret_cast<const char*>(&n), sizeof(n));
    for (size_t i = 0; i < req.keys.size(); ++i) {
      PutBytes(req.keys[i], out);
      if (t == QueryType::kMultiSet) PutBytes(req.values.at(i), out);
    }
  }
}

}  // namespace lockstep::launcher::stores
