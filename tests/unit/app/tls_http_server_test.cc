// The HTTP server over TLS (its bounds kept: a slow handshake stalls no one, the deadline closes
// it), certificates self-signed or from files that are read again when they change, and answers
// that come later from another thread (HandleAsync).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "operator/app/http_server.h"
#include "operator/app/tls_context.h"
#include "tests/testing/free_port.h"
#include "tests/testing/loopback.h"
#include "tests/unit/app/tls_client.h"

namespace lockstep::app {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::TlsExchange;
using testing::TlsGet;
using testing::TlsReply;

std::unique_ptr<TlsServerContext> SelfSigned() {
  StatusOr<std::unique_ptr<TlsServerContext>> tls =
      TlsServerContext::SelfSigned("lockstep-operator", {"localhost"});
  EXPECT_TRUE(tls.ok()) << tls.status().ToString();
  return tls.ok() ? std::move(*tls) : nullptr;
}

TEST(TlsHttpServerTest, ServesHttpsWithASelfSignedCertificateForLocalhost) {
  HttpServer server;
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "a 1\n"}; });
  std::unique_ptr<TlsServerContext> tls = SelfSigned();
  ASSERT_NE(tls, nullptr);
  const std::string pem = tls->certificate_pem();
  server.EnableTls(std::move(tls));
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  // Verified: the certificate as its own trust anchor, and it names localhost.
  const TlsReply r = TlsGet(server.port(), "/metrics", "", pem);
  EXPECT_TRUE(r.handshake);
  EXPECT_EQ(r.status, 200) << r.response;
  EXPECT_EQ(r.body, "a 1\n");
  EXPECT_EQ(r.peer_pem, pem);
  EXPECT_EQ(TlsGet(server.port(), "/nope").status, 404);
  // Plain HTTP to the TLS port: no HTTP answer, the connection just ends.
  StatusOr<std::string> plain =
      ::lockstep::testing::LoopbackExchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(plain.value_or("").find("200 OK"), std::string::npos);
}

