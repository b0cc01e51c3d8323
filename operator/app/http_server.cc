#include "operator/app/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/http_status.h"
#include "common/log.h"
#include "operator/app/tls_context.h"

namespace lockstep::app {
namespace {

constexpr size_t kMaxRequestBytes = size_t{16} * 1024;

}  // namespace

Status ParseBindAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("bind address \"" + address + "\" is not host:port or :port");
  }
  *host = address.substr(0, colon);
  const std::string p = address.substr(colon + 1);
  if (p.empty() || p.find_first_not_of("0123456789") != std::string::npos || p.size() > 5 ||
      std::stoi(p) > 65535) {
    return InvalidArgumentError("bind address \"" + address + "\" has no valid port");
  }
  *port = std::stoi(p);
  return Status::Ok();
}

std::string FormatResponse(const HttpResponse& resp, const std::string& method) {
  const std::string& body = method == "HEAD" ? std::string() : resp.body;
  return "HTTP/1.1 " + std::to_string(resp.code) + " " +
         std::string(HttpReasonPhrase(resp.code)) + "\r\nContent-Type: " + resp.content_type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

HttpServer::HttpServer(const Clock& clock) : clock_(clock), answers_(std::make_shared<Answers>()) {}

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler) {
  handlers_[path] = [handler = std::move(handler)](
                        const HttpRequest&, const HttpResponder& respond) { respond(handler()); };
}

void HttpServer::HandleAsync(const std::string& path, HttpAsyncHandler handler) {
  handlers_[path] = std::move(handler);
}

void HttpServer::EnableTls(std::unique_ptr<TlsServerContext> tls) { tls_ = std::move(tls); }

Status HttpServer::Start(const std::string& address) {
  std::string host;
  int port = 0;
  LS_RETURN_IF_ERROR(ParseBindAddress(address, &host, &port));
  if (host.empty()) host = "0.0.0.0";
  if (host == "localhost") host = "127.0.0.1";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return InvalidArgumentError("bind address \"" + address + "\": not an IPv4 address");
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return InternalError(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    const std::string err = std::strerror(errno);
    ::close(listen_fd_);
    listen_fd_ = -1;
    return UnavailableError("cannot listen on " + address + ": " + err);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  ::fcntl(listen_fd_, F_SETFL, ::fcntl(listen_fd_, F_GETFL) | O_NONBLOCK);
  if (::pipe2(wake_pipe_, O_CLOEXEC | O_NONBLOCK) != 0) {
    return InternalError(std::string("pipe2: ") + std::strerror(errno));
  }
  {
    std::lock_guard<std::mutex> lock(answers_->mu);
    answers_->closed = false;
    answers_->wake_fd = wake_pipe_[1];
  }
  stop_ = false;
  thread_ = std::thread([this] {
    // OpenSSL writes to sockets without MSG_NOSIGNAL: a client gone mid-response raises SIGPIPE
    // on this thread, where it stays pending instead of ending the process.
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    Serve();
  });
  return Status::Ok();
}

void HttpServer::Stop() {
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(answers_->mu);
    answers_->closed = true;  // late responders find this, not a closed (or reused) fd
    answers_->wake_fd = -1;
    answers_->ready.clear();
  }
  if (wake_pipe_[1] >= 0) {
    [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], "x", 1);
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [id, c] : conns_) Close(c);
  conns_.clear();
  for (int* fd : {&listen_fd_, &wake_pipe_[0], &wake_pipe_[1]}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

void HttpServer::Serve() {
  std::vector<pollfd> fds;
  std::vector<uint64_t> ids;
  while (!stop_) {
    fds.assign({pollfd{wake_pipe_[0], POLLIN, 0}, pollfd{listen_fd_, POLLIN, 0}});
    ids.assign({0, 0});
    auto now = clock_.Now();
    auto next = now + std::chrono::seconds(1);
    for (auto& [id, c] : conns_) {
      next = std::min(next, c.deadline);
      // A connection waiting for its async answer is not polled: a client that hangs up
      // meanwhile would report POLLHUP on every turn. Its answer or its deadline ends it.
      if (c.phase == Phase::kWaiting) continue;
      fds.push_back({c.fd, c.events, 0});
      ids.push_back(id);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0))) < 0 &&
        errno != EINTR) {
      log::Error("health/metrics server poll failed", {{"error", std::strerror(errno)}});
      return;
    }
    if (stop_) return;
    if (fds[0].revents & POLLIN) {
      char drain[256];
      while (::read(wake_pipe_[0], drain, sizeof(drain)) > 0) {
      }
    }
    TakeAnswers();
    for (size_t i = 2; i < fds.size(); ++i) {
      auto it = conns_.find(ids[i]);
      if (it == conns_.end() || fds[i].revents == 0) continue;
      if (!Step(it->first, it->second)) {
        Close(it->second);
        conns_.erase(it);
      }
    }
    now = clock_.Now();
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      Close(it->second);  // a slow or silent client, or an answer that came too late
      it = conns_.erase(it);
    }
    if (fds[1].revents & POLLIN) Accept();
  }
}

void HttpServer::Accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (conns_.size() >= kMaxConnections) {
      // The oldest connection has had the longest to send its request: it goes first.
      Close(conns_.begin()->second);
      conns_.erase(conns_.begin());
    }
    Connection& c = conns_[next_conn_++];
    c.fd = fd;
    c.deadline = clock_.Now() + kRequestDeadline;
    c.events = POLLIN;
    if (tls_) {
      c.ssl = SSL_new(tls_->Current());
      if (c.ssl == nullptr || SSL_set_fd(c.ssl, fd) != 1) {
        ERR_clear_error();
        Close(c);
        conns_.erase(std::prev(conns_.end()));
        continue;
      }
      SSL_set_accept_state(c.ssl);
      c.phase = Phase::kHandshake;
    }
  }
}

