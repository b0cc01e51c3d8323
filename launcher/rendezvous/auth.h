#pragma once
// Join authentication. The server sends a fresh random nonce; the client proves it knows the
// per-job token with HMAC-SHA256(token, nonce || run_id || attempt || node_rank), so the token
// never crosses the wire and a recorded join cannot be replayed against another nonce, run,
// attempt or node. Fields are length-prefixed inside the MAC input so no two field lists collide.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace lockstep::launcher::rendezvous {

// Cryptographically random bytes (OpenSSL RAND_bytes).
StatusOr<std::string> RandomBytes(size_t n);

std::string JoinMac(std::string_view token, std::string_view nonce, std::string_view run_id,
                    uint32_t attempt, uint32_t node_rank);

// Constant-time comparison (CRYPTO_memcmp), so timing leaks nothing about the expected MAC.
bool MacEquals(std::string_view a, std::string_view b);

}  // namespace lockstep::launcher::rendezvous
