#include "operator/app/http_request.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace lockstep::app {
namespace {

using namespace std::string_literals;

struct HeadCase {
  std::string name;
  std::string head;
  bool ok;
  std::string method;
  std::string path;
  size_t headers;
};

TEST(HttpRequestTest, ParsesRequestHeads) {
  const HeadCase cases[] = {
      {"prometheus scrape",
       "GET /metrics HTTP/1.1\r\nHost: 10.0.0.1:8080\r\nUser-Agent: Prometheus/2.53\r\n"
       "Accept: text/plain\r\nAuthorization: Bearer abc\r\n\r\n",
       true, "GET", "/metrics", 4},
      {"query dropped", "GET /metrics?x=1&y HTTP/1.1\r\n\r\n", true, "GET", "/metrics", 0},
      {"head", "HEAD /healthz HTTP/1.0\r\n\r\n", true, "HEAD", "/healthz", 0},
      {"no final empty line", "GET / HTTP/1.1\r\nHost: h\r\n", true, "GET", "/", 1},
      {"value trimmed, empty value", "GET / HTTP/1.1\r\nA:  x \t\r\nB:\r\n\r\n", true, "GET", "/",
       2},
      {"other method parses (the server answers 405)", "POST /metrics HTTP/1.1\r\n\r\n", true,
       "POST", "/metrics", 0},
      {"empty", "", false, "", "", 0},
      {"two words", "GET /metrics\r\n\r\n", false, "", "", 0},
      {"four words", "GET /a b HTTP/1.1\r\n\r\n", false, "", "", 0},
      {"double space", "GET  /a HTTP/1.1\r\n\r\n", false, "", "", 0},
      {"bad version", "GET / HTTX/1.1\r\n\r\n", false, "", "", 0},
      {"method not a token", "G(T / HTTP/1.1\r\n\r\n", false, "", "", 0},
      {"control in target", "GET /a\x01 HTTP/1.1\r\n\r\n"s, false, "", "", 0},
      {"header without colon", "GET / HTTP/1.1\r\nHost h\r\n\r\n", false, "", "", 0},
      {"empty header name", "GET / HTTP/1.1\r\n: v\r\n\r\n", false, "", "", 0},
      {"space before colon", "GET / HTTP/1.1\r\nHost : h\r\n\r\n", false, "", "", 0},
      {"folded line", "GET / HTTP/1.1\r\nA: b\r\n c\r\n\r\n", false, "", "", 0},
      {"NUL in value", "GET / HTTP/1.1\r\nA: b\0c\r\n\r\n"s, false, "", "", 0},
      {"bare LF in value", "GET / HTTP/1.1\r\nA: b\nc\r\n\r\n", false, "", "", 0},
  };
  for (const HeadCase& c : cases) {
    StatusOr<HttpRequest> r = ParseRequestHead(c.head);
    EXPECT_EQ(r.ok(), c.ok) << c.name;
    if (!r.ok() || !c.ok) continue;
    EXPECT_EQ(r->method, c.method) << c.name;
    EXPECT_EQ(r->path, c.path) << c.name;
    EXPECT_EQ(r->headers.size(), c.headers) << c.name;
  }
}

TEST(HttpRequestTest, HeaderNamesAreLowerCasedAndValuesKeptInOrder) {
  StatusOr<HttpRequest> r =
      ParseRequestHead("GET / HTTP/1.1\r\nX-A: 1\r\nx-a: 2\r\nHost: h\r\n\r\n");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->Values("x-a").size(), 2u);
  EXPECT_EQ(r->Values("x-a")[0], "1");
  EXPECT_EQ(r->Values("x-a")[1], "2");
  EXPECT_TRUE(r->Values("X-A").empty());  // callers ask in lower case
}

struct BearerCase {
  std::string name;
  std::string fields;  // header lines, each ending in CRLF
  std::optional<std::string> token;
};

TEST(HttpRequestTest, BearerTokenOfTheAuthorizationField) {
  const BearerCase cases[] = {
      {"bearer", "Authorization: Bearer eyJhbGciOi.x-y_z\r\n", "eyJhbGciOi.x-y_z"},
      {"scheme in any case", "authorization: bEARER t0k\r\n", "t0k"},
      {"spaces around the value", "Authorization:    Bearer tok   \r\n", "tok"},
      {"no field", "Host: h\r\n", std::nullopt},
      {"basic", "Authorization: Basic dXNlcjpwYXNz\r\n", std::nullopt},
      {"scheme only", "Authorization: Bearer\r\n", std::nullopt},
      {"empty token", "Authorization: Bearer \r\n", std::nullopt},
      {"two spaces", "Authorization: Bearer  tok\r\n", std::nullopt},
      {"two words", "Authorization: Bearer tok extra\r\n", std::nullopt},
      {"tab inside", "Authorization: Bearer a\tb\r\n", std::nullopt},
      {"bearer as a prefix", "Authorization: Bearertok\r\n", std::nullopt},
      {"two fields", "Authorization: Bearer a\r\nAuthorization: Bearer b\r\n", std::nullopt},
      {"other field", "Proxy-Authorization: Bearer tok\r\n", std::nullopt},
  };
  for (const BearerCase& c : cases) {
    StatusOr<HttpRequest> r = ParseRequestHead("GET /metrics HTTP/1.1\r\n" + c.fields + "\r\n");
    ASSERT_TRUE(r.ok()) << c.name;
    EXPECT_EQ(BearerToken(*r), c.token) << c.name;
  }
}

}  // namespace
}  // namespace lockstep::app
