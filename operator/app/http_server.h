#pragma once
// A minimal HTTP/1.1 server for the operator's probes and metrics: GET only, one request per
// connection. Enough for /healthz, /readyz and a Prometheus scrape; not a general web server (no
// keep-alive, no request bodies).
//
// One thread serves every connection at once from a poll() loop, so a client that sends a byte
// every few seconds delays no one: each connection must deliver its request and take its
// response within kRequestDeadline of its accept, or it is closed; at most kMaxConnections are
// open, and accepting one more closes the oldest (a probe always gets in, a flood of idle
// connections only pushes out older ones). Handlers run on that thread and must be quick.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "common/status.h"

namespace lockstep::app {

struct HttpResponse {
  int code = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpResponse()>;

class HttpServer {
 public:
  static constexpr std::chrono::milliseconds kRequestDeadline{5000};
  static constexpr size_t kMaxConnections = 64;

  HttpServer() = default;
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start().
  void Handle(const std::string& path, HttpHandler handler);
  // Binds `address` ("host:port" or ":port"; port 0 picks a free one) and serves on a thread.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  struct Connection {
    int fd = -1;
    std::chrono::steady_clock::time_point deadline;
    std::string in;
    std::string out;  // the response, once the request is read
    size_t written = 0;
  };

  void Serve();
  void Accept();
  // Reads what arrived; on a whole request head, queues the response. False: close it.
  bool OnReadable(Connection& c);
  // False when the connection is done (response written, or the client went away).
  bool OnWritable(Connection& c);
  std::string Respond(const std::string& head) const;

  std::map<std::string, HttpHandler> handlers_;
  std::map<uint64_t, Connection> conns_;  // serving thread only; key: accept order
  uint64_t next_conn_ = 0;
  int wake_pipe_[2] = {-1, -1};
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Splits "host:port" / ":port"; host empty means all interfaces.
Status ParseBindAddress(const std::string& address, std::string* host, int* port);

}  // namespace lockstep::app
