#include "launcher/stores/tcpstore_state.h"

#include <gtest/gtest.h>

#include <limits>

namespace lockstep::launcher::stores {
namespace {

class TcpStoreStateTest : public ::testing::Test {
 protected:
  // Sends VALIDATE for `conn` so later requests are served.
  void Connect(ConnId conn) {
    Request v;
    v.type = QueryType::kValidate;
    v.u32 = kValidationMagic;
    ASSERT_TRUE(state_.Handle(conn, v, &replies_));
  }

  std::vector<Reply> Do(ConnId conn, QueryType t, std::vector<std::string> keys = {},
                        std::vector<std::string> values = {}, int64_t i64 = 0) {
    Request r;
    r.type = t;
    r.keys = std::move(keys);
    r.values = std::move(values);
    r.i64 = i64;
    std::vector<Reply> out;
    EXPECT_TRUE(state_.Handle(conn, r, &out));
    return out;
  }

  static std::string Bytes(std::string_view s) {
    std::string out;
    PutBytes(s, &out);
    return out;
  }
  static std::string I64(int64_t v) {
    std::string out;
    PutI64(v, &out);
    return out;
  }
  static std::string U8(uint8_t v) { return std::string(1, static_cast<char>(v)); }

  TcpStoreState state_;
  std::vector<Reply> replies_;
};

TEST_F(TcpStoreStateTest, RefusesRequestsBeforeValidateAndBadMagic) {
  Request get;
  get.type = QueryType::kGet;
  get.keys = {"/k"};
  EXPECT_FALSE(state_.Handle(1, get, &replies_));
  Request bad;
  bad.type = QueryType::kValidate;
  bad.u32 = 0xdeadbeef;
  EXPECT_FALSE(state_.Handle(2, bad, &replies_));
}

TEST_F(TcpStoreStateTest, PingEchoesNonce) {
  Connect(1);
  Request ping;
  ping.type = QueryType::kPing;
  ping.u32 = 0xabcd;
  std::vector<Reply> out;
  ASSERT_TRUE(state_.Handle(1, ping, &out));
  ASSERT_EQ(out.size(), 1u);
  std::string want;
  PutU32(0xabcd, &want);
  EXPECT_EQ(out[0].bytes, want);
}

TEST_F(TcpStoreStateTest, SetGetDeleteAndNumKeys) {
  Connect(1);
  EXPECT_TRUE(Do(1, QueryType::kSet, {"/a"}, {"x"}).empty());
  EXPECT_EQ(Do(1, QueryType::kGet, {"/a"})[0].bytes, Bytes("x"));
  EXPECT_EQ(Do(1, QueryType::kGetNumKeys)[0].bytes, I64(1));
  EXPECT_EQ(Do(1, QueryType::kDeleteKey, {"/a"})[0].bytes, I64(1));
  EXPECT_EQ(Do(1, QueryType::kDeleteKey, {"/a"})[0].bytes, I64(0));
  EXPECT_EQ(Do(1, QueryType::kGetNumKeys)[0].bytes, I64(0));
}

TEST_F(TcpStoreStateTest, AddKeepsDecimalStringsLikeTorch) {
  Connect(1);
  EXPECT_EQ(Do(1, QueryType::kAdd, {"/c"}, {}, 5)[0].bytes, I64(5));
  EXPECT_EQ(Do(1, QueryType::kAdd, {"/c"}, {}, -7)[0].bytes, I64(-2));
  EXPECT_EQ(Do(1, QueryType::kGet, {"/c"})[0].bytes, Bytes("-2"));
  Do(1, QueryType::kSet, {"/s"}, {"abc"});
  Request add;
  add.type = QueryType::kAdd;
  add.keys = {"/s"};
  add.i64 = 1;
  EXPECT_FALSE(state_.Handle(1, add, &replies_));
}

// Found by tests/fuzz/tcpstore (its corpus has the input): ADD summed in a signed int64 and
// overflowed (undefined behaviour; UBSan aborts). A sum beyond int64 is refused like a value
// that is not a number: the connection closes and the counter keeps its value.
TEST_F(TcpStoreStateTest, AddBeyondInt64IsRefusedAndKeepsTheCounter) {
  Connect(1);
  const int64_t max = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(Do(1, QueryType::kAdd, {"/c"}, {}, max)[0].bytes, I64(max));
  for (int64_t delta : {int64_t{1}, max}) {
    Request add;
    add.type = QueryType::kAdd;
    add.keys = {"/c"};
    add.i64 = delta;
    EXPECT_FALSE(state_.Handle(1, add, &replies_)) << delta;
  }
  Connect(2);
  EXPECT_EQ(Do(2, QueryType::kGet, {"/c"})[0].bytes, Bytes(std::to_string(max)));
  EXPECT_EQ(Do(2, QueryType::kAdd, {"/c"}, {}, std::numeric_limits<int64_t>::min())[0].bytes,
            I64(-1));
}

TEST_F(TcpStoreStateTest, WaitBlocksUntilEveryKeyExistsThenWakes) {
  Connect(1);
  Connect(2);
  EXPECT_TRUE(Do(1, QueryType::kWait, {"/a", "/b"}).empty());
  EXPECT_EQ(state_.num_waiting(), 1u);
  EXPECT_TRUE(Do(2, QueryType::kSet, {"/a"}, {"1"}).empty());
  std::vector<Reply> woke = Do(2, QueryType::kAdd, {"/b"}, {}, 1);
  ASSERT_EQ(woke.size(), 2u);  // the waiter, then the ADD's own reply
  EXPECT_EQ(woke[0].conn, 1u);
  EXPECT_EQ(woke[0].bytes, U8(kWaitStopWaiting));
  EXPECT_EQ(woke[1].conn, 2u);
  EXPECT_EQ(Do(1, QueryType::kWait, {"/a"})[0].bytes, U8(kWaitStopWaiting));
}

TEST_F(TcpStoreStateTest, CancelWaitAndDisconnectDropTheWaiter) {
  Connect(1);
  Connect(2);
  Do(1, QueryType::kWait, {"/a"});
  EXPECT_EQ(Do(1, QueryType::kCancelWait)[0].bytes, U8(kWaitCanceled));
  EXPECT_TRUE(Do(2, QueryType::kSet, {"/a"}, {"1"}).empty());  // nobody left to wake
  Do(2, QueryType::kWait, {"/z"});
  std::vector<Reply> none;
  state_.Disconnect(2, &none);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(state_.num_waiting(), 0u);
  Connect(3);
  EXPECT_TRUE(Do(3, QueryType::kSet, {"/z"}, {"1"}).empty());
}

TEST_F(TcpStoreStateTest, CheckReportsReadiness) {
  Connect(1);
  EXPECT_EQ(Do(1, QueryType::kCheck, {"/a"})[0].bytes, U8(kCheckNotReady));
  Do(1, QueryType::kSet, {"/a"}, {""});
  EXPECT_EQ(Do(1, QueryType::kCheck, {"/a"})[0].bytes, U8(kCheckReady));
}

TEST_F(TcpStoreStateTest, CompareSetFollowsTorchSemantics) {
  Connect(1);
  // Absent key, non-empty expected: nothing stored, expected returned.
  EXPECT_EQ(Do(1, QueryType::kCompareSet, {"/k"}, {"old", "new"})[0].bytes, Bytes("old"));
  EXPECT_EQ(Do(1, QueryType::kCheck, {"/k"})[0].bytes, U8(kCheckNotReady));
  // Absent key, empty expected: desired stored.
  EXPECT_EQ(Do(1, QueryType::kCompareSet, {"/k"}, {"", "v1"})[0].bytes, Bytes("v1"));
  // Mismatch keeps the value; match swaps it.
  EXPECT_EQ(Do(1, QueryType::kCompareSet, {"/k"}, {"nope", "v2"})[0].bytes, Bytes("v1"));
  EXPECT_EQ(Do(1, QueryType::kCompareSet, {"/k"}, {"v1", "v2"})[0].bytes, Bytes("v2"));
}

TEST_F(TcpStoreStateTest, AppendMultiSetAndMultiGet) {
  Connect(1);
  Do(1, QueryType::kAppend, {"/a"}, {"x"});
  Do(1, QueryType::kAppend, {"/a"}, {"y"});
  Do(1, QueryType::kMultiSet, {"/b", "/c"}, {"2", "3"});
  EXPECT_EQ(Do(1, QueryType::kMultiGet, {"/a", "/b", "/c"})[0].bytes,
            Bytes("xy") + Bytes("2") + Bytes("3"));
}

TEST_F(TcpStoreStateTest, QueuesAreFifoAndPushWakesOneWaiter) {
  Connect(1);
  Connect(2);
  Connect(3);
  Do(1, QueryType::kWait, {"q"});
  Do(2, QueryType::kWait, {"q"});
  std::vector<Reply> woke = Do(3, QueryType::kQueuePush, {"q"}, {"first"});
  ASSERT_EQ(woke.size(), 1u);
  EXPECT_EQ(woke[0].conn, 1u);
  woke = Do(3, QueryType::kQueuePush, {"q"}, {"second"});
  ASSERT_EQ(woke.size(), 1u);
  EXPECT_EQ(woke[0].conn, 2u);
  EXPECT_EQ(Do(3, QueryType::kQueueLen, {"q"})[0].bytes, I64(2));
  EXPECT_EQ(Do(1, QueryType::kQueuePop, {"q"})[0].bytes, I64(2) + Bytes("first"));
  EXPECT_EQ(Do(2, QueryType::kQueuePop, {"q"})[0].bytes, I64(1) + Bytes("second"));
  EXPECT_EQ(Do(1, QueryType::kQueuePop, {"q"})[0].bytes, I64(0));
  EXPECT_EQ(state_.num_reserved(), 0u);
}

// torch's blocking queue_pop is WAIT then QUEUE_POP. A client whose WAIT arrives between another
// client's wake-up and its pop must not take that client's item (it would get QueueEmptyError).
TEST_F(TcpStoreStateTest, AWokenBlockingPopKeepsItsItemFromALaterWaiter) {
  Connect(1);
  Connect(2);
  Connect(3);
  Do(1, QueryType::kWait, {"q"});
  ASSERT_EQ(Do(3, QueryType::kQueuePush, {"q"}, {"a"}).size(), 1u);  // wakes 1
  EXPECT_TRUE(Do(2, QueryType::kWait, {"q"}).empty());  // the only item is 1's: 2 waits
  EXPECT_EQ(Do(3, QueryType::kCheck, {"q"})[0].bytes, U8(kCheckNotReady));
  EXPECT_EQ(Do(3, QueryType::kQueuePop, {"q"})[0].bytes, I64(0));  // a non-blocking pop too
  EXPECT_EQ(Do(1, QueryType::kQueuePop, {"q"})[0].bytes, I64(1) + Bytes("a"));
  std::vector<Reply> woke = Do(3, QueryType::kQueuePush, {"q"}, {"b"});
  ASSERT_EQ(woke.size(), 1u);
  EXPECT_EQ(woke[0].conn, 2u);
  EXPECT_EQ(Do(2, QueryType::kQueuePop, {"q"})[0].bytes, I64(1) + Bytes("b"));
}

TEST_F(TcpStoreStateTest, AWaitThatFindsAnItemAlsoReservesIt) {
  Connect(1);
  Connect(2);
  Do(1, QueryType::kQueuePush, {"q"}, {"a"});
  EXPECT_EQ(Do(1, QueryType::kWait, {"q"})[0].bytes, U8(kWaitStopWaiting));
  EXPECT_TRUE(Do(2, QueryType::kWait, {"q"}).empty());
  EXPECT_EQ(Do(1, QueryType::kQueuePop, {"q"})[0].bytes, I64(1) + Bytes("a"));
  EXPECT_EQ(state_.num_waiting(), 1u);
}

TEST_F(TcpStoreStateTest, AnUnusedReservationPassesToTheNextWaiter) {
  Connect(1);
  Connect(2);
  Connect(3);
  Connect(4);
  Do(1, QueryType::kWait, {"q"});
  Do(2, QueryType::kWait, {"q"});
  Do(4, QueryType::kWait, {"q"});
  Do(3, QueryType::kQueuePush, {"q"}, {"a"});  // reserved for 1
  // 1 does something else: the item goes to 2, the next waiter.
  std::vector<Reply> replies = Do(1, QueryType::kGetNumKeys);
  ASSERT_EQ(replies.size(), 2u);
  EXPECT_EQ(replies[0].conn, 2u);
  EXPECT_EQ(replies[0].bytes, U8(kWaitStopWaiting));
  EXPECT_EQ(replies[1].conn, 1u);
  // 2's connection closes: the item goes to 4.
  replies.clear();
  state_.Disconnect(2, &replies);
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_EQ(replies[0].conn, 4u);
  EXPECT_EQ(Do(4, QueryType::kQueuePop, {"q"})[0].bytes, I64(1) + Bytes("a"));
  EXPECT_EQ(state_.num_reserved(), 0u);
}

// ADD past INT64_MAX (or below INT64_MIN) is refused, not wrapped (torch's server overflows a
// signed integer: undefined behaviour).
TEST_F(TcpStoreStateTest, AddRefusesToOverflow) {
  Connect(1);
  Do(1, QueryType::kAdd, {"/n"}, {}, std::numeric_limits<int64_t>::max());
  Request add;
  add.type = QueryType::kAdd;
  add.keys = {"/n"};
  add.i64 = 1;
  std::vector<Reply> out;
  EXPECT_FALSE(state_.Handle(1, add, &out));
  EXPECT_NE(state_.refusal().find("int64"), std::string::npos);
  EXPECT_TRUE(out.empty());
  Do(1, QueryType::kAdd, {"/m"}, {}, std::numeric_limits<int64_t>::min());
  add.keys = {"/m"};
  add.i64 = -1;
  EXPECT_FALSE(state_.Handle(1, add, &out));
}

class TcpStoreLimitsTest : public TcpStoreStateTest {
 protected:
  TcpStoreLimitsTest() { state_ = TcpStoreState(StoreLimits{1000, 300, 400}); }
  bool Try(ConnId conn, QueryType t, std::vector<std::string> keys,
           std::vector<std::string> values = {}) {
    Request r;
    r.type = t;
    r.keys = std::move(keys);
    r.values = std::move(values);
    std::vector<Reply> out;
    return state_.Handle(conn, r, &out);
  }
};

TEST_F(TcpStoreLimitsTest, StoredBytesValueSizeAndReplySizeAreBounded) {
  Connect(1);
  EXPECT_TRUE(Try(1, QueryType::kSet, {"a"}, {std::string(200, 'x')}));
  EXPECT_EQ(state_.stored_bytes(), 1 + 200 + 64u);
  EXPECT_FALSE(Try(1, QueryType::kSet, {"b"}, {std::string(301, 'x')}));  // one value too big
  EXPECT_TRUE(Try(1, QueryType::kAppend, {"a"}, {std::string(100, 'x')}));
  EXPECT_FALSE(Try(1, QueryType::kAppend, {"a"}, {"x"}));  // would pass 300 bytes
  EXPECT_TRUE(Try(1, QueryType::kMultiGet, {"a"}));
  EXPECT_FALSE(Try(1, QueryType::kMultiGet, {"a", "a"}));  // a 616-byte reply
  EXPECT_TRUE(Try(1, QueryType::kSet, {"b"}, {std::string(250, 'x')}));
  EXPECT_TRUE(Try(1, QueryType::kSet, {"c"}, {std::string(250, 'x')}));
  EXPECT_FALSE(Try(1, QueryType::kSet, {"d"}, {std::string(250, 'x')}));  // past 1000 bytes
  EXPECT_FALSE(Try(1, QueryType::kQueuePush, {"q"}, {std::string(250, 'x')}));
  EXPECT_TRUE(Try(1, QueryType::kDeleteKey, {"c"}));
  EXPECT_TRUE(Try(1, QueryType::kSet, {"d"}, {std::string(250, 'x')}));  // room again
  EXPECT_LE(state_.stored_bytes(), 1000u);
}

TEST_F(TcpStoreLimitsTest, ASecondWaitWhileOneIsPendingIsRefused) {
  Connect(1);
  EXPECT_TRUE(Try(1, QueryType::kWait, {"never"}));
  EXPECT_FALSE(Try(1, QueryType::kWait, {"other"}));
  EXPECT_NE(state_.refusal().find("WAIT"), std::string::npos);
}

}  // namespace
}  // namespace lockstep::launcher::stores
