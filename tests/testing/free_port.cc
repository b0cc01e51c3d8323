#include "tests/testing/free_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>
#include <set>

namespace lockstep::testing {
namespace {

int EphemeralLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

int FreePort() {
  // The kernel may hand the same ephemeral port to two binds in a row once the first socket is
  // closed; a test that asks for several ports (Ray's five per node) then gives two servers one
  // port. So a process never gets the same port twice.
  static std::mutex mu;
  static std::set<int> handed_out;
  std::lock_guard<std::mutex> lock(mu);
  int port = EphemeralLoopbackPort();
  for (int tries = 0; handed_out.contains(port) && tries < 1000; ++tries) {
    port = EphemeralLoopbackPort();
  }
  handed_out.insert(port);
  return port;
}

int ConnectTcp(int port, const char* ip) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, ip, &addr.sin_addr) != 1 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace lockstep::testing
