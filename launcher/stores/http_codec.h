#pragma once
// Just enough HTTP/1.x for Horovod's Gloo rendezvous client (horovod/common/gloo/http_store.cc):
// a request line, headers, and a Content-Length body. Responses are HTTP/1.0 with a
// Content-Length, and the server closes the connection after each one, as Python's
// http.server (which Horovod's own rendezvous server is built on) does.

#include <string>
#include <string_view>

namespace lockstep::launcher::stores {

struct HttpRequest {
  std::string method;
  std::string path;
  std::string body;
};

enum class HttpParse { kNeedMore, kOk, kInvalid };

inline constexpr size_t kMaxHttpHeaderBytes = 64 * 1024;
inline constexpr size_t kMaxHttpBodyBytes = 64 * 1024 * 1024;

// Parses one request from the front of `buf`; on kOk `*consumed` is its length.
HttpParse ParseHttpRequest(std::string_view buf, HttpRequest* req, size_t* consumed);

// "HTTP/1.0 <code> <reason>\r\nContent-Length: N\r\n\r\n<body>"
std::string HttpResponse(int code, std::string_view body);

}  // namespace lockstep::launcher::stores
