#include <gtest/gtest.h>

#include "launcher/stores/gloo_kv_state.h"
#include "launcher/stores/http_codec.h"

namespace lockstep::launcher::stores {
namespace {

// What Horovod's HTTP client (third_party HTTPRequest) sends for a PUT.
TEST(HttpCodec, ParsesPutWithBodyAndLeavesTheRest) {
  const std::string wire =
      "PUT /global/rank_0 HTTP/1.1\r\nHost: 127.0.0.1:5000\r\ncontent-length: 5\r\n\r\nhelloGET";
  HttpRequest req;
  size_t consumed = 0;
  ASSERT_EQ(ParseHttpRequest(wire, &req, &consumed), HttpParse::kOk);
  EXPECT_EQ(req.method, "PUT");
  EXPECT_EQ(req.path, "/global/rank_0");
  EXPECT_EQ(req.body, "hello");
  EXPECT_EQ(consumed, wire.size() - 3);
  for (size_t n = 0; n < consumed; ++n) {
    EXPECT_EQ(ParseHttpRequest(std::string_view(wire).substr(0, n), &req, &consumed),
              HttpParse::kNeedMore)
        << n;
  }
}

TEST(HttpCodec, RejectsGarbageAndHugeBodies) {
  HttpRequest req;
  size_t consumed = 0;
  EXPECT_EQ(ParseHttpRequest("NONSENSE\r\n\r\n", &req, &consumed), HttpParse::kInvalid);
  EXPECT_EQ(ParseHttpRequest("PUT /a/b HTTP/1.1\r\nContent-Length: x\r\n\r\n", &req, &consumed),
            HttpParse::kInvalid);
  EXPECT_EQ(ParseHttpRequest("PUT /a/b HTTP/1.1\r\nContent-Length: 999999999999\r\n\r\n", &req,
                             &consumed),
            HttpParse::kInvalid);
  EXPECT_EQ(HttpResponse(404, ""), "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n");
}

TEST(GlooKvState, GetIs404UntilPutThen200) {
  GlooKvState kv({{"global", 2}});
  EXPECT_EQ(kv.Handle("GET", "/global/0", "").code, 404);
  EXPECT_EQ(kv.Handle("PUT", "/global/0", "addr0").code, 200);
  KvResponse got = kv.Handle("GET", "/global/0", "");
  EXPECT_EQ(got.code, 200);
  EXPECT_EQ(got.body, "addr0");
}

TEST(GlooKvState, BadPathsAre400AndUnknownMethods405) {
  GlooKvState kv({});
  EXPECT_EQ(kv.Handle("GET", "/onlyscope", "").code, 400);
  EXPECT_EQ(kv.Handle("GET", "/a/b/c", "").code, 400);
  EXPECT_EQ(kv.Handle("POST", "/a/b", "").code, 405);
}

TEST(GlooKvState, DeclaredScopeClearsOnceEveryMemberFinished) {
  GlooKvState kv({{"local_host-a", 2}, {"global", 4}});
  kv.Handle("PUT", "/local_host-a/0", "x");
  kv.Handle("PUT", "/local_host-a/1", "y");
  kv.Handle("PUT", "/global/0", "g");
  EXPECT_EQ(kv.Handle("DELETE", "/local_host-a/0", "").code, 200);
  EXPECT_EQ(kv.KeysIn("local_host-a"), 2u);    // one member still building its context
  kv.Handle("DELETE", "/local_host-a/0", "");  // a repeated DELETE does not count twice
  EXPECT_EQ(kv.KeysIn("local_host-a"), 2u);
  kv.Handle("DELETE", "/local_host-a/1", "");
  EXPECT_EQ(kv.KeysIn("local_host-a"), 0u);
  EXPECT_EQ(kv.KeysIn("global"), 1u);  // other scopes untouched
}

TEST(GlooKvState, AdHocScopeDeletesTheKey) {
  GlooKvState kv({});
  kv.Handle("PUT", "/runfunc/a", "1");
  kv.Handle("PUT", "/runfunc/b", "2");
  kv.Handle("DELETE", "/runfunc/a", "");
  EXPECT_EQ(kv.Handle("GET", "/runfunc/a", "").code, 404);
  EXPECT_EQ(kv.Handle("GET", "/runfunc/b", "").code, 200);
}

// The incremental reader gives the same request however the bytes arrive.
TEST(HttpCodec, ReaderGivesTheSameRequestForAnySplit) {
  const std::string wire =
      "PUT /global/rank_0 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello";
  for (size_t step : {size_t{1}, size_t{2}, size_t{5}, wire.size()}) {
    HttpRequestReader reader;
    std::string buf;
    HttpParse res = HttpParse::kNeedMore;
    HttpRequest req;
    size_t consumed = 0;
    for (size_t at = 0; at < wire.size() && res == HttpParse::kNeedMore; at += step) {
      buf += wire.substr(at, step);
      res = reader.Feed(buf, &req, &consumed);
    }
    ASSERT_EQ(res, HttpParse::kOk) << step;
    EXPECT_EQ(req.method, "PUT");
    EXPECT_EQ(req.body, "hello");
    EXPECT_EQ(consumed, wire.size());
  }
  HttpRequestReader reader;
  HttpRequest req;
  size_t consumed = 0;
  EXPECT_EQ(reader.Feed("PUT /a/b HTTP/1.1\r\nContent-Length: 7\r\n\r\nab", &req, &consumed),
            HttpParse::kNeedMore);
  EXPECT_EQ(reader.declared_bytes(), 40u + 7u);  // head and blank line, body
  // A body over the limit is refused from its Content-Length alone.
  HttpRequestReader big;
  EXPECT_EQ(big.Feed("PUT /a/b HTTP/1.1\r\nContent-Length: " +
                         std::to_string(kMaxHttpBodyBytes + 1) + "\r\n\r\n",
                     &req, &consumed),
            HttpParse::kInvalid);
}

TEST(GlooKvState, PutsBeyondTheStoredLimitAre507) {
  GlooKvState kv({}, 300);
  EXPECT_EQ(kv.Handle("PUT", "/s/a", std::string(100, 'x')).code, 200);
  EXPECT_EQ(kv.Handle("PUT", "/s/b", std::string(100, 'x')).code, 507);
  EXPECT_EQ(kv.Handle("PUT", "/s/a", std::string(150, 'x')).code, 200);  // a replacement fits
  EXPECT_EQ(kv.Handle("DELETE", "/s/a", "").code, 200);
  EXPECT_EQ(kv.stored_bytes(), 0u);
  EXPECT_EQ(kv.Handle("PUT", "/s/b", std::string(200, 'x')).code, 200);
}

}  // namespace
}  // namespace lockstep::launcher::stores
