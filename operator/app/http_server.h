#pragma once
// A minimal HTTP/1.1 server for the operator's probes and metrics: GET only, one request per
// connection, optionally over TLS. Enough for /healthz, /readyz and a Prometheus scrape; not a
// general web server (no keep-alive, no request bodies).
//
// One thread serves every connection at once from a poll() loop, so a client that sends a byte
// every few seconds delays no one: each connection must finish its TLS handshake (with
// EnableTls), deliver its request and take its response within kRequestDeadline of its accept,
// or it is closed; at most kMaxConnections are open, and accepting one more closes the oldest (a
// probe always gets in, a flood of idle connections only pushes out older ones). Handshakes,
// reads and writes are non-blocking steps of that loop, so a slow TLS client stalls no one
// either.
//
// Handlers run on that thread and must be quick. A handler that has to wait for something (the
// metrics server's TokenReview and SubjectAccessReview calls to the apiserver) is registered
// with HandleAsync: it returns at once and answers later, from any thread, through the responder
// it was given; its connection waits outside the poll set until then, and is closed unanswered
// when kRequestDeadline passes first (the client sees the connection end, as on any timeout).

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/status.h"
#include "operator/app/http_request.h"

typedef struct ssl_st SSL;

namespace lockstep::app {

class TlsServerContext;

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse()>;
// Answers its request: call it exactly once, on any thread, before or after the handler returns.
// Calling it after the server stopped, or after the connection's deadline closed it, is harmless.
using HttpResponder = std::function<void(HttpResponse)>;
using HttpAsyncHandler = std::function<void(const HttpRequest& request, HttpResponder respond)>;

class HttpServer {
 public:
  static constexpr std::chrono::milliseconds kRequestDeadline{5000};
  static constexpr size_t kMaxConnections = 64;

  // `clock` (which outlives the server) times the request deadlines and the poll's wake-ups.
  explicit HttpServer(const Clock& clock = RealClock::Get());
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start().
  void Handle(const std::string& path, HttpHandler handler);
  void HandleAsync(const std::string& path, HttpAsyncHandler handler);
  // Serve HTTPS with `tls` (HTTP/1.1 over TLS 1.2+). Before Start().
  void EnableTls(std::unique_ptr<TlsServerContext> tls);
  // Binds `address` ("host:port" or ":port"; port 0 picks a free one) and serves on a thread.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  enum class Phase { kHandshake, kReading, kWaiting, kWriting };
  struct Connection {
    int fd = -1;
    SSL* ssl = nullptr;  // with TLS
    Phase phase = Phase::kReading;
    short events = 0;  // what the current phase waits for (POLLIN or POLLOUT)
    Clock::Steady deadline;
    std::string in;
    std::string out;  // the response, once the request is read and answered
    size_t written = 0;
  };
  // Answers from async handlers, handed to the serving thread. Shared with every responder, so
  // that one called after the server is gone finds `closed` instead of a dangling server.
  struct Answers {
    std::mutex mu;
    bool closed = false;                                 // guarded by mu
    std::deque<std::pair<uint64_t, std::string>> ready;  // guarded by mu; conn id, response
    int wake_fd = -1;                                    // guarded by mu
  };

  void Serve();
  void Accept();
  // Advances a connection whose fd is ready. False: close it.
  bool Step(uint64_t id, Connection& c);
  bool Handshake(uint64_t id, Connection& c);
  // Reads what arrived; on a whole request head, dispatches it. False: close it.
  bool OnReadable(uint64_t id, Connection& c);
  // False when the connection is done (response written, or the client went away).
  bool OnWritable(Connection& c);
  void Dispatch(uint64_t id, Connection& c);
  void TakeAnswers();
  void Close(Connection& c);

  const Clock& clock_;
  std::map<std::string, HttpAsyncHandler> handlers_;
  std::unique_ptr<TlsServerContext> tls_;  // serving thread only, once started
  std::map<uint64_t, Connection> conns_;   // serving thread only; key: accept order
  uint64_t next_conn_ = 0;
  std::shared_ptr<Answers> answers_;
  int wake_pipe_[2] = {-1, -1};
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Splits "host:port" / ":port"; host empty means all interfaces.
Status ParseBindAddress(const std::string& address, std::string* host, int* port);

// The response bytes for `resp` to a request with `method` (a HEAD gets no body).
std::string FormatResponse(const HttpResponse& resp, const std::string& method);

}  // namespace lockstep::app
