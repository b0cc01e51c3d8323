#pragma once
// The wire format of torch.distributed.TCPStore (c10d TCPStoreBackend.hpp and the libuv server in
// TCPStoreLibUvBackend.cpp), as a pure codec. A request is one QueryType byte followed by its
// fields; strings and byte vectors are a uint64 length and the bytes; integers are raw host-order
// (little-endian) int64/uint32. Replies are written with the Put* helpers.
//
// RequestParser reads a request field by field as its bytes arrive and keeps what it read, so
// each byte is looked at once however the stream is split (a whole-buffer parse on every read
// made a slow 8 MiB request cost O(n^2)); it refuses a request as soon as a declared length
// would take it past kMaxRequestBytes, before the bytes are sent.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::launcher::stores {

// Declaration order of c10d::detail::QueryType; the byte values are the wire format.
enum class QueryType : std::uint8_t {
  kValidate = 0,
  kSet = 1,
  kCompareSet = 2,
  kGet = 3,
  kAdd = 4,
  kCheck = 5,
  kWait = 6,
  kGetNumKeys = 7,
  kDeleteKey = 8,
  kAppend = 9,
  kMultiGet = 10,
  kMultiSet = 11,
  kCancelWait = 12,
  kPing = 13,
  kQueuePush = 14,
  kQueuePop = 15,
  kQueueLen = 16,
};

// Sent first on every client connection.
inline constexpr std::uint32_t kValidationMagic = 0x3C85F7CE;
// Reply bytes of CHECK and WAIT/CANCEL_WAIT.
inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kWaitStopWaiting = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;
// The libuv server's limits; a request beyond them is a protocol error.
inline constexpr std::uint64_t kMaxKeyLen = 8 * 1024;
inline constexpr std::uint64_t kMaxPayloadLen = 8 * 1024 * 1024;
inline constexpr std::uint64_t kMaxKeyCount = 128 * 1024;
// Lockstep's own bound on one request (torch's is kMaxKeyCount x kMaxPayloadLen = 1 TiB): torch's
// clients send one small key/value at a time; MULTI_SET batches stay far below this.
inline constexpr std::uint64_t kMaxRequestBytes = 32 * 1024 * 1024;

struct Request {
  QueryType type = QueryType::kValidate;
  std::uint32_t u32 = 0;            // VALIDATE magic, PING nonce
  std::int64_t i64 = 0;             // ADD delta
  std::vector<std::string> keys;    // every key in request order
  std::vector<std::string> values;  // SET/APPEND/QUEUE_PUSH: 1; COMPARE_SET: expected, desired;
                                    // MULTI_SET: one per key
};

enum class ParseResult { kNeedMore, kOk, kInvalid };

// Parses one request from the front of `buf`. On kOk, `*consumed` is its length in bytes; on
// kInvalid, `*error` says why (unknown query type, a length beyond the limits). Consumes nothing
// on kNeedMore (a one-shot RequestParser).
ParseResult ParseRequest(std::string_view buf, Request* req, size_t* consumed, std::string* error);

// An incremental parser of one connection's request stream. Not thread-safe.
class RequestParser {
 public:
  // Consumes bytes from the front of `buf` into the request in progress: `*consumed` says how
  // many (all of `buf` on kNeedMore; up to the request's end on kOk, when `*out` receives it
  // and the parser starts over). kInvalid: `*error` says why; the stream cannot continue.
  ParseResult Feed(std::string_view buf, size_t* consumed, Request* out, std::string* error);
  // Bytes of the request in progress consumed so far (0 between requests).
  std::uint64_t request_bytes() const { return request_bytes_; }
  // The type of the request in progress, once its first byte arrived.
  std::optional<QueryType> type() const {
    return started_ ? std::optional(req_.type) : std::nullopt;
  }

 private:
  enum class Step { kType, kU32, kCount, kLength, kString, kI64 };
  ParseResult StartBody(std::string* error);
  ParseResult OnScalar(std::string* error);
  ParseResult OnLength(std::uint64_t len, std::string* error);
  ParseResult AfterString();
  bool NextStringIsKey() const;
  void Reset();

  Request req_;
  bool started_ = false;
  Step step_ = Step::kType;
  char scratch_[8] = {};
  size_t scratch_len_ = 0;       // bytes of the current scalar read so far
  std::uint64_t strings_left_ = 0;
  std::uint64_t string_left_ = 0;  // bytes of the current string still to read
  std::string* target_ = nullptr;  // the string being filled
  std::uint64_t request_bytes_ = 0;
};

// Appends one request in wire format (used by tests and by clients written against this codec).
void EncodeRequest(const Request& req, std::string* out);

void PutU8(std::uint8_t v, std::string* out);
void PutU32(std::uint32_t v, std::string* out);
void PutI64(std::int64_t v, std::string* out);
void PutBytes(std::string_view bytes, std::string* out);  // uint64 length, then the bytes

}  // namespace lockstep::launcher::stores
