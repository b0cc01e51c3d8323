#include "launcher/stores/tcpstore_codec.h"

#include <algorithm>
#include <cstring>

namespace lockstep::launcher::stores {
namespace {

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

}  // namespace

ParseResult ParseRequest(std::string_view buf, Request* req, size_t* consumed, std::string* error) {
  *req = Request{};
  RequestParser parser;
  size_t used = 0;
  ParseResult res = parser.Feed(buf, &used, req, error);
  if (res == ParseResult::kOk) *consumed = used;
  return res;
}

void RequestParser::Reset() {
  req_ = Request{};
  started_ = false;
  step_ = Step::kType;
  scratch_len_ = 0;
  strings_left_ = 0;
  string_left_ = 0;
  target_ = nullptr;
  request_bytes_ = 0;
}

ParseResult RequestParser::Feed(std::string_view buf, size_t* consumed, Request* out,
                                std::string* error) {
  size_t pos = 0;
  ParseResult res = ParseResult::kNeedMore;
  while (pos < buf.size() && res == ParseResult::kNeedMore) {
    if (step_ == Step::kString) {
      const size_t take = static_cast<size_t>(std::min<std::uint64_t>(string_left_,
                                                                      buf.size() - pos));
      target_->append(buf.data() + pos, take);
      pos += take;
      request_bytes_ += take;
      string_left_ -= take;
      if (string_left_ == 0) res = AfterString();
      continue;
    }
    const size_t need = step_ == Step::kType ? 1 : step_ == Step::kU32 ? 4 : 8;
    const size_t take = std::min(need - scratch_len_, buf.size() - pos);
    std::memcpy(scratch_ + scratch_len_, buf.data() + pos, take);
    scratch_len_ += take;
    pos += take;
    request_bytes_ += take;
    if (scratch_len_ == need) {
      scratch_len_ = 0;
      res = OnScalar(error);
    }
  }
  // A request with no fields after its type ends with its first byte.
  *consumed = pos;
  if (res == ParseResult::kOk) {
    *out = std::move(req_);
    Reset();
  }
  return res;
}

ParseResult RequestParser::OnScalar(std::string* error) {
  switch (step_) {
    case Step::kType: {
      const auto type = static_cast<std::uint8_t>(scratch_[0]);
      if (type > static_cast<std::uint8_t>(QueryType::kQueueLen)) {
        *error = "unknown query type " + std::to_string(type);
        return ParseResult::kInvalid;
      }
      req_.type = static_cast<QueryType>(type);
      started_ = true;
      return StartBody(error);
    }
    case Step::kU32:
      std::memcpy(&req_.u32, scratch_, sizeof(req_.u32));
      return ParseResult::kOk;
    case Step::kI64:
      std::memcpy(&req_.i64, scratch_, sizeof(req_.i64));
      return ParseResult::kOk;
    case Step::kCount: {
      std::uint64_t n = 0;
      std::memcpy(&n, scratch_, sizeof(n));
      if (n > kMaxKeyCount) {
        *error = "more than 128Ki keys in one request";
        return ParseResult::kInvalid;
      }
      strings_left_ = req_.type == QueryType::kMultiSet ? 2 * n : n;
      return AfterString();
    }
    case Step::kLength: {
      std::uint64_t len = 0;
      std::memcpy(&len, scratch_, sizeof(len));
      return OnLength(len, error);
    }
    case Step::kString:
      break;
  }
  return ParseResult::kInvalid;
}

ParseResult RequestParser::StartBody(std::string* /*error*/) {
  const QueryType t = req_.type;
  if (t == QueryType::kValidate || t == QueryType::kPing) {
    step_ = Step::kU32;
    return ParseResult::kNeedMore;
  }
  if (HasOneKey(t)) {
    strings_left_ = 1 + static_cast<std::uint64_t>(ValuesAfterKey(t));
    return AfterString();
  }
  if (IsKeyList(t)) {
    step_ = Step::kCount;
    return ParseResult::kNeedMore;
  }
  return ParseResult::kOk;  // GETNUMKEYS, CANCEL_WAIT: no fields
}

bool RequestParser::NextStringIsKey() const {
  if (HasOneKey(req_.type)) return req_.keys.empty();
  if (req_.type == QueryType::kMultiSet) return req_.keys.size() == req_.values.size();
  return true;
}

ParseResult RequestParser::OnLength(std::uint64_t len, std::string* error) {
  const bool key = NextStringIsKey();
  if (len > (key ? kMaxKeyLen : kMaxPayloadLen)) {
    *error = key ? "key longer than 8 KiB" : "value larger than 8 MiB";
    return ParseResult::kInvalid;
  }
  if (len > kMaxRequestBytes - std::min(request_bytes_, kMaxRequestBytes)) {
    *error = "request larger than 32 MiB";
    return ParseResult::kInvalid;
  }
  std::vector<std::string>& list = key ? req_.keys : req_.values;
  list.emplace_back();
  target_ = &list.back();
  string_left_ = len;
  step_ = Step::kString;
  if (len == 0) return AfterString();
  target_->reserve(static_cast<size_t>(len));
  return ParseResult::kNeedMore;
}

ParseResult RequestParser::AfterString() {
  target_ = nullptr;
  if (strings_left_ > 0) {
    --strings_left_;
    step_ = Step::kLength;
    return ParseResult::kNeedMore;
  }
  if (req_.type == QueryType::kAdd && step_ != Step::kI64) {
    step_ = Step::kI64;
    return ParseResult::kNeedMore;
  }
  return ParseResult::kOk;
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
