#include "operator/app/http_server.h"

#include <gtest/gtest.h>

#include "tests/testing/loopback.h"

namespace lockstep::app {
namespace {

// The raw response to `request` sent to 127.0.0.1:port; "" when nothing answers.
std::string Exchange(int port, const std::string& request) {
  return ::lockstep::testing::LoopbackExchange(port, request).value_or("");
}

TEST(HttpServerTest, RoutesGetRequestsAndRejectsTheRest) {
  HttpServer server;
  int calls = 0;
  server.Handle("/readyz", [&calls] {
    ++calls;
    return HttpResponse{503, "text/plain", "not yet\n"};
  });
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "a 1\n"}; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_GT(server.port(), 0);
  const std::string ok = Exchange(server.port(), "GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Length: 4\r\n"), std::string::npos);
  EXPECT_EQ(ok.substr(ok.size() - 4), "a 1\n");
  EXPECT_EQ(Exchange(server.port(), "GET /readyz HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 503", 0), 0u);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(Exchange(server.port(), "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Exchange(server.port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0),
            0u);
  server.Stop();
  EXPECT_EQ(Exchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n"), "");
}

TEST(HttpServerTest, RefusesABadAddress) {
  HttpServer server;
  EXPECT_FALSE(server.Start("not-an-ip:80").ok());
  EXPECT_FALSE(server.Start("127.0.0.1").ok());
}

}  // namespace
}  // namespace lockstep::app
