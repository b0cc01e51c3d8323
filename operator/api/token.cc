#include "operator/api/token.h"

#include <openssl/rand.h>

#include <array>

namespace lockstep::api {

StatusOr<std::string> GenerateRdzvToken() {
  std::array<unsigned char, kRdzvTokenBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) {
    return InternalError("RAND_bytes failed: the CSPRNG is not seeded");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

}  // namespace lockstep::api
