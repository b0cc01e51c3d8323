#pragma once
// The per-job rendezvous token: launchers authenticate peers with an HMAC keyed by it. Kept apart
// from children.h so the builder stays pure (the caller generates the token once per job and
// passes it in).

#include <string>

#include "common/status.h"

namespace lockstep::api {

inline constexpr size_t kRdzvTokenBytes = 32;

// kRdzvTokenBytes from OpenSSL's CSPRNG (RAND_bytes), as lower-case hex. Never log the result.
StatusOr<std::string> GenerateRdzvToken();

}  // namespace lockstep::api
