#include "launcher/stores/tcpstore_codec.h"

#include <gtest/gtest.h>

namespace lockstep::launcher::stores {
namespace {

Request Make(QueryType t, std::vector<std::string> keys = {},
             std::vector<std::string> values = {}) {
  Request r;
  r.type = t;
  r.keys = std::move(keys);
  r.values = std::move(values);
  return r;
}

// Bytes torch 2.15's client sent for `store.set("a", "1")`, captured on the wire.
TEST(TcpStoreCodec, ParsesTorchSetBytes) {
  const std::string wire(
      "\x01\x02\x00\x00\x00\x00\x00\x00\x00/a\x01\x00\x00\x00\x00\x00\x00\x00"
      "1",
      20);
  Request req;
  size_t consumed = 0;
  std::string err;
  ASSERT_EQ(ParseRequest(wire, &req, &consumed, &err), ParseResult::kOk);
  EXPECT_EQ(consumed, wire.size());
  EXPECT_EQ(req.type, QueryType::kSet);
  EXPECT_EQ(req.keys, std::vector<std::string>{"/a"});
  EXPECT_EQ(req.values, std::vector<std::string>{"1"});
}

TEST(TcpStoreCodec, ParsesValidateThenPingAsTorchSendsThemOnConnect) {
  const std::string wire("\x00\xce\xf7\x85\x3c\x0d\xc0\x6f\x00\x00", 10);
  Request req;
  size_t consumed = 0;
  std::string err;
  ASSERT_EQ(ParseRequest(wire, &req, &consumed, &err), ParseResult::kOk);
  EXPECT_EQ(req.type, QueryType::kValidate);
  EXPECT_EQ(req.u32, kValidationMagic);
  EXPECT_EQ(consumed, 5u);
  ASSERT_EQ(ParseRequest(std::string_view(wire).substr(5), &req, &consumed, &err),
            ParseResult::kOk);
  EXPECT_EQ(req.type, QueryType::kPing);
  EXPECT_EQ(req.u32, 0x6fc0u);
}

// Every request type round-trips, and every strict prefix of it asks for more bytes.
TEST(TcpStoreCodec, EveryTypeRoundTripsAndPrefixesNeedMore) {
  Request add = Make(QueryType::kAdd, {"/c"});
  add.i64 = -7;
  Request ping = Make(QueryType::kPing);
  ping.u32 = 1234;
  const std::vector<Request> all = {
      ping,
      Make(QueryType::kSet, {"/k"}, {std::string("v\0w", 3)}),
      Make(QueryType::kCompareSet, {"/k"}, {"old", "new"}),
      Make(QueryType::kGet, {"/k"}),
      add,
      Make(QueryType::kCheck, {"/a", "/b"}),
      Make(QueryType::kWait, {"/a"}),
      Make(QueryType::kGetNumKeys),
      Make(QueryType::kDeleteKey, {"/k"}),
      Make(QueryType::kAppend, {"/k"}, {"tail"}),
      Make(QueryType::kMultiGet, {"/a", "/b", "/c"}),
      Make(QueryType::kMultiSet, {"/a", "/b"}, {"1", ""}),
      Make(QueryType::kCancelWait),
      Make(QueryType::kQueuePush, {"q"}, {"item"}),
      Make(QueryType::kQueuePop, {"q"}),
      Make(QueryType::kQueueLen, {"q"}),
  };
  for (const Request& want : all) {
    std::string wire;
    EncodeRequest(want, &wire);
    wire += "\x07";  // the next request's first byte must not be consumed
    Request got;
    size_t consumed = 0;
    std::string err;
    ASSERT_EQ(ParseRequest(wire, &got, &consumed, &err), ParseResult::kOk)
        << static_cast<int>(want.type);
    EXPECT_EQ(consumed, wire.size() - 1);
    EXPECT_EQ(got.type, want.type);
    EXPECT_EQ(got.keys, want.keys);
    EXPECT_EQ(got.values, want.values);
    EXPECT_EQ(got.i64, want.i64);
    EXPECT_EQ(got.u32, want.u32);
    for (size_t n = 0; n + 1 < consumed; ++n) {
      EXPECT_EQ(ParseRequest(std::string_view(wire).substr(0, n), &got, &consumed, &err),
                ParseResult::kNeedMore)
          << "type " << static_cast<int>(want.type) << " prefix " << n;
    }
  }
}

TEST(TcpStoreCodec, RejectsUnknownTypeAndOversizedFields) {
  Request req;
  size_t consumed = 0;
  std::string err;
  EXPECT_EQ(ParseRequest(std::string("\x11", 1), &req, &consumed, &err), ParseResult::kInvalid);
  EXPECT_NE(err.find("unknown query type 17"), std::string::npos);

  std::string big_key;
  PutU8(static_cast<uint8_t>(QueryType::kGet), &big_key);
  PutBytes(std::string(kMaxKeyLen + 1, 'k'), &big_key);
  EXPECT_EQ(ParseRequest(big_key, &req, &consumed, &err), ParseResult::kInvalid);

  std::string many_keys;
  PutU8(static_cast<uint8_t>(QueryType::kWait), &many_keys);
  const uint64_t n = kMaxKeyCount + 1;
  many_keys.append(reinterpret_cast<const char*>(&n), sizeof(n));
  EXPECT_EQ(ParseRequest(many_keys, &req, &consumed, &err), ParseResult::kInvalid);
}

// The incremental parser gives the same requests however the stream is split, one byte at a
// time included, and never looks at a byte twice (what it consumed is gone from the buffer).
TEST(TcpStoreRequestParser, AnySplitOfAStreamGivesTheSameRequests) {
  Request add = Make(QueryType::kAdd, {"/c"});
  add.i64 = 41;
  const std::vector<Request> all = {Make(QueryType::kSet, {"/k"}, {std::string(3000, 'v')}),
                                    add, Make(QueryType::kMultiSet, {"/a", "/b"}, {"1", ""}),
                                    Make(QueryType::kGetNumKeys),
                                    Make(QueryType::kWait, {"/a", "/b", "/c"})};
  std::string wire;
  for (const Request& r : all) EncodeRequest(r, &wire);
  for (size_t step : {size_t{1}, size_t{3}, size_t{7}, size_t{1000}, wire.size()}) {
    RequestParser parser;
    std::vector<Request> got;
    for (size_t at = 0; at < wire.size(); at += step) {
      std::string_view piece = std::string_view(wire).substr(at, step);
      while (!piece.empty()) {
        Request req;
        size_t used = 0;
        std::string err;
        const ParseResult res = parser.Feed(piece, &used, &req, &err);
        ASSERT_NE(res, ParseResult::kInvalid) << err;
        piece.remove_prefix(used);
        if (res == ParseResult::kOk) got.push_back(std::move(req));
      }
    }
    ASSERT_EQ(got.size(), all.size()) << "step " << step;
    for (size_t i = 0; i < all.size(); ++i) {
      EXPECT_EQ(got[i].type, all[i].type);
      EXPECT_EQ(got[i].keys, all[i].keys);
      EXPECT_EQ(got[i].values, all[i].values);
      EXPECT_EQ(got[i].i64, all[i].i64);
    }
    EXPECT_EQ(parser.request_bytes(), 0u);
  }
}

// A request is refused when a declared length would take it past kMaxRequestBytes: before its
// bytes arrive (the limits of each field alone allow 1 TiB).
TEST(TcpStoreRequestParser, RefusesARequestPastTheRequestLimitFromItsLengths) {
  std::string head;
  PutU8(static_cast<uint8_t>(QueryType::kMultiSet), &head);
  const uint64_t n = 8;
  head.append(reinterpret_cast<const char*>(&n), sizeof(n));
  RequestParser parser;
  ParseResult res = ParseResult::kNeedMore;
  std::string err;
  size_t fed = 0;
  for (int pair = 0; pair < 8 && res == ParseResult::kNeedMore; ++pair) {
    std::string field = pair == 0 ? head : "";
    PutBytes("k", &field);
    const uint64_t len = kMaxPayloadLen;
    field.append(reinterpret_cast<const char*>(&len), sizeof(len));
    field.append(kMaxPayloadLen, 'v');
    Request req;
    size_t used = 0;
    res = parser.Feed(field, &used, &req, &err);
    fed += used;
  }
  EXPECT_EQ(res, ParseResult::kInvalid);
  EXPECT_NE(err.find("32 MiB"), std::string::npos) << err;
  EXPECT_LE(fed, kMaxRequestBytes);
}

}  // namespace
}  // namespace lockstep::launcher::stores
