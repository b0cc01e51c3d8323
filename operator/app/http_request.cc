#include "operator/app/http_request.h"

#include <algorithm>
#include <cctype>

namespace lockstep::app {
namespace {

// RFC 9110 tchar: the characters of a field name or method.
bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

Status ParseRequestLine(std::string_view line, HttpRequest* req) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) {
    return InvalidArgumentError("request line is not METHOD SP target SP version");
  }
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return InvalidArgumentError("bad method");
  if (target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
        return static_cast<unsigned char>(c) <= 0x20 || c == 0x7f;
      })) {
    return InvalidArgumentError("bad request target");
  }
  if (version.size() != 8 || !version.starts_with("HTTP/") || !std::isdigit(version[5]) ||
      version[6] != '.' || !std::isdigit(version[7])) {
    return InvalidArgumentError("bad HTTP version");
  }
  req->method = std::string(method);
  req->path = std::string(target.substr(0, target.find('?')));
  return Status::Ok();
}

}  // namespace

std::vector<std::string_view> HttpRequest::Values(std::string_view lower_name) const {
  std::vector<std::string_view> out;
  for (const auto& [name, value] : headers) {
    if (name == lower_name) out.emplace_back(value);
  }
  return out;
}

StatusOr<HttpRequest> ParseRequestHead(std::string_view head) {
  HttpRequest req;
  bool first = true;
  while (!head.empty()) {
    const size_t eol = head.find("\r\n");
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    if (first) {
      LS_RETURN_IF_ERROR(ParseRequestLine(line, &req));
      first = false;
      continue;
    }
    if (line.empty()) break;  // the end of the head
    if (line.front() == ' ' || line.front() == '\t') {
      return InvalidArgumentError("folded header line");
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) {
      return InvalidArgumentError("bad header line");
    }
    const std::string_view value = Trim(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) {
          return (static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f;
        })) {
      return InvalidArgumentError("control character in a header value");
    }
    req.headers.emplace_back(Lower(line.substr(0, colon)), std::string(value));
  }
  if (first) return InvalidArgumentError("empty request");
  return req;
}

std::optional<std::string> BearerToken(const HttpRequest& request) {
  const std::vector<std::string_view> values = request.Values("authorization");
  if (values.size() != 1) return std::nullopt;
  const std::string_view v = values.front();
  const size_t sp = v.find(' ');
  if (sp == std::string_view::npos || Lower(v.substr(0, sp)) != "bearer") return std::nullopt;
  const std::string_view token = v.substr(sp + 1);
  if (token.empty() || token.find_first_of(" \t") != std::string_view::npos) return std::nullopt;
  return std::string(token);
}

}  // namespace lockstep::app
