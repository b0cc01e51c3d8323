#pragma once
// Join authentication. The server sends a fresh random nonce; the client proves it knows the
// attempt's key with HMAC-SHA256(key, nonce || run_id || round || node_rank), so no key crosses
// the wire and a recorded join cannot be replayed against another nonce, run, round or node.
// Fields are length-prefixed inside the MAC input so no two field lists collide.
//
// The key is not the job's token itself but AttemptKey(token, attempt): the attempt the operator
// created the pod for (LOCKSTEP_ATTEMPT, fixed for the pod's life; in-place rounds within it keep
// the key). A launcher of an earlier attempt still running on a lost node (its pod force-deleted)
// has another key, so it cannot join the next attempt's rounds even when its round number,
// advanced by its own in-place restarts, equals theirs.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::protocol {

// Cryptographically random bytes (OpenSSL RAND_bytes).
StatusOr<std::string> RandomBytes(size_t n);

// One-shot HMAC-SHA256 of `data` keyed by `key` (an empty key is valid). The join and control
// MACs both go through it.
std::string HmacSha256(std::string_view key, std::string_view data);

// HMAC-SHA256(token, "lockstep-attempt-key" | attempt), fields length-prefixed: the join key of
// one attempt (an HKDF-Expand of one block, with the label as the info).
std::string AttemptKey(std::string_view token, uint32_t attempt);

// `key`: AttemptKey(token, attempt) of the joining launcher's attempt.
std::string JoinMac(std::string_view key, std::string_view nonce, std::string_view run_id,
                    uint32_t attempt, uint32_t node_rank);

// JoinMac with the key (AttemptKey) keyed once: the HMAC inner and outer pad blocks are hashed at
// construction, so each MAC costs copying two SHA-256 states and hashing the short input.
// OpenSSL 3's one-shot HMAC() fetches the digest and keys itself on every call: 7.5 us per MAC
// against 0.5-0.9 us here, which the rendezvous server pays once per join (8,192 at W=8,192).
// Same result as JoinMac for every key (keys longer than a SHA-256 block are hashed first,
// as HMAC prescribes). Not thread-safe: Mac() reuses one scratch context.
class JoinMacKey {
 public:
  explicit JoinMacKey(std::string_view key);
  ~JoinMacKey();
  JoinMacKey(const JoinMacKey&) = delete;
  JoinMacKey& operator=(const JoinMacKey&) = delete;

  std::string Mac(std::string_view nonce, std::string_view run_id, uint32_t attempt,
                  uint32_t node_rank) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Hands out kNonceBytes-sized challenges from random bytes fetched in bulk: one RAND_bytes call
// per 256 nonces instead of one per connection (4-5 us each here; ~0.1 us per nonce in bulk).
// Each nonce is as unpredictable as a separate call's. Not thread-safe.
class NonceSource {
 public:
  explicit NonceSource(size_t nonce_bytes) : nonce_bytes_(nonce_bytes) {}
  StatusOr<std::string> Next();

 private:
  size_t nonce_bytes_;
  std::string pool_;
  size_t pos_ = 0;
};

// Constant-time comparison (CRYPTO_memcmp), so timing leaks nothing about the expected MAC.
bool MacEquals(std::string_view a, std::string_view b);

}  // namespace lockstep::protocol
