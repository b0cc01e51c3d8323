#include "operator/app/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"

namespace lockstep::app {
namespace {

constexpr size_t kMaxRequestBytes = 16 * 1024;
constexpr int kIoTimeoutMs = 5000;

std::string StatusText(int code) {
  switch (code) {
    case 200: return "OK";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the client went away; nothing to do
    off += static_cast<size_t>(n);
  }
}

// Reads until the end of the request head; false on timeout, EOF or an oversized head.
bool ReadHead(int fd, std::string* head) {
  char buf[2048];
  while (head->find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kIoTimeoutMs) <= 0) return false;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    head->append(buf, static_cast<size_t>(n));
    if (head->size() > kMaxRequestBytes) return false;
  }
  return true;
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
  thread_ = std::thread([this] { Serve(); });
  return Status::Ok();
}

void HttpServer::Stop() {
  stop_ = true;
  // Wakes the serving thread's poll() at once instead of at its next 200 ms tick.
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::Serve() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    HandleConnection(fd);
    ::close(fd);
  }
}

void HttpServer::HandleConnection(int fd) {
  std::string head;
  if (!ReadHead(fd, &head)) return;
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
  WriteAll(fd, "HTTP/1.1 " + std::to_string(resp.code) + " " + StatusText(resp.code) +
                   "\r\nContent-Type: " + resp.content_type +
                   "\r\nContent-Length: " + std::to_string(resp.body.size()) +
                   "\r\nConnection: close\r\n\r\n" + resp.body);
}

}  // namespace lockstep::app
