#include "operator/kube/base64.h"

namespace lockstep::kube {

StatusOr<std::string> Base64Decode(const std::string& in) {
  static constexpr auto kInvalid = -1;
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return kInvalid;
  };
  std::string out;
  unsigned int acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    const int v = value(c);
    if (v == kInvalid) return InvalidArgumentError("invalid base64 data");
    acc = (acc << 6) | static_cast<unsigned int>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFFu));
    }
  }
  return out;
}

}  // namespace lockstep::kube
