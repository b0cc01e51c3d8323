#include "tests/testing/loopback.h"

#include <sys/socket.h>
#include <unistd.h>

#include "tests/testing/free_port.h"

namespace lockstep::testing {

StatusOr<std::string> LoopbackExchange(int port, std::string_view request) {
  const int fd = ConnectTcp(port);
  if (fd < 0) return UnavailableError("connect to 127.0.0.1:" + std::to_string(port) + " failed");
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) < 0) {
    ::close(fd);
    return UnavailableError("send to 127.0.0.1:" + std::to_string(port) + " failed");
  }
  std::string reply;
  char buf[8192];
  ssize_t n = 0;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) reply.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return reply;
}

HttpReply LoopbackHttp(int port, std::string_view method, std::string_view path,
                       std::string_view body) {
  const std::string request = std::string(method) + " " + std::string(path) +
                              " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                              "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                              std::string(body);
  StatusOr<std::string> reply = LoopbackExchange(port, request);
  HttpReply out;
  // "HTTP/1.1 200 ...": the code is bytes 9-11.
  if (!reply.ok() || reply->size() < 12 || reply->rfind("HTTP/1.", 0) != 0) return out;
  out.status = std::stoi(reply->substr(9, 3));
  const size_t body_at = reply->find("\r\n\r\n");
  if (body_at != std::string::npos) out.body = reply->substr(body_at + 4);
  return out;
}

}  // namespace lockstep::testing
