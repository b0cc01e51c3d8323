#pragma once
// Just enough HTTP/1.x for Horovod's Gloo rendezvous client (horovod/common/gloo/http_store.cc):
// a request line, headers, and a Content-Length body. Responses are HTTP/1.0 with a
// Content-Length, and the server closes the connection after each one, as Python's
// http.server (which Horovod's own rendezvous server is built on) does.

#include <optional>
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
// Horovod's rendezvous values are addresses and small host lists.
inline constexpr size_t kMaxHttpBodyBytes = 4 * 1024 * 1024;

// Parses one request from the front of `buf`; on kOk `*consumed` is its length.
HttpParse ParseHttpRequest(std::string_view buf, HttpRequest* req, size_t* consumed);

// The same, for a buffer that grows between calls: it remembers how far it searched for the
// head's end and, once the head is read, the body's length, so each call only looks at the
// new bytes. Not thread-safe.
class HttpRequestReader {
 public:
  // `buf`: every byte of the connection not yet consumed (only appended to between calls).
  HttpParse Feed(std::string_view buf, HttpRequest* req, size_t* consumed);
  // The request's size once its head is read (head, blank line and body), else 0.
  size_t declared_bytes() const { return body_at_ ? *body_at_ + body_len_ : 0; }

 private:
  size_t scanned_ = 0;
  std::optional<size_t> body_at_;
  size_t body_len_ = 0;
  HttpRequest head_;
};

// "HTTP/1.0 <code> <reason>\r\nContent-Length: N\r\n\r\n<body>"
std::string HttpResponse(int code, std::string_view body);

}  // namespace lockstep::launcher::stores
