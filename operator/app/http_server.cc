#include "operator/app/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace lockstep::app {
namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;

std::string StatusText(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

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

HttpServer::~HttpServer() { Stop(); }

void HttpServer::Handle(const std::string& path, HttpHandler handler) {
  handlers_[path] = std::move(handler);
}

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
  stop_ = false;
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  stop_ = true;
  if (wake_pipe_[1] >= 0) {
    [[maybe_unused]] ssize_t n = ::write(wake_pipe_[1], "x", 1);
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [id, c] : conns_) ::close(c.fd);
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
    auto now = std::chrono::steady_clock::now();
    auto next = now + std::chrono::seconds(1);
    for (auto& [id, c] : conns_) {
      fds.push_back({c.fd, static_cast<short>(c.out.empty() ? POLLIN : POLLOUT), 0});
      ids.push_back(id);
      next = std::min(next, c.deadline);
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(wait, 0))) < 0 &&
        errno != EINTR) {
      log::Error("health/metrics server poll failed", {{"error", std::strerror(errno)}});
      return;
    }
    if (stop_) return;
    for (size_t i = 2; i < fds.size(); ++i) {
      auto it = conns_.find(ids[i]);
      if (it == conns_.end() || fds[i].revents == 0) continue;
      Connection& c = it->second;
      const bool keep = (fds[i].revents & POLLOUT) ? OnWritable(c) : OnReadable(c);
      if (!keep) {
        ::close(c.fd);
        conns_.erase(it);
      }
    }
    now = std::chrono::steady_clock::now();
    std::erase_if(conns_, [now](auto& entry) {
      if (entry.second.deadline > now) return false;
      ::close(entry.second.fd);  // a slow or silent client: its time is up
      return true;
    });
    if (fds[1].revents & POLLIN) Accept();
  }
}

void HttpServer::Accept() {
  while (true) {
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (conns_.size() >= kMaxConnections) {
      // The oldest connection has had the longest to send its request: it goes first.
      ::close(conns_.begin()->second.fd);
      conns_.erase(conns_.begin());
    }
    Connection& c = conns_[next_conn_++];
    c.fd = fd;
    c.deadline = std::chrono::steady_clock::now() + kRequestDeadline;
  }
}

bool HttpServer::OnReadable(Connection& c) {
  char buf[2048];
  ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return true;
  if (n <= 0) return false;
  c.in.append(buf, static_cast<size_t>(n));
  if (c.in.find("\r\n\r\n") == std::string::npos) return c.in.size() <= kMaxRequestBytes;
  c.out = Respond(c.in);
  c.in.clear();
  return OnWritable(c);
}

bool HttpServer::OnWritable(Connection& c) {
  while (c.written < c.out.size()) {
    ssize_t n = ::send(c.fd, c.out.data() + c.written, c.out.size() - c.written, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n <= 0) return false;  // the client went away; nothing to do
    c.written += static_cast<size_t>(n);
  }
  return false;  // all written: Connection: close
}

std::string HttpServer::Respond(const std::string& head) const {
  const size_t line_end = head.find("\r\n");
  const std::string line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 + 1);
  HttpResponse resp;
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    resp = {400, "text/plain", "bad request\n"};
  } else {
    const std::string method = line.substr(0, sp1);
    std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
    path = path.substr(0, path.find('?'));
    auto it = handlers_.find(path);
    if (method != "GET" && method != "HEAD") {
      resp = {405, "text/plain", "method not allowed\n"};
    } else if (it == handlers_.end()) {
      resp = {404, "text/plain", "not found\n"};
    } else {
      resp = it->second();
    }
    if (method == "HEAD") resp.body.clear();
  }
  return "HTTP/1.1 " + std::to_string(resp.code) + " " + StatusText(resp.code) +
         "\r\nContent-Type: " + resp.content_type +
         "\r\nContent-Length: " + std::to_string(resp.body.size()) +
         "\r\nConnection: close\r\n\r\n" + resp.body;
}

}  // namespace lockstep::app
