// Fuzz target for the operator's HTTP request heads (operator/app/http_request.h), fed as the
// server feeds them: the bytes up to and including the first CRLF CRLF, at most 16 KiB. Any
// client that reaches the metrics or probe port sends these, so every byte is untrusted.
// Checked beyond "no crash":
//   - a parsed method is a non-empty token, the path has no query and no byte <= 0x20;
//   - header names are non-empty and lower case, values carry no CR, LF or NUL and no
//     surrounding blanks;
//   - a bearer token is non-empty, one word, and occurs in the input;
//   - the answer the server would send for the parsed request is well-formed.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/check.h"
#include "operator/app/http_request.h"
#include "operator/app/http_server.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::app;
  std::string_view input(reinterpret_cast<const char*>(data), size > 16384 ? 16384 : size);
  if (const size_t end = input.find("\r\n\r\n"); end != std::string_view::npos) {
    input = input.substr(0, end + 4);
  }
  lockstep::StatusOr<HttpRequest> req = ParseRequestHead(input);
  if (!req.ok()) return 0;
  LS_CHECK(!req->method.empty() && req->method.find_first_of(" \r\n") == std::string::npos);
  LS_CHECK(req->path.find('?') == std::string::npos);
  for (char c : req->path) LS_CHECK(static_cast<unsigned char>(c) > 0x20);
  for (const auto& [name, value] : req->headers) {
    LS_CHECK(!name.empty());
    for (char c : name) LS_CHECK(!(c >= 'A' && c <= 'Z') && c != ':' && c != ' ');
    LS_CHECK(value.find_first_of(std::string("\r\n\0", 3)) == std::string::npos);
    if (!value.empty()) {
      LS_CHECK(value.front() != ' ' && value.front() != '\t');
      LS_CHECK(value.back() != ' ' && value.back() != '\t');
    }
  }
  if (std::optional<std::string> token = BearerToken(*req)) {
    LS_CHECK(!token->empty() && token->find_first_of(" \t") == std::string::npos);
    LS_CHECK(input.find(*token) != std::string_view::npos);
  }
  const std::string wire = FormatResponse({401, "text/plain", "Unauthorized\n"}, req->method);
  LS_CHECK(wire.starts_with("HTTP/1.1 401 Unauthorized\r\n"));
  const std::string length =
      req->method == "HEAD" ? "Content-Length: 0\r\n" : "Content-Length: 13\r\n";
  LS_CHECK(wire.find(length) != std::string::npos);
  return 0;
}
