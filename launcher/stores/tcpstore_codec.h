#pragma once
// The wire format of torch.distributed.TCPStore (c10d TCPStoreBackend.hpp and the libuv server in
// TCPStoreLibUvBackend.cpp), as a pure codec. A request is one QueryType byte followed by its
// fields; strings and byte vectors are a uint64 length and the bytes; integers are raw host-order
// (little-endian) int64/uint32. Replies are written with the Put* helpers.

#include <cstdint>
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
// kInvalid, `*error` says why (unknown query type, a length beyond the limits).
ParseResult ParseRequest(std::string_view buf, Request* req, size_t* consumed, std::string* error);

// Appends one request in wire format (used by tests and by clients written against this codec).
void EncodeRequest(const Request& req, std::string* out);

void PutU8(std::uint8_t v, std::string* out);
void PutU32(std::uint32_t v, std::string* out);
void PutI64(std::int64_t v, std::string* out);
void PutBytes(std::string_view bytes, std::string* out);  // uint64 length, then the bytes

}  // namespace lockstep::launcher::stores
