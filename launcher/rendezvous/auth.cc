#include "launcher/rendezvous/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "launcher/rendezvous/wire.h"

namespace lockstep::launcher::rendezvous {

StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return InternalError("RAND_bytes failed");
  }
  return out;
}

std::string JoinMac(std::string_view token, std::string_view nonce, std::string_view run_id,
                    uint32_t attempt, uint32_t node_rank) {
  WireWriter input;
  input.PutString(nonce);
  input.PutString(run_id);
  input.PutU32(attempt);
  input.PutU32(node_rank);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  // An empty key is valid HMAC input; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* key = token.empty() ? static_cast<const void*>(&kEmpty) : token.data();
  HMAC(EVP_sha256(), key, static_cast<int>(token.size()),
       reinterpret_cast<const unsigned char*>(input.data().data()), input.data().size(), mac,
       &mac_len);
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

bool MacEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace lockstep::launcher::rendezvous
