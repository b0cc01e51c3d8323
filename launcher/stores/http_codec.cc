#include "launcher/stores/http_codec.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace lockstep::launcher::stores {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Reads "METHOD SP path SP HTTP/x.y".
bool ParseRequestLine(std::string_view line, HttpRequest* req) {
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos) return false;
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return false;
  req->method = std::string(line.substr(0, sp1));
  req->path = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  return !req->method.empty() && !req->path.empty() && line.substr(sp2 + 1).starts_with("HTTP/");
}

// Returns the Content-Length (0 when absent), or -1 when it is malformed.
long long ContentLength(std::string_view headers) {
  long long length = 0;
  while (!headers.empty()) {
    size_t eol = headers.find("\r\n");
    std::string_view line = headers.substr(0, eol);
    headers = eol == std::string_view::npos ? std::string_view() : headers.substr(eol + 2);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    if (!IEquals(Trim(line.substr(0, colon)), "content-length")) continue;
    std::string_view value = Trim(line.substr(colon + 1));
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
    if (ec != std::errc() || end != value.data() + value.size() || length < 0) return -1;
  }
  return length;
}

// The request line and headers (`head`, without the blank line); `*body_len` from
// Content-Length.
HttpParse ParseHead(std::string_view head, HttpRequest* req, size_t* body_len) {
  size_t eol = head.find("\r\n");
  std::string_view line = head.substr(0, eol);
  std::string_view headers =
      eol == std::string_view::npos ? std::string_view() : head.substr(eol + 2);
  *req = HttpRequest{};
  if (!ParseRequestLine(line, req)) return HttpParse::kInvalid;
  long long length = ContentLength(headers);
  if (length < 0 || static_cast<unsigned long long>(length) > kMaxHttpBodyBytes) {
    return HttpParse::kInvalid;
  }
  *body_len = static_cast<size_t>(length);
  return HttpParse::kOk;
}

}  // namespace

HttpParse ParseHttpRequest(std::string_view buf, HttpRequest* req, size_t* consumed) {
  HttpRequestReader reader;
  return reader.Feed(buf, req, consumed);
}

HttpParse HttpRequestReader::Feed(std::string_view buf, HttpRequest* req, size_t* consumed) {
  if (!body_at_) {
    // Only the bytes not searched yet, and the three before them (a "\r\n\r\n" split across
    // two reads).
    const size_t from = scanned_ < 3 ? 0 : scanned_ - 3;
    const size_t end = buf.find("\r\n\r\n", from);
    if (end == std::string_view::npos) {
      scanned_ = buf.size();
      return buf.size() > kMaxHttpHeaderBytes ? HttpParse::kInvalid : HttpParse::kNeedMore;
    }
    if (end > kMaxHttpHeaderBytes) return HttpParse::kInvalid;
    if (ParseHead(buf.substr(0, end), &head_, &body_len_) != HttpParse::kOk) {
      return HttpParse::kInvalid;
    }
    body_at_ = end + 4;
  }
  if (buf.size() - *body_at_ < body_len_) return HttpParse::kNeedMore;
  *req = std::move(head_);
  req->body = std::string(buf.substr(*body_at_, body_len_));
  *consumed = *body_at_ + body_len_;
  *this = HttpRequestReader();
  return HttpParse::kOk;
}

std::string HttpResponse(int code, std::string_view body) {
  std::string_view reason = "Error";
  switch (code) {
    case 200:
      reason = "OK";
      break;
    case 400:
      reason = "Bad Request";
      break;
    case 404:
      reason = "Not Found";
      break;
    case 405:
      reason = "Method Not Allowed";
      break;
    case 503:
      reason = "Service Unavailable";
      break;
    case 507:
      reason = "Insufficient Storage";
      break;
    default:
      break;
  }
  std::string out = "HTTP/1.0 " + std::to_string(code) + " " + std::string(reason) +
                    "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  out.append(body);
  return out;
}

}  // namespace lockstep::launcher::stores