// Clients that stop in the middle of their handshake (one byte of a ClientHello, then nothing)
// delay no one: every scrape, `curl -m 2`, is answered while they hang, and they are closed
// at the request deadline.
TEST(TlsHttpServerTest, StalledHandshakesDoNotBlockOthers) {
  HttpServer server;
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  server.EnableTls(SelfSigned());
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::vector<int> stalled;
  for (int i = 0; i < 3; ++i) {
    int fd = ::lockstep::testing::ConnectTcp(server.port());
    ASSERT_GE(fd, 0);
    ::send(fd, "\x16\x03\x01", 3, MSG_NOSIGNAL);  // a TLS record header, and no more
    stalled.push_back(fd);
  }
  int answered = 0;
  const auto start = Clock::now();
  while (Clock::now() - start < seconds(3)) {
    const TlsReply r = TlsExchange(server.port(), "GET /metrics HTTP/1.1\r\n\r\n", "", "localhost",
                                   milliseconds(2000));
    EXPECT_EQ(r.status, 200) << "scrape " << answered;
    if (r.status == 200) ++answered;
    std::this_thread::sleep_for(milliseconds(300));
  }
  EXPECT_GE(answered, 4);
  // Past the deadline the server has closed them: a read sees the end (0), not a timeout.
  std::this_thread::sleep_for(HttpServer::kRequestDeadline - (Clock::now() - start) +
                              milliseconds(1500));
  for (int fd : stalled) {
    timeval tv{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char b;
    EXPECT_LE(::recv(fd, &b, 1, 0), 0);
    ::close(fd);
  }
}

TEST(TlsHttpServerTest, CertificateFilesAreReadAgainWhenTheyChange) {
  const std::string dir = ::testing::TempDir() + "/tls-reload-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  auto make = [&dir](const std::string& cn) {
    const std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-days 1 -subj /CN=" +
        cn +
        " -addext subjectAltName=DNS:localhost "
        "-keyout " +
        dir + "/tls.key -out " + dir + "/tls.crt 2>/dev/null";
    return std::system(cmd.c_str()) == 0;
  };
  ASSERT_TRUE(make("first"));
  StatusOr<std::unique_ptr<TlsServerContext>> tls =
      TlsServerContext::FromFiles(dir + "/tls.crt", dir + "/tls.key", milliseconds(0));
  ASSERT_TRUE(tls.ok()) << tls.status().ToString();
  const std::string first = (*tls)->certificate_pem();
  HttpServer server;
  server.Handle("/metrics", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  server.EnableTls(std::move(*tls));
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  EXPECT_EQ(TlsGet(server.port(), "/metrics").peer_pem, first);
  ASSERT_TRUE(make("second"));
  const TlsReply after = TlsGet(server.port(), "/metrics");
  EXPECT_EQ(after.status, 200);
  EXPECT_NE(after.peer_pem, first);
  // A broken pair (a rotation half written) keeps the last good one.
  { std::ofstream(dir + "/tls.key") << "not a key"; }
  const TlsReply broken = TlsGet(server.port(), "/metrics");
  EXPECT_EQ(broken.status, 200);
  EXPECT_EQ(broken.peer_pem, after.peer_pem);
  server.Stop();
  std::filesystem::remove_all(dir);
}

TEST(TlsHttpServerTest, RefusesMissingOrMismatchedFiles) {
  EXPECT_FALSE(TlsServerContext::FromFiles("/nonexistent/tls.crt", "/nonexistent/tls.key").ok());
}

// An async handler's answer comes from another thread, later; the loop serves others meanwhile.
TEST(HttpServerAsyncTest, AnswersLaterFromAnotherThreadWhileServingOthers) {
  HttpServer server;
  std::mutex mu;
  std::vector<std::thread> answerers;
  server.HandleAsync("/slow", [&](const HttpRequest& req, HttpResponder respond) {
    EXPECT_EQ(req.path, "/slow");
    std::lock_guard<std::mutex> lock(mu);
    answerers.emplace_back([respond = std::move(respond)] {
      std::this_thread::sleep_for(milliseconds(800));
      respond({200, "text/plain", "late\n"});
    });
  });
  server.Handle("/healthz", [] { return HttpResponse{200, "text/plain", "ok\n"}; });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  auto slow = std::async(std::launch::async, [&] {
    return ::lockstep::testing::LoopbackHttp(server.port(), "GET", "/slow");
  });
  std::this_thread::sleep_for(milliseconds(100));
  const auto t0 = Clock::now();
  EXPECT_EQ(::lockstep::testing::LoopbackHttp(server.port(), "GET", "/healthz").status, 200);
  EXPECT_LT(Clock::now() - t0, milliseconds(500));
  const ::lockstep::testing::HttpReply late = slow.get();
  EXPECT_EQ(late.status, 200);
  EXPECT_EQ(late.body, "late\n");
  server.Stop();
  for (auto& t : answerers) t.join();
}

// A responder called after the connection's deadline or after Stop() does nothing.
TEST(HttpServerAsyncTest, AnswersAfterTheDeadlineOrStopAreDropped) {
  HttpServer server;
  std::promise<HttpResponder> kept;
  server.HandleAsync("/never", [&kept](const HttpRequest&, HttpResponder respond) {
    kept.set_value(std::move(respond));
  });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  const auto t0 = Clock::now();
  const ::lockstep::testing::HttpReply r =
      ::lockstep::testing::LoopbackHttp(server.port(), "GET", "/never");
  EXPECT_EQ(r.status, -1);  // closed unanswered at the deadline
  EXPECT_GE(Clock::now() - t0, HttpServer::kRequestDeadline - milliseconds(100));
  HttpResponder respond = kept.get_future().get();
  respond({200, "text/plain", "too late\n"});
  server.Stop();
  respond({200, "text/plain", "after stop\n"});
}

}  // namespace
}  // namespace lockstep::app
