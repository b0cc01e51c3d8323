#include "protocol/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>

#include "protocol/wire.h"

namespace lockstep::protocol {

namespace {
constexpr size_t kSha256Block = 64;
constexpr size_t kNoncesPerRefill = 256;
// Domain separation from the join and control MAC inputs (a nonce or "lockstep-control" first).
constexpr std::string_view kAttemptKeyLabel = "lockstep-attempt-key";

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtx = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

std::string MacInput(std::string_view nonce, std::string_view run_id, uint32_t attempt,
                     uint32_t node_rank) {
  WireWriter input;
  input.String(nonce);
  input.String(run_id);
  input.U32(attempt);
  input.U32(node_rank);
  return input.Take();
}
}  // namespace

StatusOr<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return InternalError("RAND_bytes failed");
  }
  return out;
}

std::string HmacSha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  // An empty key is valid HMAC input; OpenSSL wants a non-null pointer for it.
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  HMAC(EVP_sha256(), k, static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &mac_len);
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

std::string AttemptKey(std::string_view token, uint32_t attempt) {
  WireWriter info;
  info.String(kAttemptKeyLabel);
  info.U32(attempt);
  return HmacSha256(token, info.data());
}

std::string JoinMac(std::string_view key, std::string_view nonce, std::string_view run_id,
                    uint32_t attempt, uint32_t node_rank) {
  return HmacSha256(key, MacInput(nonce, run_id, attempt, node_rank));
}

struct JoinMacKey::State {
  MdCtx inner{EVP_MD_CTX_new()};    // SHA-256 after (key ^ ipad)
  MdCtx outer{EVP_MD_CTX_new()};    // SHA-256 after (key ^ opad)
  MdCtx scratch{EVP_MD_CTX_new()};  // per-MAC working copy
};

JoinMacKey::JoinMacKey(std::string_view token) : state_(std::make_unique<State>()) {
  // RFC 2104: K' = H(K) when K is longer than the block, zero-padded to the block.
  unsigned char key[kSha256Block] = {};
  if (token.size() > kSha256Block) {
    unsigned int len = 0;
    EVP_Digest(token.data(), token.size(), key, &len, EVP_sha256(), nullptr);
  } else {
    std::copy(token.begin(), token.end(), key);
  }
  unsigned char ipad[kSha256Block], opad[kSha256Block];
  for (size_t i = 0; i < kSha256Block; ++i) {
    ipad[i] = static_cast<unsigned char>(key[i] ^ 0x36);
    opad[i] = static_cast<unsigned char>(key[i] ^ 0x5c);
  }
  EVP_DigestInit_ex(state_->inner.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(state_->inner.get(), ipad, sizeof(ipad));
  EVP_DigestInit_ex(state_->outer.get(), EVP_sha256(), nullptr);
  EVP_DigestUpdate(state_->outer.get(), opad, sizeof(opad));
  OPENSSL_cleanse(key, sizeof(key));
  OPENSSL_cleanse(ipad, sizeof(ipad));
  OPENSSL_cleanse(opad, sizeof(opad));
}

JoinMacKey::~JoinMacKey() = default;

std::string JoinMacKey::Mac(std::string_view nonce, std::string_view run_id, uint32_t attempt,
                            uint32_t node_rank) const {
  const std::string input = MacInput(nonce, run_id, attempt, node_rank);
  unsigned char inner[EVP_MAX_MD_SIZE], mac[EVP_MAX_MD_SIZE];
  unsigned int inner_len = 0, mac_len = 0;
  EVP_MD_CTX* w = state_->scratch.get();
  EVP_MD_CTX_copy_ex(w, state_->inner.get());
  EVP_DigestUpdate(w, input.data(), input.size());
  EVP_DigestFinal_ex(w, inner, &inner_len);
  EVP_MD_CTX_copy_ex(w, state_->outer.get());
  EVP_DigestUpdate(w, inner, inner_len);
  EVP_DigestFinal_ex(w, mac, &mac_len);
  return std::string(reinterpret_cast<const char*>(mac), mac_len);
}

StatusOr<std::string> NonceSource::Next() {
  if (pos_ + nonce_bytes_ > pool_.size()) {
    LS_ASSIGN_OR_RETURN(pool_, RandomBytes(nonce_bytes_ * kNoncesPerRefill));
    pos_ = 0;
  }
  std::string nonce = pool_.substr(pos_, nonce_bytes_);
  // Spent bytes are wiped so the pool never holds a nonce that was already handed out.
  OPENSSL_cleanse(pool_.data() + pos_, nonce_bytes_);
  pos_ += nonce_bytes_;
  return nonce;
}

bool MacEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace lockstep::protocol