bool HttpServer::Step(uint64_t id, Connection& c) {
  switch (c.phase) {
    case Phase::kHandshake:
      return Handshake(id, c);
    case Phase::kReading:
      return OnReadable(id, c);
    case Phase::kWriting:
      return OnWritable(c);
    case Phase::kWaiting:
      return true;
  }
  return false;
}

namespace {

// What a non-blocking SSL call that returned `r` waits for: POLLIN or POLLOUT, or 0 when the
// connection is broken or closed.
short SslWants(SSL* ssl, int r) {
  switch (SSL_get_error(ssl, r)) {
    case SSL_ERROR_WANT_READ:
      return POLLIN;
    case SSL_ERROR_WANT_WRITE:
      return POLLOUT;
    default:
      ERR_clear_error();
      return 0;
  }
}

}  // namespace

bool HttpServer::Handshake(uint64_t id, Connection& c) {
  ERR_clear_error();
  const int r = SSL_accept(c.ssl);
  if (r == 1) {
    c.phase = Phase::kReading;
    c.events = POLLIN;
    return OnReadable(id, c);  // the request may have come with the handshake's last flight
  }
  c.events = SslWants(c.ssl, r);
  return c.events != 0;
}

bool HttpServer::OnReadable(uint64_t id, Connection& c) {
  char buf[4096];
  while (true) {
    ssize_t n = 0;
    if (c.ssl != nullptr) {
      // Drain what OpenSSL holds: poll() knows only the socket, not its decrypted buffer.
      ERR_clear_error();
      const int r = SSL_read(c.ssl, buf, sizeof(buf));
      if (r <= 0) {
        c.events = SslWants(c.ssl, r);
        return c.events != 0;
      }
      n = r;
    } else {
      n = ::recv(c.fd, buf, sizeof(buf), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      if (n <= 0) return false;
    }
    c.in.append(buf, static_cast<size_t>(n));
    if (c.in.find("\r\n\r\n") != std::string::npos) {
      Dispatch(id, c);
      return c.phase == Phase::kWaiting || OnWritable(c);
    }
    if (c.in.size() > kMaxRequestBytes) return false;
  }
}

bool HttpServer::OnWritable(Connection& c) {
  while (c.written < c.out.size()) {
    const size_t left = c.out.size() - c.written;
    if (c.ssl != nullptr) {
      ERR_clear_error();
      const int r = SSL_write(c.ssl, c.out.data() + c.written,
                              static_cast<int>(std::min<size_t>(left, 1 << 20)));
      if (r <= 0) {
        c.events = SslWants(c.ssl, r);
        return c.events != 0;
      }
      c.written += static_cast<size_t>(r);
      continue;
    }
    ssize_t n = ::send(c.fd, c.out.data() + c.written, left, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;  // the client went away; nothing to do
    c.written += static_cast<size_t>(n);
  }
  if (c.ssl != nullptr) {
    ERR_clear_error();
    SSL_shutdown(c.ssl);  // close_notify, best effort: the response carried its length
  }
  return false;  // all written: Connection: close
}

void HttpServer::Dispatch(uint64_t id, Connection& c) {
  StatusOr<HttpRequest> req = ParseRequestHead(c.in.substr(0, c.in.find("\r\n\r\n") + 4));
  c.in.clear();
  c.phase = Phase::kWriting;
  c.events = POLLOUT;
  if (!req.ok()) {
    c.out = FormatResponse({400, "text/plain", "bad request\n"}, "GET");
    return;
  }
  auto it = handlers_.find(req->path);
  if (req->method != "GET" && req->method != "HEAD") {
    c.out = FormatResponse({405, "text/plain", "method not allowed\n"}, req->method);
    return;
  }
  if (it == handlers_.end()) {
    c.out = FormatResponse({404, "text/plain", "not found\n"}, req->method);
    return;
  }
  c.phase = Phase::kWaiting;
  it->second(*req, [answers = answers_, id, method = req->method](const HttpResponse& resp) {
    std::string bytes = FormatResponse(resp, method);
    std::lock_guard<std::mutex> lock(answers->mu);
    if (answers->closed) return;
    answers->ready.emplace_back(id, std::move(bytes));
    [[maybe_unused]] ssize_t n = ::write(answers->wake_fd, "x", 1);
  });
  // A handler that answered at once is written on this turn, not after one more poll.
  TakeAnswers();
}

void HttpServer::TakeAnswers() {
  std::deque<std::pair<uint64_t, std::string>> ready;
  {
    std::lock_guard<std::mutex> lock(answers_->mu);
    ready.swap(answers_->ready);
  }
  for (auto& [id, bytes] : ready) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.phase != Phase::kWaiting) continue;  // timed out
    Connection& c = it->second;
    c.out = std::move(bytes);
    c.phase = Phase::kWriting;
    c.events = POLLOUT;
  }
}

void HttpServer::Close(Connection& c) {
  if (c.ssl != nullptr) SSL_free(c.ssl);
  c.ssl = nullptr;
  if (c.fd >= 0) ::close(c.fd);
  c.fd = -1;
}

}  // namespace lockstep::app
