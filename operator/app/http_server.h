#pragma once
// A minimal HTTP/1.1 server for the operator's probes and metrics: GET only, one request per
// connection, handled on one thread. Enough for /healthz, /readyz and a Prometheus scrape; not
// a general web server (no keep-alive, no request bodies).

#include <atomic>
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
  void Serve();
  void HandleConnection(int fd);

  std::map<std::string, HttpHandler> handlers_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Splits "host:port" / ":port"; host empty means all interfaces.
Status ParseBindAddress(const std::string& address, std::string* host, int* port);

}  // namespace lockstep::app
